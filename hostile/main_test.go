// Package hostile runs the llmrender binary on inputs an attacker would
// try: remote loads, runaway templates, flags that multiply, files that
// are not what they seem, leaks of the machine's state and of secrets,
// huge manifests, and kills at the wrong moment. Each case is a real
// process with a memory limit (RLIMIT_DATA) and a time limit, and must
// end with its expected exit code and message, no panic, no network, and
// nothing secret on its streams.
//
// LLMRENDER_BIN=path runs the cases against another binary (an older
// build, to see them fail).
package hostile

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/llmrender/llmrender/internal/testkit"
)

var bin string

// memoryLimit is the data segment every run gets: a render needs about
// 60 MB, so anything near this is a runaway.
const memoryLimit = 768 << 20

func TestMain(m *testing.M) {
	// Re-executed as the wrapper that sets the memory limit and becomes
	// the binary under test.
	if limit := os.Getenv("HOSTILE_RLIMIT_DATA"); limit != "" {
		n, _ := strconv.ParseUint(limit, 10, 64)
		if err := syscall.Setrlimit(syscall.RLIMIT_DATA, &syscall.Rlimit{Cur: n, Max: n}); err != nil {
			fmt.Fprintln(os.Stderr, "setrlimit:", err)
			os.Exit(125)
		}
		env := make([]string, 0, len(os.Environ()))
		for _, e := range os.Environ() {
			if !strings.HasPrefix(e, "HOSTILE_RLIMIT_DATA=") {
				env = append(env, e)
			}
		}
		err := syscall.Exec(os.Args[1], os.Args[1:], env)
		fmt.Fprintln(os.Stderr, "exec:", err)
		os.Exit(125)
	}
	bin = os.Getenv("LLMRENDER_BIN")
	remove := func() {}
	if bin == "" {
		var err error
		if bin, remove, err = testkit.BuildLLMRender("../cmd/llmrender"); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	code := m.Run()
	remove()
	os.Exit(code)
}

// watch is what a run could reach: a git on PATH that leaves a mark, and
// an HTTP proxy (set in http_proxy and https_proxy) that counts requests.
type watch struct {
	path    string // PATH holding the git
	gitMark string
	proxy   string
	hits    atomic.Int32
}

func newWatch(t *testing.T) *watch {
	t.Helper()
	w := &watch{path: t.TempDir(), gitMark: filepath.Join(t.TempDir(), "git-ran")}
	git := "#!/bin/sh\necho \"$@\" > " + w.gitMark + "\nexit 1\n"
	if err := os.WriteFile(filepath.Join(w.path, "git"), []byte(git), 0o755); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w.hits.Add(1)
		http.Error(rw, "no network here", http.StatusForbidden)
	})}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	w.proxy = "http://" + l.Addr().String()
	return w
}

// reached fails the test if the run used git or the network.
func (w *watch) reached(t *testing.T) {
	t.Helper()
	if data, err := os.ReadFile(w.gitMark); err == nil {
		t.Errorf("git ran: git %s", data)
		os.Remove(w.gitMark)
	}
	if n := w.hits.Swap(0); n > 0 {
		t.Errorf("%d request(s) reached the network", n)
	}
}

// run is one process of the binary under test.
type run struct {
	memory  int // the data limit, memoryLimit when 0
	args    []string
	stdin   string
	stdinF  string // a file for standard input, instead of stdin
	dir     string
	env     []string // added to the hostile environment
	timeout time.Duration
	watch   *watch
}

type result struct {
	code           int
	stdout, stderr string
	took           time.Duration
}

func (r run) do(t *testing.T) result {
	t.Helper()
	timeout := r.timeout
	if timeout == 0 {
		timeout = 20 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, self, append([]string{bin}, r.args...)...)
	cmd.Dir = r.dir
	path := "/usr/bin:/bin"
	memory := r.memory
	if memory == 0 {
		memory = memoryLimit
	}
	env := []string{"HOSTILE_RLIMIT_DATA=" + strconv.Itoa(memory), "HOME=" + t.TempDir()}
	if r.watch != nil {
		path = r.watch.path
		env = append(env, "http_proxy="+r.watch.proxy, "https_proxy="+r.watch.proxy, "HTTP_PROXY="+r.watch.proxy, "HTTPS_PROXY="+r.watch.proxy)
	}
	cmd.Env = append(append(env, "PATH="+path), r.env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	cmd.Stdin = strings.NewReader(r.stdin)
	if r.stdinF != "" {
		f, err := os.Open(r.stdinF)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		cmd.Stdin = f
	}
	start := time.Now()
	err = cmd.Run()
	res := result{code: cmd.ProcessState.ExitCode(), stdout: out.String(), stderr: errOut.String(), took: time.Since(start)}
	if ctx.Err() != nil {
		t.Fatalf("llmrender %s did not end within %v (killed)", strings.Join(short(r.args), " "), timeout)
	}
	if err != nil && res.code < 0 {
		t.Fatalf("llmrender %s: %v", strings.Join(short(r.args), " "), err)
	}
	for _, crash := range []string{"panic:", "fatal error:", "goroutine ", "runtime: out of memory"} {
		if strings.Contains(res.stderr, crash) {
			t.Fatalf("llmrender %s crashed:\n%.2000s", strings.Join(short(r.args), " "), res.stderr)
		}
	}
	if r.watch != nil {
		r.watch.reached(t)
	}
	return res
}

// expect checks the exit code and that stderr holds every fragment.
func (res result) expect(t *testing.T, code int, fragments ...string) {
	t.Helper()
	if res.code != code {
		t.Errorf("exit %d, want %d; stderr:\n%.2000s", res.code, code, res.stderr)
	}
	for _, f := range fragments {
		if !strings.Contains(res.stderr, f) {
			t.Errorf("stderr lacks %q:\n%.2000s", f, res.stderr)
		}
	}
}

// never checks that no output stream holds any of the strings.
func (res result) never(t *testing.T, secrets ...string) {
	t.Helper()
	for _, s := range secrets {
		if strings.Contains(res.stderr, s) || strings.Contains(res.stdout, s) {
			t.Errorf("output holds %.30q...", s)
		}
	}
}

func short(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if len(a) > 60 {
			a = a[:60] + "..."
		}
		out[i] = a
	}
	if len(out) > 8 {
		out = append(out[:8], fmt.Sprintf("... (%d arguments)", len(args)))
	}
	return out
}

// write creates the files under dir (names may have directories).
func write(t *testing.T, dir string, files map[string]string) string {
	t.Helper()
	for name, text := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// chart writes a chart directory with the given templates and values.
func chart(t *testing.T, files map[string]string) string {
	t.Helper()
	all := map[string]string{"Chart.yaml": "apiVersion: v2\nname: h\nversion: 1.0.0\n", "values.yaml": "{}\n"}
	for k, v := range files {
		all[k] = v
	}
	return write(t, t.TempDir(), all)
}

const repo = ".."

func example(name string) string {
	p, err := filepath.Abs(filepath.Join(repo, "examples", name))
	if err != nil {
		panic(err)
	}
	return p
}
