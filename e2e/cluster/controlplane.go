package cluster

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
)

// Tools are the binaries a cluster runs, built by the Makefile into the
// machine's tool cache (make tools).
type Tools struct {
	Etcd, APIServer, Scheduler, ControllerManager string
	Kubectl                                       string
	Kwok                                          string
	KubeRay, TrainingOperator, MPIOperator        string
	VolcanoScheduler                              string
	JobSet, LWS, Kueue, Trainer                   string
	ComputeDomainController                       string // NVIDIA's DRA driver's
	RoutingSidecar                                string // llm-d's, which decode pods run
}

// ToolsFromEnv reads the binaries' paths from the environment the Makefile
// sets (LLMRENDER_*). A missing one is an error: the tests never skip.
func ToolsFromEnv() (Tools, error) {
	var t Tools
	var missing []string
	for env, dst := range map[string]*string{
		"LLMRENDER_ETCD":                      &t.Etcd,
		"LLMRENDER_KUBE_APISERVER":            &t.APIServer,
		"LLMRENDER_KUBE_SCHEDULER":            &t.Scheduler,
		"LLMRENDER_KUBE_CONTROLLER_MANAGER":   &t.ControllerManager,
		"LLMRENDER_KUBECTL":                   &t.Kubectl,
		"LLMRENDER_KWOK":                      &t.Kwok,
		"LLMRENDER_KUBERAY":                   &t.KubeRay,
		"LLMRENDER_TRAINING_OPERATOR":         &t.TrainingOperator,
		"LLMRENDER_MPI_OPERATOR":              &t.MPIOperator,
		"LLMRENDER_VOLCANO_SCHEDULER":         &t.VolcanoScheduler,
		"LLMRENDER_JOBSET":                    &t.JobSet,
		"LLMRENDER_LWS":                       &t.LWS,
		"LLMRENDER_KUEUE":                     &t.Kueue,
		"LLMRENDER_TRAINER":                   &t.Trainer,
		"LLMRENDER_COMPUTE_DOMAIN_CONTROLLER": &t.ComputeDomainController,
		"LLMRENDER_LLMD_SIDECAR":              &t.RoutingSidecar,
	} {
		p := os.Getenv(env)
		if p == "" {
			missing = append(missing, env)
			continue
		}
		if _, err := os.Stat(p); err != nil {
			return t, fmt.Errorf("%s=%s: %v", env, p, err)
		}
		*dst = p
	}
	if len(missing) > 0 {
		return t, fmt.Errorf("%s not set: run these tests with 'make e2e', which builds the tools", strings.Join(missing, ", "))
	}
	return t, nil
}

// process is one component of the cluster, with its log file.
type process struct {
	name string
	cmd  *exec.Cmd
	log  string
}

// ControlPlane is etcd and kube-apiserver, and the clients to talk to them.
type ControlPlane struct {
	Dir        string
	Kubeconfig string
	Config     *rest.Config
	Client     kubernetes.Interface
	Dynamic    dynamic.Interface
	Mapper     *restmapper.DeferredDiscoveryRESTMapper
	keyFile    string
	procs      []*process
}

