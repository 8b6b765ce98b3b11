//go:build !nopostrender

package postrender

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
)

// An overlay may load only files inside its directory. Every field that
// loads is tried with a remote target; each must be refused naming the
// entry, before git runs or an HTTP request is made.
func TestRemoteLoadsAreRefused(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Write([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: remote\n"))
	}))
	defer srv.Close()
	// A git that leaves a mark: kustomize runs git for remote bases.
	bin := t.TempDir()
	mark := filepath.Join(t.TempDir(), "git-ran")
	if err := os.WriteFile(filepath.Join(bin, "git"), []byte("#!/bin/sh\necho ran > "+mark+"\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)
	u := srv.URL + "/x.yaml"
	cases := []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"resources git", map[string]string{"kustomization.yaml": "resources:\n- github.com/org/repo//x?ref=main\n"}, `kustomization.yaml: resources[0] "github.com/org/repo//x?ref=main" is a remote git repository`},
		{"resources scp", map[string]string{"kustomization.yaml": "resources:\n- git@example.com:org/repo.git\n"}, `resources[0] "git@example.com:org/repo.git" is a remote git repository`},
		{"resources https repo", map[string]string{"kustomization.yaml": "resources:\n- https://github.com/org/repo\n"}, `is a remote git repository`},
		{"resources file url", map[string]string{"kustomization.yaml": "resources:\n- file:///etc/passwd\n"}, `is a remote git repository`},
		{"resources url", map[string]string{"kustomization.yaml": "resources:\n- " + u + "\n"}, `resources[0] "` + srv.URL},
		{"components", map[string]string{"kustomization.yaml": "components:\n- github.com/org/repo//c?ref=v1\n"}, `components[0] "github.com/org/repo//c?ref=v1" is a remote git repository`},
		{"bases", map[string]string{"kustomization.yaml": "bases:\n- ssh://git@example.com/org/repo.git\n"}, `bases[0] "ssh://git@example.com/org/repo.git" is a remote git repository`},
		{"crds", map[string]string{"kustomization.yaml": "crds:\n- " + u + "\n"}, `crds[0] "`},
		{"configurations", map[string]string{"kustomization.yaml": "configurations:\n- " + u + "\n"}, `configurations[0] "`},
		{"openapi", map[string]string{"kustomization.yaml": "openapi:\n  path: " + u + "\n"}, `openapi.path "`},
		{"patches", map[string]string{"kustomization.yaml": "patches:\n- path: " + u + "\n"}, `patches[0].path "`},
		{"patchesStrategicMerge", map[string]string{"kustomization.yaml": "patchesStrategicMerge:\n- " + u + "\n"}, `patchesStrategicMerge[0] "`},
		{"patchesJson6902", map[string]string{"kustomization.yaml": "patchesJson6902:\n- path: " + u + "\n  target: {kind: Job, name: llm}\n"}, `patchesJson6902[0].path "`},
		{"replacements", map[string]string{"kustomization.yaml": "replacements:\n- path: " + u + "\n"}, `replacements[0].path "`},
		{"configMapGenerator files", map[string]string{"kustomization.yaml": "configMapGenerator:\n- name: c\n  files:\n  - k=" + u + "\n"}, `configMapGenerator[0].files[0] "`},
		{"secretGenerator envs", map[string]string{"kustomization.yaml": "secretGenerator:\n- name: s\n  envs:\n  - " + u + "\n"}, `secretGenerator[0].envs[0] "`},
		{"generators url", map[string]string{"kustomization.yaml": "generators:\n- " + u + "\n"}, `generators[0] "`},
		{"generator config file", map[string]string{"kustomization.yaml": "generators:\n- gen.yaml\n", "gen.yaml": "apiVersion: builtin\nkind: ConfigMapGenerator\nmetadata:\n  name: g\nfiles:\n- " + u + "\n"}, `gen.yaml: ConfigMapGenerator.files "`},
		{"inline transformer", map[string]string{"kustomization.yaml": "transformers:\n- |\n  apiVersion: builtin\n  kind: PatchTransformer\n  metadata:\n    name: p\n  path: " + u + "\n"}, `kustomization.yaml: transformers[0]: PatchTransformer.path "`},
		{"validators", map[string]string{"kustomization.yaml": "validators:\n- github.com/org/repo//v?ref=main\n"}, `validators[0] "github.com/org/repo//v?ref=main" is a remote git repository`},
		{"nested kustomization", map[string]string{"kustomization.yaml": "resources:\n- sub\n", "sub/kustomization.yaml": "resources:\n- github.com/org/repo//x?ref=main\n"}, `sub/kustomization.yaml: resources[0] "github.com/org/repo//x?ref=main" is a remote git repository`},
		{"nested component", map[string]string{"kustomization.yaml": "components:\n- comp\n", "comp/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\npatches:\n- path: " + u + "\n"}, `comp/kustomization.yaml: patches[0].path "`},
		{"helmCharts", map[string]string{"kustomization.yaml": "helmCharts:\n- name: x\n  repo: " + srv.URL + "\n"}, `kustomization.yaml: helm charts are not supported by --post-render`},
		{"absolute path", map[string]string{"kustomization.yaml": "resources:\n- /etc/passwd\n"}, `resources[0] "/etc/passwd" is an absolute path`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			expectError(t, c.files, c.want)
			if _, err := os.Stat(mark); err == nil {
				os.Remove(mark)
				t.Error("git ran")
			}
			if n := hits.Swap(0); n > 0 {
				t.Errorf("%d HTTP request(s) made", n)
			}
		})
	}
	// Local files, directories and components inside the overlay still load.
	dir := t.TempDir()
	write(t, dir, "kustomization.yaml", "resources:\n- sub\ncomponents:\n- comp\nconfigMapGenerator:\n- name: c\n  files:\n  - k=data/a.txt\n")
	write(t, dir, "sub/kustomization.yaml", "resources:\n- cm.yaml\n")
	write(t, dir, "sub/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: local\n")
	write(t, dir, "comp/kustomization.yaml", "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\nlabels:\n- pairs: {c: x}\n")
	write(t, dir, "data/a.txt", "a")
	o, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := render(t, o.Apply); err != nil {
		t.Fatal(err)
	}
}
