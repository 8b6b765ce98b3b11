package main

import (
	"fmt"
	"io"
	"path/filepath"

	"github.com/llmrender/llmrender/internal/safeio"
	"github.com/llmrender/llmrender/pipeline"
	"github.com/llmrender/llmrender/plugin"
	"github.com/llmrender/llmrender/renderer"
)

// runFn is the KRM function: a ResourceList on stdin, one on stdout. With
// --config it runs standalone: the config from a file, objects from the
// named inputs, a plain YAML stream out.
func runFn(env *environment, args []string) error {
	fs := newFlagSet(env, "fn", "fn [--load-restrictor LoadRestrictionsNone] [--format FORMAT] | fn --config workload.yaml [INPUT|-]... [--format FORMAT]")
	config := fs.String("config", "", "read the LLMWorkload from FILE and run without kustomize; INPUTs are kept in the output")
	chartDir := fs.String("chart", "", "chart directory (default: the built-in chart)")
	var opts renderer.Options
	fs.StringVar(&opts.KubeVersion, "kube-version", renderer.DefaultKubeVersion, ".Capabilities.KubeVersion")
	fs.StringArrayVarP(&opts.APIVersions, "api-versions", "a", nil, "extra .Capabilities.APIVersions (repeatable)")
	loadRestrictor := fs.String("load-restrictor", loadRootOnly, "which files the function config may name: "+loadRootOnly+" (inside the kustomization's directory or the package) or "+loadNone+" (any), as kustomize's flag")
	var rf reportFlags
	rf.register(fs, "on stderr")
	if err := rf.parse(fs, args); err != nil {
		return err
	}
	if _, err := renderer.ParseKubeVersion(opts.KubeVersion); err != nil {
		return usagef("--kube-version: %v", err)
	}
	if *config == "" && fs.NArg() > 0 {
		return usagef("unexpected argument %q: inputs are read from standard input unless --config is given", fs.Arg(0))
	}
	penv := plugin.Env{Options: opts}
	switch *loadRestrictor {
	case loadRootOnly:
	case loadNone:
		penv.Load = plugin.Unrestricted
	default:
		return usagef("--load-restrictor: %q is not %s or %s", *loadRestrictor, loadRootOnly, loadNone)
	}
	if *config != "" {
		if fs.Changed("load-restrictor") {
			return usagef("--load-restrictor applies to a ResourceList on standard input: with --config, the config file is yours and names what it reads")
		}
		chart, err := pipeline.LoadChart(*chartDir)
		if err != nil {
			return err
		}
		penv.Chart, penv.Dir = chart, filepath.Dir(*config)
		return runFnStandalone(env, &rf, *config, fs.Args(), penv)
	}
	// From here on every failure is answered as the function answers
	// input that is no ResourceList: a complete ResourceList with no items
	// and the error as a result on standard output (kpt shows results),
	// the error on standard error and exit 1 (all kustomize shows).
	// Output is written only once it is whole.
	fail := func(err error) error {
		return writeFnOutput(env, &rf, plugin.Failed(err))
	}
	chart, err := pipeline.LoadChart(*chartDir)
	if err != nil {
		return fail(err)
	}
	// One byte past the limit, so that plugin.Run answers an oversize
	// input with a ResourceList that says so, as the function spec asks.
	input, err := io.ReadAll(io.LimitReader(env.stdin, plugin.MaxInputSize+1))
	if err != nil {
		return fail(fmt.Errorf("reading standard input: %v", safeio.Describe(err)))
	}
	// Relative paths resolve against the config file's directory when the
	// client says where that is (kpt), else against the working directory
	// (kustomize runs functions in the kustomization's directory).
	penv.Chart, penv.Dir = chart, "."
	return writeFnOutput(env, &rf, plugin.Run(input, penv))
}

// The values of --load-restrictor: kustomize's names.
const (
	loadRootOnly = "LoadRestrictionsRootOnly"
	loadNone     = "LoadRestrictionsNone"
)

// writeFnOutput writes the ResourceList on standard output in one piece
// and reports on standard error; kustomize shows only standard error,
// never the results.
func writeFnOutput(env *environment, rf *reportFlags, out plugin.Output) error {
	if _, err := env.stdout.Write(out.Data); err != nil {
		return err
	}
	rep := findingsReport(nil, out.Warnings, out.Waived)
	if out.Err != nil {
		return rf.emit(env.stderr, rep, fnError{out.Err})
	}
	return rf.emit(env.stderr, rep, nil)
}

func runFnStandalone(env *environment, rf *reportFlags, configFile string, inputs []string, penv plugin.Env) error {
	files := []string{configFile}
	cfg, err := plugin.ReadConfigFile(configFile, "", penv.Dir)
	if err != nil {
		return rf.emit(env.stderr, newReport(files, configFile), err)
	}
	var ins []plugin.Input
	for _, name := range inputs {
		var data []byte
		var err error
		if name == "-" {
			name = "<stdin>"
			data, err = safeio.ReadAll(env.stdin, name, plugin.MaxInputSize)
		} else {
			data, err = safeio.ReadNamed(name, plugin.MaxInputSize)
		}
		if err != nil {
			return rf.emit(env.stderr, newReport(files, configFile), fmt.Errorf("input %v", err))
		}
		ins = append(ins, plugin.Input{Name: name, Data: data})
	}
	data, res, err := plugin.Standalone(cfg, ins, penv)
	if err != nil {
		return rf.emit(env.stderr, newReport(files, configFile), fnError{err})
	}
	rep := newReport(files, configFile)
	rep.Add(res.Warnings, false)
	rep.Add(res.Waived, true)
	if err := rf.emit(env.stderr, rep, nil); err != nil {
		return err
	}
	_, err = env.stdout.Write(data)
	return err
}

// fnError marks an error from the function so it is printed with the
// function's name in front: inside a kustomize build the user otherwise
// cannot tell which generator failed.
type fnError struct{ err error }

func (e fnError) Error() string { return e.err.Error() }
func (e fnError) Unwrap() error { return e.err }
