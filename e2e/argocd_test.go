//go:build e2e

package e2e

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// cmpPlugin is argocd/plugin.yaml as Argo CD's cmpserver/plugin/config.go
// (v3.5.7) reads it.
type cmpPlugin struct {
	APIVersion string `json:"apiVersion"`
	Kind       string
	Metadata   struct{ Name string }
	Spec       struct {
		Version  string
		Generate cmpCommand
		Discover struct {
			FileName string `json:"fileName"`
			Find     struct {
				cmpCommand
				Glob string
			}
		}
	}
}

type cmpCommand struct {
	Command []string
	Args    []string
}

// cmpRun runs a plugin command as the CMP server does (cmpserver/plugin/
// plugin.go runCommand, Argo CD v3.5.7): exec of command[0] with
// command[1:] and args, no shell, in the application's directory, with
// the server's environment plus the request's variables, stdout and
// stderr apart.
func cmpRun(t *testing.T, c cmpCommand, appPath string, env []string) (string, string, error) {
	t.Helper()
	if len(c.Command) == 0 {
		t.Fatal("empty command")
	}
	cmd := exec.Command(c.Command[0], append(c.Command[1:], c.Args...)...)
	cmd.Dir = appPath
	cmd.Env = env
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	return out.String(), errOut.String(), err
}

// cmpEnv is the environment of a generate request: the server's own plus
// the variables the repo server sends (reposerver/repository/repository.go
// newEnv and getPluginEnvs, v3.5.7), KUBE_VERSION as k8s' ParseGeneric
// prints it, and the application's plugin env as ARGOCD_ENV_*.
func cmpEnv(appEnv map[string]string) []string {
	env := append(os.Environ(),
		"ARGOCD_APP_NAME=llama-ft",
		"ARGOCD_APP_NAMESPACE=ml-train",
		"ARGOCD_APP_PROJECT_NAME=default",
		"ARGOCD_APP_REVISION=0123456789abcdef0123456789abcdef01234567",
		"ARGOCD_APP_REVISION_SHORT=0123456",
		"ARGOCD_APP_REVISION_SHORT_8=01234567",
		"ARGOCD_APP_SOURCE_REPO_URL=https://git.example.com/ml/deploy.git",
		"ARGOCD_APP_SOURCE_PATH=apps/llm",
		"ARGOCD_APP_SOURCE_TARGET_REVISION=main",
		"KUBE_VERSION=1.31.4",
		"KUBE_API_VERSIONS=v1,apps/v1,batch/v1,kubeflow.org/v1,ray.io/v1",
		"ARGOCD_APP_PARAMETERS=[]",
	)
	for k, v := range appEnv {
		env = append(env, "ARGOCD_ENV_"+k+"="+v)
	}
	return env
}

