package hostile

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/llmrender/llmrender/renderer"
)

// Network through --post-render: only files inside DIR load.
func TestPostRenderLoadsNothingRemote(t *testing.T) {
	w := newWatch(t)
	cases := []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"git resource", map[string]string{"kustomization.yaml": "resources:\n- github.com/org/repo//x?ref=main\n"}, `resources[0] "github.com/org/repo//x?ref=main" is a remote git repository`},
		{"scp component", map[string]string{"kustomization.yaml": "components:\n- git@github.com:org/repo.git\n"}, `components[0] "git@github.com:org/repo.git" is a remote git repository`},
		{"https patch", map[string]string{"kustomization.yaml": "patches:\n- path: https://example.com/p.yaml\n"}, `patches[0].path "https://example.com/p.yaml" is a URL`},
		{"generator file from a URL", map[string]string{"kustomization.yaml": "configMapGenerator:\n- name: c\n  files:\n  - k=https://example.com/a.txt\n"}, `configMapGenerator[0].files[0] "https://example.com/a.txt" is a URL`},
		{"nested base", map[string]string{"kustomization.yaml": "resources:\n- base\n", "base/kustomization.yaml": "resources:\n- https://github.com/org/repo//deploy?ref=v1\n"}, `base/kustomization.yaml: resources[0] "https://github.com/org/repo//deploy?ref=v1" is a remote git repository`},
		{"helm chart", map[string]string{"kustomization.yaml": "helmCharts:\n- name: x\n  repo: https://charts.example.com\n"}, "helm charts are not supported by --post-render (plugins and helm are off)"},
		{"openapi from a URL", map[string]string{"kustomization.yaml": "openapi:\n  path: https://example.com/schema.json\n"}, `openapi.path "https://example.com/schema.json" is a URL`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := write(t, t.TempDir(), c.files)
			run{args: []string{"render", "-f", example("s1-gke-h100-llama3-finetune-single.yaml"), "--post-render", dir}, watch: w}.do(t).expect(t, 1, c.want)
		})
	}
}

// Unbounded template work: each runaway stops on the budget, naming the
// template and the limit.
func TestRunawayTemplatesStop(t *testing.T) {
	cases := []struct {
		name, tpl, values, want string
	}{
		{"nested range until", `{{ range until 100000 }}{{ range until 100000 }}{{ end }}{{ end }}`, "", "h/templates/x.yaml:1:33: the render takes more than 1000000 template steps"},
		{"include fanning out", `{{ define "f" }}{{ if lt . 40 }}{{ include "f" (add1 .) }}{{ include "f" (add1 .) }}{{ end }}{{ end }}{{ include "f" 0 }}`, "", "template steps"},
		{"tpl rendering itself", `{{ tpl .Values.x . }}`, "x: '{{ tpl .Values.x . }}'\n", "tpl is nested more than 50 levels deep"},
		{"repeat", `{{ repeat 1000000000000 "abc" }}`, "", "repeat would take the bytes produced by functions past the render's limit of 256 MiB"},
		{"until", `{{ len (until 100000000000) }}`, "", "until would take the bytes"},
		{"untilStep overflowing", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  n: \"{{ len (untilStep 9223372036854775800 9223372036854775807 10) }}\"\n", "", ""},
		{"string doubling", `{{ $s := "ab" }}{{ range until 64 }}{{ $s = cat $s $s }}{{ end }}`, "", "cat would take the bytes"},
		{"dict doubling", `{{ $d := dict }}{{ range until 64 }}{{ $d = dict "a" $d "b" $d }}{{ end }}{{ toJson $d }}`, "", "toJson would take the bytes"},
		{"map containing itself", `{{ $d := dict }}{{ $_ := set $d "self" $d }}{{ $d }}`, "", "the value nests more than 1000 levels deep"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			files := map[string]string{"templates/x.yaml": c.tpl}
			if c.values != "" {
				files["values.yaml"] = c.values
			}
			// Each runaway ends on a budget; a million includes take some
			// 6 s on a quiet 2-core machine, more on a busy one. The
			// render's own wall-time limit ends whatever the other limits
			// miss, so the test waits past it and only a hang is killed.
			res := run{args: []string{"render", "--chart", chart(t, files)}, timeout: renderer.DefaultLimits.Time + 30*time.Second}.do(t)
			if c.want == "" {
				res.expect(t, 0)
				return
			}
			res.expect(t, 1, c.want)
		})
	}
}

