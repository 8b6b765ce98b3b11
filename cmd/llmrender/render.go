package main

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/spf13/pflag"

	"github.com/llmrender/llmrender/manifest"
	"github.com/llmrender/llmrender/output"
	"github.com/llmrender/llmrender/pipeline"
	"github.com/llmrender/llmrender/postrender"
	"github.com/llmrender/llmrender/renderer"
	"github.com/llmrender/llmrender/values"
)

// DefaultReleaseName names the objects when --name is not given.
const DefaultReleaseName = "llm"

// valueFlags are the flags shared by every command that reads values.
type valueFlags struct {
	sources        values.Sources
	chartDir       string
	options        renderer.Options
	writeNamespace bool
	postRender     string // a kustomization directory, for the commands that offer --post-render
	now            string // --now, or SOURCE_DATE_EPOCH
	enforceRules   bool
}

func (v *valueFlags) register(fs *pflag.FlagSet) {
	fs.StringArrayVarP(&v.sources.Files, "values", "f", nil, "values file (repeatable, later wins; - reads stdin)")
	fs.StringArrayVar(&v.sources.Set, "set", nil, "set a value: a.b[0].c=1,d=x (repeatable)")
	fs.StringArrayVar(&v.sources.SetString, "set-string", nil, "set a value, always as a string (repeatable)")
	fs.StringArrayVar(&v.sources.SetJSON, "set-json", nil, "set a value from JSON: a={\"b\":1} (repeatable)")
	fs.StringArrayVar(&v.sources.SetFile, "set-file", nil, "set a value to a file's contents: key=path (repeatable)")
	fs.StringVar(&v.chartDir, "chart", "", "chart directory (default: the built-in chart)")
	fs.StringVar(&v.options.ReleaseName, "name", DefaultReleaseName, "release name, used to name the objects")
	fs.StringVarP(&v.options.Namespace, "namespace", "n", "default", ".Release.Namespace (objects name no namespace unless --write-namespace)")
	fs.BoolVar(&v.writeNamespace, "write-namespace", false, "write the namespace into every namespaced object's metadata.namespace")
	fs.StringVar(&v.options.KubeVersion, "kube-version", renderer.DefaultKubeVersion, ".Capabilities.KubeVersion")
	fs.StringArrayVarP(&v.options.APIVersions, "api-versions", "a", nil, "extra .Capabilities.APIVersions (repeatable)")
	fs.BoolVar(&v.options.Strict, "strict", false, "fail on a template's reference to a missing value")
	fs.BoolVar(&v.sources.HelmNumbers, "helm-numbers", false, "read numbers in values files as Helm does, as floats (1000000 prints as 1e+06)")
	fs.BoolVar(&v.enforceRules, "enforce-rules", false, "with --chart: the manifest rules' errors stop the render (default: printed as warnings)")
	fs.StringVar(&v.now, "now", "", "the time `now` returns and certificates start at: RFC 3339 or Unix seconds (default: $SOURCE_DATE_EPOCH, else 1970-01-01T00:00:00Z)")
	fs.BoolVar(&v.options.RefuseNondeterministic, "refuse-nondeterministic", false, "make now, rand*, uuidv4, gen* certificates and keys, bcrypt, htpasswd, encryptAES errors instead of seeded")
}

// registerPostRender adds --post-render, for the commands whose output an
// overlay should change.
func (v *valueFlags) registerPostRender(fs *pflag.FlagSet) {
	fs.StringVar(&v.postRender, "post-render", "", "run the kustomization in DIR over the rendered objects (in-process)")
}

// request checks the parsed flags and builds the render request: no
// positional arguments, a valid kube version and release name, the chart,
// and the overlay when --post-render is given.
func (v *valueFlags) request(env *environment, fs *pflag.FlagSet) (pipeline.Request, error) {
	if fs.NArg() > 0 {
		return pipeline.Request{}, usagef("unexpected argument %q (values files go after -f)", fs.Arg(0))
	}
	if err := v.check(); err != nil {
		return pipeline.Request{}, err
	}
	if v.chartDir != "" {
		v.sources.AllowEmpty = true // chart-testing's ci/ files may hold only comments
	}
	v.sources.Read = newNamedFiles().read
	c, err := pipeline.LoadChart(v.chartDir)
	if err != nil {
		return pipeline.Request{}, err
	}
	req := pipeline.Request{Chart: c, Sources: v.sources, Stdin: env.stdin, Options: v.options, WriteNamespace: v.writeNamespace, EnforceRules: v.enforceRules,
		NamespaceChosen: fs.Changed("namespace")}
	if v.postRender != "" {
		overlay, err := postrender.Load(v.postRender)
		if err != nil {
			return pipeline.Request{}, err
		}
		req.PostRender = overlay.Apply
	}
	return req, nil
}

