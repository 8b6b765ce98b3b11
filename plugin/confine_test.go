package plugin

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmrender/llmrender/internal/testkit"
)

// A credential given as the release's namespace (or name) is refused as
// one, and shows nowhere: not in the error, not in a result's message,
// object or field.
func TestReleaseCredentialsAreNeverEchoed(t *testing.T) {
	for fixture, secret := range map[string]string{
		"namespace-token.yaml":           "Zq7Zq7Zq7",
		"configmap-namespace-token.yaml": "k9Qk9Qk9Q",
	} {
		t.Run(fixture, func(t *testing.T) {
			out := Run(readFixture(t, fixture), testEnv(t, "."))
			if out.Err == nil {
				t.Fatalf("no error; output:\n%.2000s", out.Data)
			}
			if strings.Contains(out.Err.Error(), secret) || strings.Contains(string(out.Data), secret) {
				t.Errorf("the credential is shown:\nerror: %v\noutput:\n%s", out.Err, out.Data)
			}
		})
	}
	// The object a result points at is the config; a credential in its
	// name is hidden there too.
	in := strings.Replace(string(readFixture(t, "namespace-invalid.yaml")), "name: llm", "name: ghp_k9Qk9Qk9Qk9Qk9Qk9Qk9Qk9Qk9Qk9Qk9Qk9Qk9Q", 1)
	out := Run([]byte(in), testEnv(t, "."))
	if out.Err == nil || strings.Contains(string(out.Data), "k9Qk9Qk9Q") || !strings.Contains(string(out.Data), "[redacted: a GitHub token]") {
		t.Errorf("error %v; output:\n%s", out.Err, out.Data)
	}
}