// Unbounded memory from flags: all sources together are bounded.
func TestFlagsTogetherAreBounded(t *testing.T) {
	dir := t.TempDir()
	var many []string
	for i := range 10000 {
		many = append(many, "--set", fmt.Sprintf("l%d[65536]=1", i))
	}
	big := write(t, dir, map[string]string{"big.txt": strings.Repeat("x", 4<<20-16)})
	var files []string
	for i := range 6 {
		name := fmt.Sprintf("v%d.yaml", i)
		write(t, dir, map[string]string{name: fmt.Sprintf("k%d: %q\n", i, strings.Repeat("y", 3<<20))})
		files = append(files, "-f", filepath.Join(dir, name))
	}
	list300k := filepath.Join(write(t, dir, map[string]string{"list.yaml": "l:\n" + strings.Repeat("- 0\n", 300000)}), "list.yaml")
	mixed := []string{"validate", "-f", list300k}
	for i := range 12 {
		mixed = append(mixed, "--set", fmt.Sprintf("m%d[65536]=1", i))
	}
	setFiles := []string{"validate"}
	for i := range 20 {
		setFiles = append(setFiles, "--set-file", fmt.Sprintf("k%d=%s", i, filepath.Join(big, "big.txt")))
	}
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"ten thousand list indexes", append([]string{"validate"}, many...), "--set l15[65536]=1: values files and flags together would hold more than 1000000 values"},
		{"twenty --set-file of 4 MiB", setFiles, "values files and flags together are larger than 16 MiB"},
		{"six values files of 3 MiB", append([]string{"validate"}, files...), "v5.yaml: values files and flags together are larger than 16 MiB"},
		{"a file of 300,000 values and twelve list indexes", mixed, "--set m10[65536]=1: values files and flags together would hold more than 1000000 values"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			run{args: c.args}.do(t).expect(t, 1, c.want)
		})
	}
}

// Reads before size checks: every file goes through the bounded reader.
func TestFilesThatAreNotWhatTheySeem(t *testing.T) {
	dir := t.TempDir()
	fifoDir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(fifoDir, "values.yaml"), 0o600); err != nil {
		t.Fatal(err)
	}
	sparse := filepath.Join(dir, "sparse.yaml")
	f, err := os.Create(sparse)
	if err != nil {
		t.Fatal(err)
	}
	f.Truncate(20 << 30)
	f.Close()
	golden := write(t, t.TempDir(), map[string]string{"000-a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n"})
	os.Symlink("/dev/zero", filepath.Join(golden, "001-zero.yaml"))
	ignoreLink := chart(t, map[string]string{"templates/x.yaml": "{}"})
	os.Symlink("/dev/zero", filepath.Join(ignoreLink, ".helmignore"))
	ignoreHuge := chart(t, map[string]string{"templates/x.yaml": "{}", ".helmignore": strings.Repeat("*.bak\n", 20000)})
	overlay := write(t, t.TempDir(), map[string]string{"kustomization.yaml": "{}\n"})
	blob, _ := os.Create(filepath.Join(overlay, "blob.bin"))
	blob.Truncate(70 << 20)
	blob.Close()
	overlayLink := write(t, t.TempDir(), map[string]string{"kustomization.yaml": "patches:\n- path: p.yaml\n"})
	os.Symlink("/etc/passwd", filepath.Join(overlayLink, "p.yaml"))
	cases := []struct {
		name string
		r    run
		want string
	}{
		{"lint /dev/zero", run{args: []string{"lint", "/dev/zero"}}, "/dev/zero: more than 64 MiB of manifests in total"},
		{"lint a 20 GB sparse file", run{args: []string{"lint", sparse}}, "sparse.yaml: more than 64 MiB of manifests in total"},
		{"lint /dev/zero on stdin", run{args: []string{"lint"}, stdinF: "/dev/zero"}, "<stdin>: more than 64 MiB of manifests in total"},
		{"diff against a tree with a link to /dev/zero", run{args: []string{"diff", "--against", golden}}, "001-zero.yaml: is a symbolic link that leads outside"},
		{"a FIFO among --each's values files", run{args: []string{"render", "--each", fifoDir, "--output-dir", filepath.Join(t.TempDir(), "out")}}, "values.yaml: is a named pipe (FIFO), not a regular file"},
		{"a FIFO in a lint directory", run{args: []string{"lint", fifoDir}}, "values.yaml: is a named pipe (FIFO), not a regular file"},
		{".helmignore linked to /dev/zero", run{args: []string{"render", "--chart", ignoreLink}}, ".helmignore: is a symbolic link that leads outside"},
		{"a huge .helmignore", run{args: []string{"render", "--chart", ignoreHuge}}, ".helmignore: is 117 KiB, larger than the 64 KiB limit"},
		{"a 70 MB file in a post-render overlay", run{args: []string{"render", "--post-render", overlay}}, "holds more than 64 MiB; is this the overlay directory?"},
		{"a post-render patch linked to a host file", run{args: []string{"render", "--post-render", overlayLink}}, "p.yaml: is a symbolic link that leads outside"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.r.timeout = 10 * time.Second
			c.r.do(t).expect(t, 1, c.want)
		})
	}
}

