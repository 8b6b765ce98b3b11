//go:build !nopostrender

package postrender

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/url"
	"path"
	"strings"

	"go.yaml.in/yaml/v3"
	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/api/resource"
	"sigs.k8s.io/kustomize/api/types"

	"github.com/llmrender/llmrender/internal/redact"
)

// checkLoads makes sure that everything the overlay would load is a file
// inside it, before kustomize runs: kustomize fetches a resource, base or
// component that is a git URL (github.com/org/repo//x?ref=main,
// git@host:org/repo) by running git, and any file it loads that is an
// http(s) URL with an HTTP GET. Its root-only load restriction (which
// --post-render keeps on) covers only local paths.
//
// Every field of a kustomization that names something to load is checked
// (resources, components, bases, crds, configurations, generators,
// transformers, validators, patches, patchesStrategicMerge,
// patchesJson6902, replacements, openapi, and the files and env files of
// configMapGenerator and secretGenerator), in the kustomization and in
// every kustomization and generator or transformer configuration it names,
// and helm charts are refused (helm is off). Whether an entry is remote is
// decided as kustomize decides it: git URLs by kustomize's own parser
// (through resource.Origin), other URLs by the rule of its loader.
func (o *Overlay) checkLoads() error {
	c := &loadChecker{o: o, seen: map[string]bool{}}
	return c.kustomization(o.kfile)
}

type loadChecker struct {
	o    *Overlay
	seen map[string]bool // kustomization and config files already checked
}