// freePorts are n distinct ports free on 127.0.0.1 now: each is held
// until all are chosen, so the kernel cannot hand one out twice.
func freePorts(n int) ([]int, error) {
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// StartControlPlane starts etcd and kube-apiserver on loopback, with every
// admission plugin of a real cluster plus PodNodeSelector, which confines a
// namespace's pods to the nodes its annotation names: scenarios share one
// cluster and each gets nodes of its own.
func StartControlPlane(t Tools) (*ControlPlane, error) {
	dir, err := os.MkdirTemp("", "llmrender-cluster-")
	if err != nil {
		return nil, err
	}
	cp := &ControlPlane{Dir: dir}
	ports, err := freePorts(3)
	if err != nil {
		return nil, err
	}
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", ports[1])
	if err := cp.spawn("etcd", t.Etcd, nil,
		"--name", "sim", "--data-dir", filepath.Join(dir, "etcd"),
		"--listen-client-urls", etcdURL, "--advertise-client-urls", etcdURL,
		"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
		"--initial-cluster", "sim="+peerURL,
		"--unsafe-no-fsync", "--log-level", "warn"); err != nil {
		return nil, err
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	cp.keyFile = filepath.Join(dir, "sa.key")
	if err := os.WriteFile(cp.keyFile, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), 0o600); err != nil {
		return nil, err
	}
	secret := make([]byte, 16)
	if _, err := rand.Read(secret); err != nil {
		return nil, err
	}
	token := "sim-" + hex.EncodeToString(secret)
	tokenFile := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokenFile, []byte(token+`,sim-admin,sim-admin,"system:masters"`+"\n"), 0o600); err != nil {
		return nil, err
	}
	host := fmt.Sprintf("https://127.0.0.1:%d", ports[2])
	if err := cp.spawn("kube-apiserver", t.APIServer, nil,
		"--etcd-servers", etcdURL,
		"--bind-address", "127.0.0.1", "--secure-port", fmt.Sprint(ports[2]),
		"--cert-dir", filepath.Join(dir, "certs"),
		"--service-account-issuer", "https://kubernetes.default.svc",
		"--service-account-key-file", cp.keyFile, "--service-account-signing-key-file", cp.keyFile,
		"--service-cluster-ip-range", "10.96.0.0/16",
		// One token of system:masters, for the components and the tests
		// (a throwaway server on loopback that only they talk to); RBAC
		// for the rest, so that a ServiceAccount's token gets what its
		// rendered Roles grant (the endpoint picker's, requests_test.go).
		"--token-auth-file", tokenFile, "--anonymous-auth=false", "--authorization-mode", "RBAC",
		"--enable-admission-plugins", "PodNodeSelector",
		// As GKE and EKS run it: privileged containers are a matter for
		// Pod Security admission per namespace, not refused cluster-wide.
		"--allow-privileged=true",
		"--v", "0"); err != nil {
		cp.Stop()
		return nil, err
	}
	cp.Kubeconfig = filepath.Join(dir, "kubeconfig")
	kubeconfig := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: sim
  cluster: {server: %q, insecure-skip-tls-verify: true}
users:
- name: sim
  user: {token: %q}
contexts:
- name: sim
  context: {cluster: sim, user: sim}
current-context: sim
`, host, token)
	if err := os.WriteFile(cp.Kubeconfig, []byte(kubeconfig), 0o600); err != nil {
		return nil, err
	}
	cp.Config = &rest.Config{Host: host, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{Insecure: true}, QPS: 200, Burst: 400}
	if cp.Client, err = kubernetes.NewForConfig(cp.Config); err != nil {
		return nil, err
	}
	if cp.Dynamic, err = dynamic.NewForConfig(cp.Config); err != nil {
		return nil, err
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cp.Config)
	if err != nil {
		return nil, err
	}
	cp.Mapper = restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))
	if err := cp.waitReady(90 * time.Second); err != nil {
		cp.Stop()
		return nil, err
	}
	return cp, nil
}

// spawn starts a component with its output in DIR/NAME.log.
func (cp *ControlPlane) spawn(name, bin string, env []string, args ...string) error {
	logPath := filepath.Join(cp.Dir, name+".log")
	log, err := os.Create(logPath)
	if err != nil {
		return err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.Env = append(os.Environ(), env...)
	// Its own process group, so that stopping it stops what it started,
	// and it dies with the test binary (procs.go).
	if err := startOwned(cmd); err != nil {
		return fmt.Errorf("starting %s: %v", name, err)
	}
	cp.procs = append(cp.procs, &process{name: name, cmd: cmd, log: logPath})
	go func() { cmd.Wait(); log.Close() }()
	return nil
}

// Stop stops every component, newest first, and removes the directory.
func (cp *ControlPlane) Stop() {
	for i := len(cp.procs) - 1; i >= 0; i-- {
		p := cp.procs[i]
		if p.cmd.Process == nil {
			continue
		}
		syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) && syscall.Kill(p.cmd.Process.Pid, 0) == nil {
			time.Sleep(50 * time.Millisecond)
		}
		syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	}
	if os.Getenv("LLMRENDER_KEEP_CLUSTER_LOGS") == "" {
		os.RemoveAll(cp.Dir)
	}
}

// Exited names a component that is no longer running, with its log's tail.
func (cp *ControlPlane) Exited() error {
	for _, p := range cp.procs {
		if p.cmd.ProcessState != nil || (p.cmd.Process != nil && syscall.Kill(p.cmd.Process.Pid, 0) != nil) {
			return fmt.Errorf("%s exited:\n%s", p.name, cp.LogTail(p.name, 3000))
		}
	}
	return nil
}

// LogTail is the end of a component's log, for failures.
func (cp *ControlPlane) LogTail(name string, n int) string {
	data, _ := os.ReadFile(filepath.Join(cp.Dir, name+".log"))
	if len(data) > n {
		data = data[len(data)-n:]
	}
	return string(data)
}

func (cp *ControlPlane) waitReady(timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for {
		if err := cp.Exited(); err != nil {
			return err
		}
		body, err := cp.Client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err == nil && string(body) == "ok" {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kube-apiserver not ready after %v: %v\n%s", timeout, err, cp.LogTail("kube-apiserver", 3000))
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// errNotReady marks a wait that timed out.
var errNotReady = errors.New("not ready")