// The function's own reads are bounded too: its config file and its
// standalone inputs, which the user names and so may be devices.
func TestFunctionConfigIsBounded(t *testing.T) {
	run{args: []string{"fn", "--config", "/dev/zero"}, timeout: 10 * time.Second}.do(t).expect(t, 1, "function config /dev/zero: is larger than the 64 MiB limit")
	dir := t.TempDir()
	cfg := filepath.Join(dir, "llm.yaml")
	if err := os.WriteFile(cfg, []byte("apiVersion: llmrender.dev/v1alpha1\nkind: LLMWorkload\nmetadata:\n  name: llm\nspec: {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run{args: []string{"fn", "--config", cfg, "/dev/zero"}, timeout: 10 * time.Second}.do(t).expect(t, 1, "input /dev/zero: is larger than the 64 MiB limit")
}

// Subchart archives: a compression bomb stops at the chart's limit, an
// entry that climbs out of the archive is refused, and a chart that
// aliases a subchart a thousand times is stopped; each a real process
// within the memory limit.
func TestSubchartArchivesAreBounded(t *testing.T) {
	archive := func(entries map[string][]byte) string {
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		tw := tar.NewWriter(zw)
		names := make([]string, 0, len(entries))
		for n := range entries {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			tw.WriteHeader(&tar.Header{Name: n, Mode: 0o644, Size: int64(len(entries[n])), Typeflag: tar.TypeReg})
			tw.Write(entries[n])
		}
		tw.Close()
		zw.Close()
		return buf.String()
	}
	sub := []byte("apiVersion: v2\nname: s\nversion: 1.0.0\n")
	bomb := map[string][]byte{"s/Chart.yaml": sub}
	for i := 0; i < 100; i++ {
		bomb[fmt.Sprintf("s/files/zero%03d", i)] = make([]byte, 4<<20)
	}
	var aliases strings.Builder
	aliases.WriteString("apiVersion: v2\nname: h\nversion: 1.0.0\ndependencies:\n")
	for i := 0; i < 1100; i++ {
		fmt.Fprintf(&aliases, "  - {name: s, version: 1.0.0, repository: x, alias: a%d}\n", i)
	}
	cases := []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"compression bomb", map[string]string{"charts/s-1.0.0.tgz": archive(bomb)}, "more than 64 MiB in all, with subcharts and archives decompressed"},
		{"entry out of the archive", map[string]string{"charts/s-1.0.0.tgz": archive(map[string][]byte{"s/Chart.yaml": sub, "s/../../../etc/x": []byte("x")})}, "lies outside the archive's chart directory"},
		{"a thousand aliases", map[string]string{"Chart.yaml": aliases.String(), "charts/s/Chart.yaml": string(sub)}, "more than 1000 charts with subcharts and their aliased copies"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			run{args: []string{"render", "--chart", chart(t, c.files)}, timeout: 20 * time.Second}.do(t).expect(t, 1, c.want)
		})
	}
}