// snapshot lists every file under dir with its size and content, to
// prove a command wrote nothing.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			files[p] = "dir"
			return nil
		}
		data, err := os.ReadFile(p)
		files[p] = string(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// The plugin, run as Argo CD's CMP sidecar runs it: discover matches an
// application directory with a values file or an LLMWorkload and nothing
// else; generate prints exactly what llmrender render prints for the same
// settings, taken from ARGOCD_APP_*, KUBE_* and ARGOCD_ENV_*; errors go to
// stderr with file:line:col and a non-zero exit; nothing is written to the
// work directory or anywhere else.
func TestArgoCDPlugin(t *testing.T) {
	data, err := os.ReadFile("../argocd/plugin.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var p cmpPlugin
	if err := yaml.UnmarshalStrict(data, &p); err != nil {
		t.Fatalf("plugin.yaml: %v", err)
	}
	if p.APIVersion != "argoproj.io/v1alpha1" || p.Kind != "ConfigManagementPlugin" || p.Metadata.Name == "" {
		t.Fatalf("plugin.yaml is %s %s %q", p.APIVersion, p.Kind, p.Metadata.Name)
	}
	// The sidecar's image has llmrender on PATH; the server's own
	// environment is the commands' (and exec finds them through it).
	binDir := t.TempDir()
	if err := os.Symlink(llmrenderBin, filepath.Join(binDir, "llmrender")); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	t.Setenv("PATH", binDir+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("HOME", home)
	t.Setenv("TMPDIR", home)
	// The CMP server unpacks the repository into a fresh work directory;
	// the application is a directory inside it.
	work := t.TempDir()
	values := filepath.Join(work, "apps/llm/llmrender.values.yaml")
	copyFile(t, "../examples/s1-gke-h100-llama3-finetune-single.yaml", values)
	writeFile(t, filepath.Join(work, "apps/llm/common.values.yaml"), []byte("storage:\n  size: 300Gi\n"))
	writeFile(t, filepath.Join(work, "apps/wl/llmworkload.yaml"), []byte(`apiVersion: llmrender.dev/v1alpha1
kind: LLMWorkload
metadata:
  name: wl
valuesFiles:
- ../llm/llmrender.values.yaml
spec:
  storage:
    size: 250Gi
`))
	writeFile(t, filepath.Join(work, "apps/other/kustomization.yaml"), []byte("resources: []\n"))
	before := snapshot(t, work)
	appEnv := map[string]string{"LLMRENDER_VALUES": "llmrender.values.yaml,common.values.yaml", "LLMRENDER_SET": "workload.nodes=1"}

	for app, want := range map[string]string{"llm": "llmrender.values.yaml\n", "wl": "llmworkload.yaml\n", "other": ""} {
		out, errOut, err := cmpRun(t, p.Spec.Discover.Find.cmpCommand, filepath.Join(work, "apps", app), cmpEnv(appEnv))
		if err != nil || out != want {
			t.Errorf("discover in %s: %q, %v, want %q\n%s", app, out, err, want, errOut)
		}
	}

	appPath := filepath.Join(work, "apps/llm")
	out, errOut, err := cmpRun(t, p.Spec.Generate, appPath, cmpEnv(appEnv))
	if err != nil {
		t.Fatalf("generate: %v\n%s", err, errOut)
	}
	direct, err := runTool(t, llmrenderBin, "render", "-f", values, "-f", filepath.Join(work, "apps/llm/common.values.yaml"),
		"--set", "workload.nodes=1", "--name", "llama-ft", "--namespace", "ml-train", "--kube-version", "1.31.4",
		"-a", "v1", "-a", "apps/v1", "-a", "batch/v1", "-a", "kubeflow.org/v1", "-a", "ray.io/v1")
	if err != nil {
		t.Fatal(err)
	}
	if out != direct {
		t.Errorf("generate differs from llmrender render with the same settings")
	}
	// What Argo CD's kube.SplitYAMLToString then reads: objects, each with
	// apiVersion, kind and a name derived from ARGOCD_APP_NAME.
	objs := objects(t, out)
	if len(objs) < 3 {
		t.Fatalf("%d objects", len(objs))
	}
	for k, o := range objs {
		md, _ := o["metadata"].(map[string]any)
		if name, _ := md["name"].(string); !strings.HasPrefix(name, "llama-ft") && !strings.Contains(k, "llama3") {
			t.Errorf("%s: name %q does not come from ARGOCD_APP_NAME", k, name)
		}
	}
	if !strings.Contains(out, "storage: 300Gi") {
		t.Error("the second values file in ARGOCD_ENV_LLMRENDER_VALUES was not applied")
	}

	// The LLMWorkload application names its own release.
	out, errOut, err = cmpRun(t, p.Spec.Generate, filepath.Join(work, "apps/wl"), cmpEnv(nil))
	if err != nil || !strings.Contains(out, "storage: 250Gi") {
		t.Errorf("generate of the LLMWorkload: %v\n%s\n%s", err, errOut, out)
	}

	// A schema error: the file, line and column on stderr, nothing on stdout.
	bad := filepath.Join(work, "apps/bad/llmrender.values.yaml")
	writeFile(t, bad, []byte("workload:\n  nodes: many\n"))
	before[filepath.Dir(bad)], before[bad] = "dir", "workload:\n  nodes: many\n"
	out, errOut, err = cmpRun(t, p.Spec.Generate, filepath.Dir(bad), cmpEnv(nil))
	if err == nil || out != "" || !strings.Contains(errOut, "llmrender.values.yaml:2:10: /workload/nodes:") {
		t.Errorf("bad values: %v, stdout %q, stderr:\n%s", err, out, errOut)
	}
	// An application name that cannot be a release name is named as such.
	env := append(cmpEnv(nil), "ARGOCD_APP_NAME=Team_App")
	if _, errOut, err = cmpRun(t, p.Spec.Generate, appPath, env); err == nil || !strings.Contains(errOut, "ARGOCD_APP_NAME") {
		t.Errorf("bad app name: %v\n%s", err, errOut)
	}

	after := snapshot(t, work)
	for f := range after {
		if _, ok := before[f]; !ok {
			t.Errorf("the plugin wrote %s", f)
		}
	}
	for f, content := range before {
		if after[f] != content {
			t.Errorf("the plugin changed or removed %s", f)
		}
	}
	if entries, _ := os.ReadDir(home); len(entries) > 0 {
		t.Errorf("the plugin wrote into HOME/TMPDIR: %v", entries)
	}
}

// The plugin under Argo CD's own code (hack/argocd-cmp: the repo server's
// stream and the CMP server's MatchRepository and GenerateManifest, in one
// process): Argo CD discovers the application, and what it would apply is
// what llmrender render gives for the same settings; a values mistake
// fails the generation with llmrender's message, file, line and column in
// Argo CD's error; the work directory is left empty.
func TestArgoCDServer(t *testing.T) {
	cmpBin := tool(t, "LLMRENDER_ARGOCD_CMP")
	binDir := t.TempDir()
	if err := os.Symlink(llmrenderBin, filepath.Join(binDir, "llmrender")); err != nil {
		t.Fatal(err)
	}
	configDir := t.TempDir()
	copyFile(t, "../argocd/plugin.yaml", filepath.Join(configDir, "plugin.yaml"))
	cmpWork := t.TempDir()
	repo := t.TempDir()
	values := filepath.Join(repo, "apps/llm/llmrender.values.yaml")
	copyFile(t, "../examples/s1-gke-h100-llama3-finetune-single.yaml", values)
	writeFile(t, filepath.Join(repo, "apps/other/kustomization.yaml"), []byte("resources: []\n"))
	writeFile(t, filepath.Join(repo, "apps/bad/llmrender.values.yaml"), []byte("workload:\n  nodes: many\n"))
	run := func(app string, env ...string) (string, string, error) {
		cmd := exec.Command(cmpBin, append([]string{"-config", configDir, "-repo", repo, "-app", app}, env...)...)
		cmd.Env = append(os.Environ(), "PATH="+binDir+string(os.PathListSeparator)+os.Getenv("PATH"), "ARGOCD_CMP_WORKDIR="+cmpWork)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		return out.String(), errOut.String(), err
	}
	env := []string{"ARGOCD_APP_NAME=llama-ft", "ARGOCD_APP_NAMESPACE=ml-train", "ARGOCD_APP_SOURCE_PATH=apps/llm",
		"KUBE_VERSION=1.31.4", "KUBE_API_VERSIONS=v1,apps/v1,batch/v1", "ARGOCD_ENV_LLMRENDER_SET=workload.nodes=1"}
	out, errOut, err := run("apps/llm", env...)
	if err != nil || !strings.Contains(errOut, "match: true") {
		t.Fatalf("apps/llm: %v\n%s", err, errOut)
	}
	direct, err := runTool(t, llmrenderBin, "render", "-f", values, "--set", "workload.nodes=1", "--name", "llama-ft",
		"--namespace", "ml-train", "--kube-version", "1.31.4", "-a", "v1", "-a", "apps/v1", "-a", "batch/v1")
	if err != nil {
		t.Fatal(err)
	}
	sameObjects(t, "Argo CD's manifests", objects(t, direct), objects(t, out))

	if _, errOut, _ := run("apps/other", env...); !strings.Contains(errOut, "match: false") {
		t.Errorf("apps/other: %s", errOut)
	}
	_, errOut, err = run("apps/bad", env[:5]...) // without the --set that would hide the mistake
	if err == nil || !strings.Contains(errOut, "llmrender.values.yaml:2:10: /workload/nodes:") {
		t.Errorf("apps/bad: %v\n%s", err, errOut)
	}
	entries, _ := os.ReadDir(filepath.Join(cmpWork, "_cmp_server"))
	if len(entries) > 0 {
		t.Errorf("the CMP work directory keeps %d entries", len(entries))
	}
}
