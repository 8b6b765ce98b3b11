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
	fs := newFlagSet(env, "fn", "fn [--config workload.yaml [INPUT|-]...] [--format FORMAT]")
	config := fs.String("config", "", "read the LLMWorkload from FILE and run without kustomize; INPUTs are kept in the output")
	chartDir := fs.String("chart", "", "chart directory (default: the built-in chart)")
	var opts renderer.Options
	fs.StringVar(&opts.KubeVersion, "kube-version", renderer.DefaultKubeVersion, ".Capabilities.KubeVersion")
	fs.StringArrayVarP(&opts.APIVersions, "api-versions", "a", nil, "extra .Capabilities.APIVersions (repeatable)")
	var rf reportFlags
	rf.register(fs, "on stderr")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := rf.check(); err != nil {
		return err
	}
	if _, err := renderer.ParseKubeVersion(opts.KubeVersion); err != nil {
		return usagef("--kube-version: %v", err)
	}
	if *config == "" && fs.NArg() > 0 {
		return usagef("unexpected argument %q: inputs are read from standard input unless --config is given", fs.Arg(0))
	}
	chart, err := pipeline.LoadChart(*chartDir)
	if err != nil {
		return err
	}
	if *config != "" {
		return runFnStandalone(env, &rf, *config, fs.Args(), plugin.Env{Chart: chart, Dir: filepath.Dir(*config), Options: opts})
	}
	// One byte past the limit, so that plugin.Run answers an oversize
	// input with a ResourceList that says so, as the function spec asks.
	input, err := io.ReadAll(io.LimitReader(env.stdin, plugin.MaxInputSize+1))
	if err != nil {
		return fmt.Errorf("reading standard input: %v", safeio.Describe(err))
	}
	// Relative paths resolve against the config file's directory when the
	// client says where that is (kpt), else against the working directory
	// (kustomize runs functions in the kustomization's directory).
	out := plugin.Run(input, plugin.Env{Chart: chart, Dir: ".", Options: opts})
	if _, err := env.stdout.Write(out.Data); err != nil {
		return err
	}
	// kustomize shows only standard error, never the results.
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
			data, err = safeio.ReadFile(name, plugin.MaxInputSize)
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
