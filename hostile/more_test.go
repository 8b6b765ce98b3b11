package hostile

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// Hermeticity: no host file, network, clock, time zone or address reaches
// the output.
func TestNothingOfTheMachineLeaks(t *testing.T) {
	w := newWatch(t)
	cm := func(data string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n" + data
	}
	refused := []struct {
		name  string
		files map[string]string
		want  string
		flags []string
	}{
		{"schema $ref to a host file", map[string]string{"templates/x.yaml": cm(""), "values.schema.json": `{"properties": {"a": {"$ref": "file:///etc/hostname"}}}`}, "values.schema.json: $ref file:///etc/hostname is outside the chart", nil},
		{"schema $ref to the network", map[string]string{"templates/x.yaml": cm(""), "values.schema.json": `{"properties": {"a": {"$ref": "https://example.com/s.json"}}}`}, "$ref https://example.com/s.json is outside the chart", nil},
		{"dateInZone of a named zone", map[string]string{"templates/x.yaml": cm(`  d: {{ dateInZone "2006" 0 "America/New_York" | quote }}`)}, `time zone "America/New_York" would be read from this machine's time zone database`, nil},
		{"durationRound of a time", map[string]string{"templates/x.yaml": cm(`  d: {{ durationRound (toDate "2006" "2020") | quote }}`)}, "durationRound of a time is the time since then, which reads the clock", []string{"--refuse-nondeterministic"}},
		{"printf %p", map[string]string{"templates/x.yaml": cm(`  p: {{ printf "%p" .Values | quote }}`)}, "printf %p prints a memory address", nil},
		{"now", map[string]string{"templates/x.yaml": cm(`  t: {{ now | quote }}`)}, "now reads the clock", []string{"--refuse-nondeterministic"}},
	}
	for _, c := range refused {
		t.Run(c.name, func(t *testing.T) {
			res := run{args: append([]string{"render", "--chart", chart(t, c.files)}, c.flags...), watch: w}.do(t)
			res.expect(t, 1, c.want)
			res.never(t, "root:", "localhost")
		})
	}
	t.Run("the clock is SOURCE_DATE_EPOCH or --now, never the machine's", func(t *testing.T) {
		dir := chart(t, map[string]string{"templates/x.yaml": cm(`  now: {{ now | date "2006-01-02T15:04:05Z07:00" | quote }}`)})
		res := run{args: []string{"render", "--chart", dir}, env: []string{"SOURCE_DATE_EPOCH=1700000000"}, watch: w}.do(t)
		res.expect(t, 0)
		flag := run{args: []string{"render", "--chart", dir, "--now", "2023-11-14T22:13:20Z"}, watch: w}.do(t)
		flag.expect(t, 0)
		if !strings.Contains(res.stdout, `now: "2023-11-14T22:13:20Z"`) || flag.stdout != res.stdout {
			t.Errorf("SOURCE_DATE_EPOCH:\n%s\n--now:\n%s", res.stdout, flag.stdout)
		}
	})
	t.Run("time zone, environment and addresses do not change the output", func(t *testing.T) {
		dir := chart(t, map[string]string{"templates/x.yaml": cm(`  local: {{ dateInZone "2006-01-02 15:04 MST" 86400 "Local" | quote }}
  all: {{ printf "%v" . | quote }}
  keys: {{ toYaml (dict "llama-2-7b" 1 "llama-2-13b" 2 "llama-2-70b" 3) | quote }}
  caps: {{ list .Capabilities | quote }}
  now: {{ now | date "2006-01-02T15:04:05Z07:00" | quote }}
  since: {{ durationRound (toDate "2006-01-02" "1969-12-31") | quote }}`)})
		var outs []string
		for _, tz := range []string{"UTC", "Pacific/Kiritimati", "America/St_Johns", "Asia/Kathmandu"} {
			res := run{args: []string{"render", "--chart", dir}, env: []string{"TZ=" + tz, "ZONEINFO=/nonexistent", "LLMRENDER_X=1"}, watch: w}.do(t)
			res.expect(t, 0)
			outs = append(outs, res.stdout)
		}
		for _, o := range outs[1:] {
			if o != outs[0] {
				t.Fatalf("the output changed:\n%s\n---\n%s", outs[0], o)
			}
		}
		if !strings.Contains(outs[0], `local: 1970-01-02 00:00 UTC`) || !strings.Contains(outs[0], `now: "1970-01-01T00:00:00Z"`) || !strings.Contains(outs[0], `since: 24h`) || regexp.MustCompile(`0x[0-9a-f]{6,}`).MatchString(outs[0]) {
			t.Errorf("output:\n%s", outs[0])
		}
	})
}