// rootTree is a kustomization's directory, as kustomize runs the function
// in it, and a directory beside it with a values file and a host file.
func rootTree(t *testing.T) (root, outside string) {
	t.Helper()
	base := t.TempDir()
	root, outside = filepath.Join(base, "kustomization"), filepath.Join(base, "outside")
	for _, d := range []string{filepath.Join(root, "values"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{
		filepath.Join(root, "values", "prod.yaml"): "storage:\n  size: 250Gi\n",
		filepath.Join(root, "passwd"):              "root:x:0:0:root:/root:/bin/bash secretline\ndaemon:x:1:1::/:/sbin/nologin\n",
		filepath.Join(outside, "shared.yaml"):      "storage:\n  size: 300Gi\n",
		filepath.Join(outside, "passwd"):           "root:x:0:0:root:/root:/bin/bash secretline\n",
	}
	for p, text := range files {
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{
		filepath.Join(root, "values", "linked.yaml"):  filepath.Join(outside, "shared.yaml"),
		filepath.Join(root, "values", "inside.yaml"):  "prod.yaml",
		filepath.Join(root, "values", "shared"):       outside,
		filepath.Join(root, "values", "etc-passwd"):   "/etc/passwd",
		filepath.Join(root, "values", "dot-dot.yaml"): "../../outside/shared.yaml",
	} {
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
	}
	return root, outside
}

// generatorWith is kustomize's input for a generator with these valuesFiles.
func generatorWith(files ...string) []byte { return testkit.Generator("", files, "") }

// The files a function config names lie inside the client's root, as
// kustomize's LoadRestrictionsRootOnly keeps a kustomization's files: no
// path out of it, by "..", as an absolute path or through a link.
func TestValuesFilesStayInsideTheRoot(t *testing.T) {
	root, outside := rootTree(t)
	refused := []struct{ name, file, want string }{
		{"climbing out", "../../../../../../../etc/passwd", "../../../../../../../etc/passwd is outside " + root + ", the kustomization's directory"},
		{"climbing into a neighbour", "../outside/shared.yaml", "../outside/shared.yaml is outside " + root},
		{"an absolute path outside", "/etc/passwd", "/etc/passwd is outside " + root},
		{"an absolute path to a neighbour", filepath.Join(outside, "shared.yaml"), "is outside " + root},
		{"a link to a file outside", "values/linked.yaml", "values/linked.yaml: is a symbolic link that leads outside " + root},
		{"a link to a directory outside", "values/shared/shared.yaml", "values/shared/shared.yaml: is a symbolic link that leads outside " + root},
		{"a link to a host file", "values/etc-passwd", "is a symbolic link that leads outside " + root},
		{"a relative link out", "values/dot-dot.yaml", "is a symbolic link that leads outside " + root},
		{"a directory", "values", "values: is a directory, not a file"},
		{"a missing file", "values/none.yaml", "values/none.yaml: no such file (relative paths are read from " + root},
	}
	for _, c := range refused {
		t.Run(c.name, func(t *testing.T) {
			out := Run(generatorWith(c.file), testEnv(t, root))
			if out.Err == nil || !strings.Contains(out.Err.Error(), c.want) {
				t.Fatalf("error %v, want %q", out.Err, c.want)
			}
			got := decode(t, out.Data)
			if f, _ := got.Results[0]["field"].(map[string]any); f["path"] != "valuesFiles[0]" {
				t.Errorf("result field %v, want valuesFiles[0]", got.Results[0]["field"])
			}
			if strings.Contains(out.Err.Error()+string(out.Data), "root:x") {
				t.Errorf("the file is quoted:\n%s", out.Data)
			}
		})
	}
	read := []struct{ name, file, want string }{
		{"relative", "values/prod.yaml", "storage: 250Gi"},
		{"through .. inside", "values/../values/prod.yaml", "storage: 250Gi"},
		{"an absolute path inside", filepath.Join(root, "values", "prod.yaml"), "storage: 250Gi"},
		{"a link inside", "values/inside.yaml", "storage: 250Gi"},
	}
	for _, c := range read {
		t.Run(c.name, func(t *testing.T) {
			out := run(t, generatorWith(c.file), testEnv(t, root))
			if !strings.Contains(string(out.Data), c.want) {
				t.Errorf("the values file was not read:\n%.3000s", out.Data)
			}
		})
	}
	// As kustomize's LoadRestrictionsNone: any file.
	t.Run("unrestricted", func(t *testing.T) {
		env := testEnv(t, root)
		env.Load = Unrestricted
		out := run(t, generatorWith("../outside/shared.yaml"), env)
		if !strings.Contains(string(out.Data), "storage: 300Gi") {
			t.Errorf("the values file was not read:\n%.3000s", out.Data)
		}
	})
}

// kpt names the package's directory: the config's files stay inside it,
// also when the config's path is in a subdirectory.
func TestValuesFilesStayInsideThePackage(t *testing.T) {
	root, _ := rootTree(t)
	kpt := func(file string) []byte {
		return []byte(`apiVersion: config.kubernetes.io/v1
kind: ResourceList
items: []
functionConfig:
  apiVersion: llmrender.dev/v1alpha1
  kind: LLMWorkload
  metadata:
    name: llm
    annotations:
      internal.config.kubernetes.io/path: 'values/llmworkload.yaml'
      internal.config.kubernetes.io/package-path: '` + root + `'
  valuesFiles: ["` + file + `"]
  spec: {}
`)
	}
	env := testEnv(t, t.TempDir()) // kpt runs the function elsewhere
	if out := run(t, kpt("prod.yaml"), env); !strings.Contains(string(out.Data), "storage: 250Gi") {
		t.Errorf("the values file beside the config was not read:\n%.3000s", out.Data)
	}
	out := Run(kpt("../../outside/shared.yaml"), env)
	if out.Err == nil || !strings.Contains(out.Err.Error(), "is outside "+root+", the package's directory") {
		t.Errorf("error %v", out.Err)
	}
}

// A file that is no values map is reported by position and by what it
// holds, never by what it says.
func TestValuesFileContentIsNeverQuoted(t *testing.T) {
	root, _ := rootTree(t)
	out := Run(generatorWith("passwd"), testEnv(t, root))
	want := "passwd:1:1: the top level of a values file must be a map of keys to values, found text (a scalar)"
	if out.Err == nil || !strings.Contains(out.Err.Error(), want) {
		t.Fatalf("error %v, want %q", out.Err, want)
	}
	for _, s := range []string{"root:x", "secretline", "/bin/bash"} {
		if strings.Contains(out.Err.Error(), s) || strings.Contains(string(out.Data), s) {
			t.Errorf("the file is quoted (%q):\nerror: %v\noutput:\n%s", s, out.Err, out.Data)
		}
	}
}

// Every failure is answered with a whole ResourceList, also one whose
// answer cannot be written as the input was (a field the function does not
// know aliases a config that holds a bomb, and the config goes).
func TestFailuresAlwaysAnswerAResourceList(t *testing.T) {
	in := `apiVersion: config.kubernetes.io/v1
kind: ResourceList
items: []
functionConfig:
  apiVersion: llmrender.dev/v1alpha1
  kind: LLMWorkload
  metadata:
    name: llm
  spec:
    a: &a [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]
    b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]
    c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]
    d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]
    e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]
    f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]
    g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f, *f]
extra: *g
`
	out := Run([]byte(in), testEnv(t, "."))
	if out.Err == nil {
		t.Fatal("no error")
	}
	got := decode(t, out.Data)
	if len(got.Items) != 0 || len(got.Results) == 0 || got.Results[0]["severity"] != "error" {
		t.Errorf("want no items and the error as a result:\n%s", out.Data)
	}
}
