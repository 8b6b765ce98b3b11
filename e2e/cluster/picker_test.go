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
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

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
				if image, _ := c["image"].(string); !strings.Contains(bin, "-"+image[strings.LastIndex(image, ":")+1:]) {
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
	if err := startOwned(p.cmd); err != nil {
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
