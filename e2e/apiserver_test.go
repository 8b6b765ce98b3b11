//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// apiServer is a real kube-apiserver on a real etcd, started once for the
// package (see TestMain) from the binaries the Makefile builds in hack/tools.
type apiServer struct {
	base      string // https://127.0.0.1:PORT
	token     string
	client    *http.Client
	dir       string
	procs     []*exec.Cmd
	mu        sync.Mutex
	resources map[string]apiResource // "group/version Kind" -> resource
}

type apiResource struct {
	path       string // /api/v1 or /apis/group/version
	name       string // plural
	namespaced bool
}

var (
	serverOnce sync.Once
	server     *apiServer
	serverErr  error
)

// sharedAPIServer starts the server on first use; TestMain stops it.
func sharedAPIServer(t *testing.T) *apiServer {
	t.Helper()
	apiserver := tool(t, "LLMRENDER_KUBE_APISERVER")
	etcd := tool(t, "LLMRENDER_ETCD")
	serverOnce.Do(func() {
		server, serverErr = startAPIServer(apiserver, etcd)
	})
	if serverErr != nil {
		t.Fatal(serverErr)
	}
	return server
}

func stopAPIServer() {
	if server != nil {
		server.stop()
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func startAPIServer(apiserverBin, etcdBin string) (*apiServer, error) {
	dir, err := os.MkdirTemp("", "llmrender-apiserver-")
	if err != nil {
		return nil, err
	}
	s := &apiServer{dir: dir}
	ports := make([]int, 3)
	for i := range ports {
		if ports[i], err = freePort(); err != nil {
			return nil, err
		}
	}
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", ports[1])
	if err := s.spawn("etcd", etcdBin,
		"--name", "e2e", "--data-dir", filepath.Join(dir, "etcd"),
		"--listen-client-urls", etcdURL, "--advertise-client-urls", etcdURL,
		"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
		"--initial-cluster", "e2e="+peerURL,
		"--unsafe-no-fsync", "--log-level", "warn"); err != nil {
		return nil, err
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	keyFile := filepath.Join(dir, "sa.key")
	pemKey := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	if err := os.WriteFile(keyFile, pemKey, 0o600); err != nil {
		return nil, err
	}
	// A static admin token: the server refuses anonymous requests with the
	// AlwaysAllow authorizer.
	s.token = fmt.Sprintf("e2e-%x", key.PublicKey.N.Bytes()[:16])
	tokenFile := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokenFile, []byte(s.token+`,e2e-admin,e2e-admin,"system:masters"`+"\n"), 0o600); err != nil {
		return nil, err
	}
	if err := s.spawn("kube-apiserver", apiserverBin,
		"--etcd-servers", etcdURL,
		"--bind-address", "127.0.0.1", "--secure-port", fmt.Sprint(ports[2]),
		"--cert-dir", filepath.Join(dir, "certs"),
		"--service-account-issuer", "https://kubernetes.default.svc",
		"--service-account-key-file", keyFile, "--service-account-signing-key-file", keyFile,
		"--service-cluster-ip-range", "10.0.0.0/24",
		// Every permission for the token: a throwaway server on loopback
		// that only this process talks to.
		"--token-auth-file", tokenFile, "--anonymous-auth=false", "--authorization-mode", "AlwaysAllow",
		// The ServiceAccount admission plugin rejects a Pod whose
		// ServiceAccount does not exist yet, and a dry run of a set never
		// creates the set's own ServiceAccount. Everything else, schema and
		// the other admission plugins, stays on.
		"--disable-admission-plugins", "ServiceAccount",
		"--v", "0"); err != nil {
		s.stop()
		return nil, err
	}
	s.base = fmt.Sprintf("https://127.0.0.1:%d", ports[2])
	s.client = &http.Client{
		Timeout: 60 * time.Second,
		// The server's certificate is self-signed into cert-dir at start.
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, MaxIdleConnsPerHost: 16},
	}
	if err := s.waitReady(90 * time.Second); err != nil {
		s.stop()
		return nil, err
	}
	return s, nil
}

func (s *apiServer) spawn(name, bin string, args ...string) error {
	log, err := os.Create(filepath.Join(s.dir, name+".log"))
	if err != nil {
		return err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %v", name, err)
	}
	s.procs = append(s.procs, cmd)
	return nil
}

func (s *apiServer) stop() {
	for i := len(s.procs) - 1; i >= 0; i-- {
		p := s.procs[i]
		p.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { p.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			p.Process.Kill()
			<-done
		}
	}
	os.RemoveAll(s.dir)
}

// logTail is the end of a process log, for failures.
func (s *apiServer) logTail(name string) string {
	data, _ := os.ReadFile(filepath.Join(s.dir, name+".log"))
	if len(data) > 3000 {
		data = data[len(data)-3000:]
	}
	return string(data)
}

func (s *apiServer) waitReady(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		for _, p := range s.procs {
			if p.ProcessState != nil {
				return fmt.Errorf("%s exited", p.Path)
			}
		}
		code, _, err := s.request("GET", "/readyz", nil)
		if err == nil && code == http.StatusOK {
			return nil
		}
		time.Sleep(250 * time.Millisecond)
	}
	return fmt.Errorf("kube-apiserver not ready after %v\nkube-apiserver log:\n%s\netcd log:\n%s", timeout, s.logTail("kube-apiserver"), s.logTail("etcd"))
}