// kustomization checks the kustomization file name (a path in the overlay).
func (c *loadChecker) kustomization(name string) error {
	if c.seen[name] {
		return nil
	}
	c.seen[name] = true
	// Read as kustomize reads it: a file it cannot read, it loads nothing
	// from, and it says why itself.
	var k types.Kustomization
	if err := k.Unmarshal(c.o.files[name]); err != nil {
		return nil
	}
	dir := path.Dir(name)
	if len(k.HelmCharts) > 0 || len(k.HelmChartInflationGenerator) > 0 || k.HelmGlobals != nil {
		return fmt.Errorf("%s: helm charts are not supported by --post-render (plugins and helm are off); render them with llmrender or helm and list the files as resources", name)
	}
	type entry struct {
		field  string
		value  string
		inline bool // may be a configuration written inline instead of a path
		root   bool // may be a directory with a kustomization of its own
	}
	var entries []entry
	one := func(field string, inline, root bool, value string) {
		if value != "" {
			entries = append(entries, entry{field, value, inline, root})
		}
	}
	list := func(field string, inline, root bool, values []string) {
		for i, v := range values {
			one(fmt.Sprintf("%s[%d]", field, i), inline, root, v)
		}
	}
	list("resources", false, true, k.Resources)
	list("components", false, true, k.Components)
	list("bases", false, true, k.Bases)
	list("crds", false, false, k.Crds)
	list("configurations", false, false, k.Configurations)
	list("generators", true, true, k.Generators)
	list("transformers", true, true, k.Transformers)
	list("validators", true, true, k.Validators)
	for i, p := range k.Patches {
		one(fmt.Sprintf("patches[%d].path", i), false, false, p.Path)
	}
	for i, p := range k.PatchesJson6902 {
		one(fmt.Sprintf("patchesJson6902[%d].path", i), false, false, p.Path)
	}
	for i, p := range k.PatchesStrategicMerge {
		one(fmt.Sprintf("patchesStrategicMerge[%d]", i), true, false, string(p))
	}
	for i, r := range k.Replacements {
		one(fmt.Sprintf("replacements[%d].path", i), false, false, r.Path)
	}
	one("openapi.path", false, false, k.OpenAPI["path"])
	kv := func(field string, kv types.KvPairSources) {
		for i, f := range kv.FileSources {
			if _, p, ok := strings.Cut(f, "="); ok {
				f = p // key=path
			}
			one(fmt.Sprintf("%s.files[%d]", field, i), false, false, f)
		}
		list(field+".envs", false, false, kv.EnvSources)
		one(field+".env", false, false, kv.EnvSource)
	}
	for i, g := range k.ConfigMapGenerator {
		kv(fmt.Sprintf("configMapGenerator[%d]", i), g.KvPairSources)
	}
	for i, g := range k.SecretGenerator {
		kv(fmt.Sprintf("secretGenerator[%d]", i), g.KvPairSources)
	}
	for _, e := range entries {
		if e.inline && isInline(e.value) {
			if err := c.configs(name, e.field, []byte(e.value)); err != nil {
				return err
			}
			continue
		}
		target, err := c.local(name, dir, e.field, e.value)
		if err != nil {
			return err
		}
		switch {
		case e.root && c.isDir(target):
			for _, kname := range konfig.RecognizedKustomizationFileNames() {
				if _, ok := c.o.files[path.Join(target, kname)]; ok {
					if err := c.kustomization(path.Join(target, kname)); err != nil {
						return err
					}
					break
				}
			}
		case e.inline && !c.seen[target]:
			c.seen[target] = true
			if data, ok := c.o.files[target]; ok {
				if err := c.configs(target, "", data); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// configs checks generator and transformer configurations (one YAML
// stream, from a file or written inline) for what they load, by kind: the
// built-in plugins take the same fields as a kustomization.
func (c *loadChecker) configs(file, field string, data []byte) error {
	where := file
	if field != "" {
		where += ": " + field
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var doc map[string]any
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return nil // not YAML: kustomize reports it
		}
		var paths []string
		var names []string
		str := func(v any) string { s, _ := v.(string); return s }
		list := func(v any) []string {
			var out []string
			l, _ := v.([]any)
			for _, e := range l {
				out = append(out, str(e))
			}
			return out
		}
		switch kind := str(doc["kind"]); kind {
		case "HelmChartInflationGenerator":
			return fmt.Errorf("%s: helm charts are not supported by --post-render (plugins and helm are off)", where)
		case "ConfigMapGenerator", "SecretGenerator":
			for _, f := range list(doc["files"]) {
				if _, p, ok := strings.Cut(f, "="); ok {
					f = p
				}
				paths, names = append(paths, f), append(names, kind+".files")
			}
			for _, f := range append(list(doc["envs"]), str(doc["env"])) {
				paths, names = append(paths, f), append(names, kind+".envs")
			}
		case "PatchTransformer", "PatchJson6902Transformer":
			paths, names = append(paths, str(doc["path"])), append(names, kind+".path")
		case "PatchStrategicMergeTransformer":
			for _, p := range list(doc["paths"]) {
				paths, names = append(paths, p), append(names, kind+".paths")
			}
		case "ReplacementTransformer":
			l, _ := doc["replacements"].([]any)
			for _, r := range l {
				m, _ := r.(map[string]any)
				paths, names = append(paths, str(m["path"])), append(names, kind+".replacements.path")
			}
		}
		for i, p := range paths {
			if p == "" {
				continue
			}
			if _, err := c.local(where, path.Dir(file), names[i], p); err != nil {
				return err
			}
		}
	}
}

// local checks one entry and returns it as a path in the overlay.
func (c *loadChecker) local(file, dir, field, value string) (string, error) {
	refuse := func(why string) (string, error) {
		return "", fmt.Errorf("%s: %s %q %s; --post-render loads only files inside %s (the rendered objects are the base)",
			file, field, redact.Label(value), why, c.o.dir)
	}
	if origin := (&resource.Origin{}).Append(value); origin.Repo != "" {
		return refuse("is a remote git repository")
	}
	// kustomize's loader fetches a file whose path parses as an http(s)
	// URL (IsRemoteFile in api/internal/loader/fileloader.go, v0.21.2).
	if u, err := url.ParseRequestURI(value); err == nil && u.Scheme != "" {
		return refuse("is a URL")
	}
	if path.IsAbs(value) || strings.HasPrefix(value, `\`) {
		return refuse("is an absolute path")
	}
	target := path.Join(dir, value)
	if target == ".." || strings.HasPrefix(target, "../") {
		return refuse("is outside the directory")
	}
	return target, nil
}

func (c *loadChecker) isDir(p string) bool {
	prefix := p + "/"
	if p == "." {
		prefix = ""
	}
	for name := range c.o.files {
		if strings.HasPrefix(name, prefix) {
			return true
		}
	}
	return false
}

// isInline tells whether a generators, transformers, validators or
// patchesStrategicMerge entry is a configuration written in place rather
// than a path, as kustomize tells: it parses as YAML objects.
func isInline(s string) bool {
	return strings.Contains(s, "\n") || strings.HasPrefix(strings.TrimSpace(s), "apiVersion:") || strings.HasPrefix(strings.TrimSpace(s), "kind:")
}