func (v *valueFlags) check() error {
	now, from := v.now, "--now"
	if now == "" {
		now, from = os.Getenv("SOURCE_DATE_EPOCH"), "SOURCE_DATE_EPOCH"
	}
	if now != "" {
		t, err := parseNow(now)
		if err != nil {
			return usagef("%s: %v", from, err)
		}
		v.options.Now = t
	}
	if _, err := renderer.ParseKubeVersion(v.options.KubeVersion); err != nil {
		return usagef("--kube-version: %v", err)
	}
	if err := renderer.CheckReleaseName(v.options.ReleaseName); err != nil {
		return usagef("--name: %v", err)
	}
	if err := renderer.CheckNamespace(v.options.Namespace); err != nil {
		return usagef("--namespace: %v", err)
	}
	return nil
}

func runRender(env *environment, args []string) error {
	fs := newFlagSet(env, "render", "render [-f values.yaml]... [--set k=v]... [--each DIR] [--output-dir DIR] [--format FORMAT]")
	var vf valueFlags
	vf.register(fs)
	outDir := fs.String("output-dir", "", "write one file per object into DIR (replaced atomically) instead of stdout; with --each, DIR/<values file name>/ per set")
	vf.registerPostRender(fs)
	var each eachFlag
	each.register(fs)
	var rf reportFlags
	rf.register(fs, "on stderr")
	if err := rf.parse(fs, args); err != nil {
		return err
	}
	if each.dir != "" && *outDir == "" {
		return usagef("--each needs --output-dir: each values set is written to DIR/<its file name>/")
	}
	req, err := vf.request(env, fs)
	if err != nil {
		return err
	}
	if each.dir != "" {
		return renderEachTo(env, each, rf, req, vf.sources.Files, *outDir)
	}
	res, err := pipeline.Render(req)
	if err != nil {
		return rf.emit(env.stderr, findingsReport(vf.sources.Files, nil, nil), err)
	}
	if err := rf.emit(env.stderr, findingsReport(vf.sources.Files, res.Warnings, res.Waived), nil); err != nil {
		return err
	}
	reportNotices(env.stderr, res.Notices)
	if *outDir != "" {
		return output.WriteDir(*outDir, res.Objects)
	}
	// Encode everything before writing anything, so a failure never leaves
	// half a stream on stdout.
	var buf bytes.Buffer
	if err := manifest.WriteStream(&buf, res.Objects); err != nil {
		return err
	}
	_, err = env.stdout.Write(buf.Bytes())
	return err
}

func runValidate(env *environment, args []string) error {
	fs := newFlagSet(env, "validate", "validate [-f values.yaml]... [--set k=v]... [--each DIR] [--format FORMAT]")
	var vf valueFlags
	vf.register(fs)
	var each eachFlag
	each.register(fs)
	var rf reportFlags
	rf.register(fs, "text on stderr, the others on stdout,")
	if err := rf.parse(fs, args); err != nil {
		return err
	}
	req, err := vf.request(env, fs)
	if err != nil {
		return err
	}
	if each.dir != "" {
		return validateEach(env, each, rf, req, vf.sources.Files)
	}
	// The report replaces "ok" on standard output, except in text.
	dest := env.stdout
	if rf.format == "text" {
		dest = env.stderr
	}
	// Rendering is part of validation: the chart's own checks (required,
	// fail) and the manifest checks run there.
	res, err := pipeline.Render(req)
	if err != nil {
		return rf.emit(dest, findingsReport(vf.sources.Files, nil, nil), err)
	}
	if err := rf.emit(dest, findingsReport(vf.sources.Files, res.Warnings, res.Waived), nil); err != nil {
		return err
	}
	reportNotices(env.stderr, res.Notices)
	if rf.format != "text" && rf.file == "" {
		return nil
	}
	_, err = env.stdout.Write([]byte("ok\n"))
	return err
}

// parseNow reads a time as RFC 3339 or as Unix seconds (SOURCE_DATE_EPOCH's
// form).
func parseNow(s string) (time.Time, error) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return time.Unix(n, 0).UTC(), nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is neither RFC 3339 (2024-05-01T12:00:00Z) nor Unix seconds", s)
	}
	return t.UTC(), nil
}