// Credentials and files are never echoed: every message holds at most a
// short excerpt of user data, and nothing LR009 would refuse.
func TestSecretsAreNeverEchoed(t *testing.T) {
	pat := "github_pat_11ABCDEFG0123456789abc_" + strings.Repeat("k9Q", 20)
	hf := "hf_" + strings.Repeat("Zq7", 12)
	key := "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n-----END OPENSSH PRIVATE KEY-----"
	dir := t.TempDir()
	passwd := strings.Repeat("daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin secretline\n", 30)
	files := write(t, dir, map[string]string{
		"token.yaml":   pat + "\n",
		"value.yaml":   "workload:\n  args: [" + pat + "]\n",
		"key.yaml":     "extra:\n  " + hf + ": 1\n",
		"private.yaml": "workload:\n  env:\n    - name: K\n      value: |\n        " + strings.ReplaceAll(key, "\n", "\n        ") + "\n",
		"passwd":       passwd,
	})
	cases := []struct {
		name    string
		args    []string
		code    int
		want    string
		secrets []string
	}{
		{"a values file that is a token", []string{"render", "-f", filepath.Join(files, "token.yaml")}, 1, "the top level of a values file must be a map", []string{pat, "k9Qk9Q"}},
		{"a fine-grained GitHub token in a value", []string{"render", "-f", filepath.Join(files, "value.yaml")}, 1, "LR009", []string{pat[:20]}},
		{"a token as a map key", []string{"render", "-f", filepath.Join(files, "key.yaml")}, 1, "/extra/[redacted: a Hugging Face token]", []string{hf}},
		{"a private key", []string{"render", "-f", filepath.Join(files, "private.yaml")}, 1, "this looks like a private key", []string{"b3BlbnNzaC1rZXktdjEAAAAA"}},
		{"a token in a --set", []string{"render", "--set", "workload.prompt=" + hf}, 1, "--set workload.prompt=[redacted: a Hugging Face token]", []string{hf}},
		{"a token in bad --set-json", []string{"render", "--set-json", "a={\"t\": \"" + pat + "\" x}"}, 2, "--set-json a=", []string{pat, "k9Qk9Q"}},
		{"a token as the release name", []string{"render", "--name", pat}, 2, "--name: release name \"[redacted: a GitHub token]\"", []string{pat}},
		{"a token as the namespace", []string{"render", "-n", hf}, 2, "--namespace: namespace \"[redacted: a Hugging Face token]\"", []string{hf}},
		{"a host file as values", []string{"render", "-f", filepath.Join(files, "passwd")}, 1, "passwd:1:1: the top level of a values file must be a map", []string{"secretline", "nologin daemon", "daemon:x"}},
		{"a host file to lint", []string{"lint", filepath.Join(files, "passwd")}, 1, "passwd:1: a manifest must be a map with apiVersion, kind and metadata; found text (a scalar)", []string{"secretline", "nologin daemon", "daemon:x"}},
		{"a host file to diff against", []string{"diff", "--against", filepath.Join(files, "passwd")}, 1, "found text (a scalar)", []string{"secretline", "nologin daemon", "daemon:x"}},
		{"a key of 900 characters", []string{"validate", "--set", "workload." + strings.Repeat("k", 900) + "=1"}, 1, "... (900 bytes): unknown key", []string{strings.Repeat("k", 150)}},
		{"a value of 5000 characters", []string{"validate", "--set", "workload.type=" + strings.Repeat("x", 5000)}, 1, "... (5000 bytes) is not one of inference, finetune, pretrain", []string{strings.Repeat("x", 150)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := run{args: c.args}.do(t)
			res.expect(t, c.code, c.want)
			res.never(t, c.secrets...)
			if len(res.stderr) > 1500 {
				t.Errorf("%d bytes on stderr", len(res.stderr))
			}
		})
	}
}