// request sends one JSON request and returns the status code and body.
func (s *apiServer) request(method, path string, body any) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(context.Background(), method, s.base+path, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Authorization", "Bearer "+s.token)
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp.StatusCode, data, err
}

// statusMessage extracts the API server's message from a Status body.
func statusMessage(body []byte) string {
	var st struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(body, &st) == nil && st.Message != "" {
		return st.Message
	}
	return strings.TrimSpace(string(body))
}

// discover reads every group/version's resources.
func (s *apiServer) discover() error {
	paths := []string{"/api/v1"}
	code, body, err := s.request("GET", "/apis", nil)
	if err != nil || code != http.StatusOK {
		return fmt.Errorf("GET /apis: %d %v %s", code, err, body)
	}
	var groups struct {
		Groups []struct {
			Versions []struct {
				GroupVersion string `json:"groupVersion"`
			} `json:"versions"`
		} `json:"groups"`
	}
	if err := json.Unmarshal(body, &groups); err != nil {
		return err
	}
	for _, g := range groups.Groups {
		for _, v := range g.Versions {
			paths = append(paths, "/apis/"+v.GroupVersion)
		}
	}
	resources := map[string]apiResource{}
	for _, p := range paths {
		code, body, err := s.request("GET", p, nil)
		if err != nil || code != http.StatusOK {
			return fmt.Errorf("GET %s: %d %v %s", p, code, err, body)
		}
		var list struct {
			GroupVersion string `json:"groupVersion"`
			Resources    []struct {
				Name       string `json:"name"`
				Kind       string `json:"kind"`
				Namespaced bool   `json:"namespaced"`
			} `json:"resources"`
		}
		if err := json.Unmarshal(body, &list); err != nil {
			return err
		}
		for _, r := range list.Resources {
			if strings.Contains(r.Name, "/") {
				continue // a subresource
			}
			resources[list.GroupVersion+" "+r.Kind] = apiResource{path: p, name: r.Name, namespaced: r.Namespaced}
		}
	}
	s.mu.Lock()
	s.resources = resources
	s.mu.Unlock()
	return nil
}

// objectPath is where an object of this kind is created.
func (s *apiServer) objectPath(obj map[string]any) (string, bool, error) {
	key := fmt.Sprintf("%v %v", obj["apiVersion"], obj["kind"])
	s.mu.Lock()
	r, ok := s.resources[key]
	s.mu.Unlock()
	if !ok {
		return "", false, fmt.Errorf("the API server does not serve %s (is its CRD installed?)", key)
	}
	if !r.namespaced {
		return r.path + "/" + r.name, false, nil
	}
	ns, _ := obj["metadata"].(map[string]any)["namespace"].(string)
	if ns == "" {
		ns = "default"
	}
	return r.path + "/namespaces/" + url.PathEscape(ns) + "/" + r.name, true, nil
}

// dryRun sends the object as a server-side dry-run create with strict field
// validation. A nil error means the server accepted it.
func (s *apiServer) dryRun(obj map[string]any) error {
	p, _, err := s.objectPath(obj)
	if err != nil {
		return err
	}
	code, body, err := s.request("POST", p+"?dryRun=All&fieldValidation=Strict", obj)
	if err != nil {
		return err
	}
	if code != http.StatusOK && code != http.StatusCreated {
		return fmt.Errorf("%d: %s", code, statusMessage(body))
	}
	return nil
}

// ensureNamespace creates a namespace for real, once.
func (s *apiServer) ensureNamespace(name string) error {
	code, body, err := s.request("POST", "/api/v1/namespaces", map[string]any{
		"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": name}})
	if err != nil {
		return err
	}
	if code != http.StatusCreated && code != http.StatusConflict {
		return fmt.Errorf("creating namespace %s: %d %s", name, code, statusMessage(body))
	}
	return nil
}

// installCRDs creates the CRDs (for real) and waits until each is served.
func (s *apiServer) installCRDs(crds []map[string]any) error {
	for _, crd := range crds {
		code, body, err := s.request("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
		if err != nil {
			return err
		}
		if code != http.StatusCreated && code != http.StatusConflict {
			return fmt.Errorf("CRD %v: %d %s", crd["metadata"].(map[string]any)["name"], code, statusMessage(body))
		}
	}
	deadline := time.Now().Add(60 * time.Second)
	for _, crd := range crds {
		name := crd["metadata"].(map[string]any)["name"].(string)
		for {
			established, err := s.established(name)
			if err != nil {
				return err
			}
			if established {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("CRD %s not established after a minute", name)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return s.discover()
}

func (s *apiServer) established(name string) (bool, error) {
	code, body, err := s.request("GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"+name, nil)
	if err != nil || code != http.StatusOK {
		return false, fmt.Errorf("GET CRD %s: %d %v", name, code, err)
	}
	var crd struct {
		Status struct {
			Conditions []struct{ Type, Status string } `json:"conditions"`
		} `json:"status"`
	}
	if err := json.Unmarshal(body, &crd); err != nil {
		return false, err
	}
	for _, c := range crd.Status.Conditions {
		if c.Type == "Established" && c.Status == "True" {
			return true, nil
		}
	}
	return false, nil
}
