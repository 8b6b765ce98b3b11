//go:build e2e

package cluster

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestEndpointPickerServesThePool runs the Inference Extension's own
// endpoint picker (built from its module at the release the chart names)
// as the rendered Deployment runs it: its arguments, the rendered
// ConfigMap as its configuration, its environment, against the simulated
// cluster where the example's servers run. It must load the configuration
// (plugins, flow control), find the InferencePool by the name, namespace
// and group it is given, report itself ready on the health service the
// rendered probes ask for, and track exactly the ready server pods: its
// per-pod metric names each of them, and no other pod of the release.
//
// With prefill and decode apart, the picker is llm-d's inference scheduler
// (built from its module at the release the chart names), with the
// rendered P/D plugins, tracking prefill and decode servers alike.
func TestEndpointPickerServesThePool(t *testing.T) {
	for i, ex := range []struct {
		name, bin        string // the example; the variable that names the picker built here
		servers, onNodes int
		nodes            []NodeSpec
	}{
		{"serving/serve-gke-h100-llama31-8b-inferencepool", "LLMRENDER_EPP", 2, 1, gkeNodes("h100-80gb", 1)},
		{"serving/serve-gke-h100-llama31-8b-scale-to-zero", "LLMRENDER_EPP", 1, 1, gkeNodes("h100-80gb", 1)},
		{"serving/serve-gke-h200-qwen3-235b-a22b-disaggregated", "LLMRENDER_LLMD_EPP", 3, 3, gkeNodes("h200-141gb", 3)},
		// Across nodes, every pod of a server is an endpoint.
		{"serving/serve-gke-h200-deepseek-r1-wide-ep", "LLMRENDER_LLMD_EPP", 4, 4, gkeNodes("h200-141gb", 4)},
	} {
		t.Run(ex.name, func(t *testing.T) {
			t.Parallel()
			bin := os.Getenv(ex.bin)
			if bin == "" {
				t.Fatalf("%s is not set: run these tests with 'make e2e', which builds the endpoint pickers", ex.bin)
			}
			objs, err := Render(fmt.Sprintf("epp%d", i), []string{example(ex.name)}, nil)
			if err != nil {
				t.Fatal(err)
			}
			var args []string
			var config, image string
			for _, o := range objs {
				switch {
				case o.GetKind() == "Deployment" && strings.HasSuffix(o.GetName(), "-epp"):
					cs, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
					c := cs[0].(map[string]any)
					image, _ = c["image"].(string)
					for _, a := range c["args"].([]any) {
						args = append(args, a.(string))
					}
				case o.GetKind() == "ConfigMap" && strings.HasSuffix(o.GetName(), "-epp"):
					config, _, _ = unstructured.NestedString(o.Object, "data", "config.yaml")
				}
			}
			// The picker built here is the release the chart runs.
			if tag := image[strings.LastIndex(image, ":")+1:]; !strings.Contains(bin, "-"+tag+"/") {
				t.Fatalf("the chart runs the picker %s, and the one built here is %s", image, bin)
			}
			if len(args) == 0 || config == "" {
				t.Fatalf("no endpoint picker Deployment or ConfigMap in the render (args %q)", args)
			}
			sc := Scenario{Name: fmt.Sprintf("epp%d", i), Objects: objs, Apply: "kubectl", Nodes: ex.nodes}
			sc.Finished = func(ctx context.Context, ns string) error { return runPicker(ctx, t, bin, args, config, ns) }
			rep, err := sim.Run(context.Background(), sc)
			if err != nil {
				t.Fatal(err)
			}
			if err := rep.CheckPeak(ex.servers, ex.onNodes); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// runPicker runs the picker with the rendered arguments (its configuration
// file where the ConfigMap would be mounted, its listeners on free local
// ports) and checks what it reports; then stops it with SIGTERM, as the
// kubelet would.
func runPicker(ctx context.Context, t *testing.T, bin string, rendered []string, config, ns string) error {
	dir := t.TempDir()
	file := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(file, []byte(config), 0o644); err != nil {
		return err
	}
	var args []string
	for _, a := range rendered {
		if strings.HasPrefix(a, "--config-file=") {
			a = "--config-file=" + file
		}
		args = append(args, a)
	}
	ports, err := freePorts(3)
	if err != nil {
		return err
	}
	args = append(args, fmt.Sprintf("--grpc-port=%d", ports[0]), fmt.Sprintf("--grpc-health-port=%d", ports[1]),
		fmt.Sprintf("--metrics-port=%d", ports[2]), "--metrics-endpoint-auth=false")
	picker, err := start(bin, args, "KUBECONFIG="+sim.Kubeconfig, "NAMESPACE="+ns, "POD_NAME=epp-under-test")
	if err != nil {
		return err
	}
	defer func() {
		if !picker.stop(30 * time.Second) {
			t.Errorf("the endpoint picker did not stop within 30 s of SIGTERM")
		}
	}()
	running := picker.running
	fail := func(format string, a ...any) error {
		return fmt.Errorf("endpoint picker: "+format+"\n%s", append(a, picker.logs.tail(40))...)
	}
	// Ready as the rendered readiness probe asks: gRPC health, service
	// inference-extension, on the health port.
	conn, err := grpc.NewClient(fmt.Sprintf("127.0.0.1:%d", ports[1]), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	health := healthpb.NewHealthClient(conn)
	serving := func() bool {
		c, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		r, err := health.Check(c, &healthpb.HealthCheckRequest{Service: "inference-extension"})
		return err == nil && r.Status == healthpb.HealthCheckResponse_SERVING
	}
	if !poll(ctx, 90*time.Second, func() bool { return !running() || serving() }) || !running() {
		return fail("not SERVING on the health service the probes ask for (exited: %v)", !running())
	}
	// The pods it routes to: exactly the release's ready servers.
	want, err := readyServers(ctx, ns)
	if err != nil {
		return err
	}
	var got []string
	tracked := func() bool {
		got = podsInMetrics(fmt.Sprintf("http://127.0.0.1:%d/metrics", ports[2]))
		return slices.Equal(got, want)
	}
	if !poll(ctx, 60*time.Second, tracked) {
		return fail("tracks pods %q, want the ready servers %q", got, want)
	}
	t.Logf("the endpoint picker is SERVING and routes to %q", got)
	return nil
}

// TestRoutingSidecarTakesItsArguments runs llm-d's routing sidecar (built
// from its module at the release the chart names) with the arguments a
// decode server's routing-proxy container is rendered with: it must accept
// them (connector, ports, TLS) and listen on the API port (a free local
// port here), until SIGTERM stops it. A connector it does not know makes
// it exit: the control that the check can fail.
func TestRoutingSidecarTakesItsArguments(t *testing.T) {
	bin := os.Getenv("LLMRENDER_LLMD_SIDECAR")
	if bin == "" {
		t.Fatal("LLMRENDER_LLMD_SIDECAR is not set: run these tests with 'make e2e', which builds the routing sidecar")
	}
	objs, err := Render("sidecar", []string{example("serving/serve-gke-h200-qwen3-235b-a22b-disaggregated")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var args []string
	for _, o := range objs {
		if o.GetKind() != "Deployment" || !strings.HasSuffix(o.GetName(), "-decode") {
			continue
		}
		inits, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "initContainers")
		for _, c := range inits {
			if c := c.(map[string]any); c["name"] == "routing-proxy" {
				if image, _ := c["image"].(string); !strings.Contains(bin, "-"+image[strings.LastIndex(image, ":")+1:]+"/") {
					t.Fatalf("the chart runs the sidecar %s, and the one built here is %s", image, bin)
				}
				for _, a := range c["args"].([]any) {
					args = append(args, a.(string))
				}
			}
		}
	}
	if !slices.Contains(args, "--port=8000") {
		t.Fatalf("no routing-proxy container on the API port in the decode servers' Deployment (args %q)", args)
	}
	run := func(args []string) (port int, sidecar *started) {
		ports, err := freePorts(1)
		if err != nil {
			t.Fatal(err)
		}
		var with []string
		for _, a := range args {
			if strings.HasPrefix(a, "--port=") {
				a = fmt.Sprintf("--port=%d", ports[0])
			}
			with = append(with, a)
		}
		sidecar, err = start(bin, with)
		if err != nil {
			t.Fatal(err)
		}
		return ports[0], sidecar
	}
	port, sidecar := run(args)
	listening := func() bool {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
		if err == nil {
			c.Close()
		}
		return err == nil
	}
	up := poll(context.Background(), 60*time.Second, func() bool { return !sidecar.running() || listening() })
	if !sidecar.running() {
		t.Fatalf("the sidecar exited with the rendered arguments %q:\n%s", args, sidecar.logs.tail(20))
	}
	if !up {
		t.Fatalf("the sidecar does not listen on the API port within 60 s:\n%s", sidecar.logs.tail(20))
	}
	if !sidecar.stop(30 * time.Second) {
		t.Errorf("the sidecar did not stop within 30 s of SIGTERM")
	}
	// The control: a connector it does not know.
	var bad []string
	for _, a := range args {
		if strings.HasPrefix(a, "--kv-connector=") {
			a = "--kv-connector=nixl"
		}
		bad = append(bad, a)
	}
	_, badSidecar := run(bad)
	defer badSidecar.stop(30 * time.Second)
	select {
	case <-badSidecar.exited:
		t.Logf("with a connector it does not know, the sidecar exits: %s", badSidecar.logs.tail(1))
	case <-time.After(60 * time.Second):
		t.Errorf("the sidecar runs with --kv-connector=nixl; the check above proves nothing")
	}
}

// readyServers are the names of the namespace's ready server pods.
func readyServers(ctx context.Context, ns string) ([]string, error) {
	pods, err := sim.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/component=run"})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range pods.Items {
		if podReady(&p) && p.Status.Phase == corev1.PodRunning {
			out = append(out, p.Name)
		}
	}
	sort.Strings(out)
	if len(out) == 0 {
		return nil, fmt.Errorf("no ready server pod in %s", ns)
	}
	return out, nil
}

// The picker names an endpoint after its pod and the target port's index
// ("-rank-0" for the first).
var perPodRE = regexp.MustCompile(`^inference_pool_per_pod_queue_size\{[^}]*model_server_pod="([^"]+)-rank-0"`)

// podsInMetrics are the pods the picker's per-pod metric names, sorted.
func podsInMetrics(url string) []string {
	resp, err := http.Get(url)
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	var out []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if m := perPodRE.FindStringSubmatch(sc.Text()); m != nil {
			out = append(out, m[1])
		}
	}
	sort.Strings(out)
	return out
}

// poll calls ok every half second until it is true, or the limit passes.
func poll(ctx context.Context, limit time.Duration, ok func() bool) bool {
	deadline := time.Now().Add(limit)
	for ctx.Err() == nil && time.Now().Before(deadline) {
		if ok() {
			return true
		}
		time.Sleep(500 * time.Millisecond)
	}
	return false
}

// started is a program a test started, its output kept for the error
// that quotes it.
type started struct {
	cmd    *exec.Cmd
	logs   *lockedBuffer
	exited chan struct{}
}

// start runs bin with args, and env beside the test's own.
func start(bin string, args []string, env ...string) (*started, error) {
	p := &started{cmd: exec.Command(bin, args...), logs: &lockedBuffer{}, exited: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdout, p.cmd.Stderr = p.logs, p.logs
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { p.cmd.Wait(); close(p.exited) }()
	return p, nil
}

// running tells whether it has not exited yet.
func (p *started) running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// stop sends SIGTERM and waits up to limit for it to exit; false when it
// did not, and it is killed.
func (p *started) stop(limit time.Duration) bool {
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		return true
	case <-time.After(limit):
		p.cmd.Process.Kill()
		return false
	}
}

// lockedBuffer keeps a process's output for the error that quotes it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	return len(p), nil
}

// tail is the last n lines.
func (b *lockedBuffer) tail(n int) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	lines := strings.Split(strings.TrimRight(string(b.buf), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