// Lint: a List's items are linted, and a large file costs linear time and
// bounded memory.
func TestLintListsAndLargeFiles(t *testing.T) {
	dir := t.TempDir()
	list := "apiVersion: v1\nkind: List\nmetadata:\n  resourceVersion: \"\"\nitems:\n- apiVersion: v1\n  kind: Pod\n  metadata:\n    name: ok\n  spec:\n    containers:\n    - name: c\n      image: busybox:1.36\n- apiVersion: v1\n  kind: Pod\n  metadata:\n    name: drifting\n  spec:\n    containers:\n    - name: c\n      image: busybox:latest\n      imagePullPolicy: Always\n"
	write(t, dir, map[string]string{"list.yaml": list, "tree/a/list.yaml": list})
	t.Run("kubectl's List", func(t *testing.T) {
		res := run{args: []string{"lint", filepath.Join(dir, "list.yaml")}}.do(t)
		res.expect(t, 0, "2 object(s): 0 error(s), 1 warning(s)")
		if !strings.Contains(res.stdout, "list.yaml:20: Pod/drifting") || !strings.Contains(res.stdout, "LR010") {
			t.Errorf("stdout:\n%s", res.stdout)
		}
	})
	t.Run("a List in a directory", func(t *testing.T) {
		run{args: []string{"lint", filepath.Join(dir, "tree")}}.do(t).expect(t, 0, "2 object(s)")
	})
	// 20 MB of real objects: lint kept the parser's trees of all of them
	// and ran out of 512 MiB; it keeps each object's decoded tree (about
	// 270 MB here).
	t.Run("20 MB of manifests in 512 MiB", func(t *testing.T) {
		golden, err := os.ReadFile(filepath.Join(repo, "testdata", "golden", "s4-eks-trn1-llama2-pretrain-mpijob.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		docs := strings.Split(string(golden), "\n---\n")
		var b strings.Builder
		for i := 0; b.Len() < 20<<20; i++ {
			for _, d := range docs {
				b.WriteString("---\n")
				b.WriteString(strings.Replace(d, "\n  name: ", fmt.Sprintf("\n  name: n%d-", i), 1))
				b.WriteString("\n")
			}
		}
		big := filepath.Join(dir, "big.yaml")
		os.WriteFile(big, []byte(b.String()), 0o644)
		res := run{args: []string{"lint", big}, memory: 512 << 20, timeout: 60 * time.Second}.do(t)
		res.expect(t, 0, "object(s): 0 error(s)")
		// The bound must not depend on how far the collector falls behind
		// (on a busy machine, at the binary's GC percentage): with the
		// collector off but for the soft limit, the run is what a collector
		// that never catches up would make it. It died here when nothing
		// told the runtime about the hard limit.
		res = run{args: []string{"lint", big}, memory: 512 << 20, env: []string{"GOGC=off"}, timeout: 60 * time.Second}.do(t)
		res.expect(t, 0, "object(s): 0 error(s)")
	})
}

// --output-dir is replaced in one step: a render killed at any moment
// leaves the directory complete, and the next render removes what the
// killed one left.
func TestOutputDirSurvivesKills(t *testing.T) {
	parent := t.TempDir()
	out := filepath.Join(parent, "out")
	args := []string{"render", "-f", example("s4-eks-trn1-llama2-pretrain-mpijob.yaml"), "--output-dir", out}
	run{args: args}.do(t).expect(t, 0)
	want, _ := os.ReadDir(out)
	// Meanwhile the directory is looked at all the time.
	var missing atomic.Int32
	stop := make(chan struct{})
	watching := make(chan struct{})
	go func() {
		defer close(watching)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := os.Stat(filepath.Join(out, ".llmrender-output")); err != nil {
				missing.Add(1)
			}
		}
	}()
	for i := range 40 {
		cmd := exec.Command(bin, args...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(i%20) * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		got, err := os.ReadDir(out)
		if err != nil || len(got) != len(want) {
			t.Fatalf("after a kill at %d ms: %d files (%v), want %d", i%20, len(got), err, len(want))
		}
	}
	for range 10 {
		run{args: args}.do(t).expect(t, 0)
	}
	close(stop)
	<-watching
	if n := missing.Load(); n > 0 {
		t.Errorf("the output directory was missing %d time(s)", n)
	}
	if left, _ := filepath.Glob(filepath.Join(parent, ".out.tmp-*")); len(left) != 0 {
		t.Errorf("left behind after a clean run: %v", left)
	}
}

// The smaller ones: names, blame, sources.
func TestSmallerOnes(t *testing.T) {
	t.Run("a namespace Kubernetes refuses", func(t *testing.T) {
		run{args: []string{"render", "-n", "Bad NS!"}}.do(t).expect(t, 2, "--namespace: namespace \"Bad NS!\" must be lower-case letters")
	})
	t.Run("--set-json blames the flag", func(t *testing.T) {
		run{args: []string{"validate", "--set-json", `workload={"nodes":"x"}`}}.do(t).expect(t, 1, `--set-json workload={"nodes":"x"}: /workload/nodes: expected integer, but got string`)
	})
	t.Run("--post-render spelled two ways", func(t *testing.T) {
		parent := t.TempDir()
		write(t, parent, map[string]string{"overlay/kustomization.yaml": "configMapGenerator:\n- name: extra\n  literals: [a=b]\n"})
		base := []string{"render", "-f", example("s1-gke-h100-llama3-finetune-single.yaml"), "--post-render"}
		abs := run{args: append(base, filepath.Join(parent, "overlay"))}.do(t)
		rel := run{args: append(base, "./overlay/"), dir: parent}.do(t)
		abs.expect(t, 0)
		if abs.stdout != rel.stdout || !strings.Contains(abs.stdout, "# Source: overlay/kustomization.yaml") {
			t.Errorf("the output depends on how --post-render DIR is spelled:\n%.300s", abs.stdout)
		}
	})
	t.Run("an object name of 253 characters", func(t *testing.T) {
		name := strings.Repeat("a", 253)
		dir := chart(t, map[string]string{"templates/x.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n  namespace: " + strings.Repeat("n", 63) + "\n"})
		out := filepath.Join(t.TempDir(), "out")
		run{args: []string{"render", "--chart", dir, "--output-dir", out}}.do(t).expect(t, 0)
		files, _ := filepath.Glob(filepath.Join(out, "000-configmap-*.yaml"))
		if len(files) != 1 || len(filepath.Base(files[0])) > 255 {
			t.Errorf("files: %v", files)
		}
	})
}
