package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
)

// The files that make a directory an llmrender application for Argo CD.
const (
	cmpWorkloadFile = "llmworkload.yaml"      // an LLMWorkload (the KRM function config)
	cmpValuesFile   = "llmrender.values.yaml" // a values file
)

// runCMP is the Argo CD Config Management Plugin (plugin.yaml): the CMP
// server runs it in the application's directory with the ARGOCD_APP_*,
// KUBE_* and ARGOCD_ENV_* variables set. It reads files there and writes
// nothing: manifests to stdout, warnings and errors to stderr.
func runCMP(env *environment, args []string) error {
	fs := newFlagSet(env, "cmp", "cmp discover|generate   (run by Argo CD's CMP sidecar in the application directory)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("expected one of discover or generate")
	}
	switch fs.Arg(0) {
	case "discover":
		// Argo CD matches the plugin when the command prints anything.
		for _, f := range []string{cmpWorkloadFile, cmpValuesFile} {
			if isFile(f) {
				fmt.Fprintln(env.stdout, f)
				return nil
			}
		}
		return nil
	case "generate":
		return cmpGenerate(env)
	}
	return usagef("unknown cmp command %q (discover or generate)", fs.Arg(0))
}

// cmpGenerate renders the application. Its settings come from Argo CD:
//
//	ARGOCD_APP_NAME                 release name (ARGOCD_ENV_LLMRENDER_RELEASE overrides)
//	ARGOCD_APP_NAMESPACE            .Release.Namespace
//	KUBE_VERSION, KUBE_API_VERSIONS .Capabilities of the destination cluster
//	ARGOCD_ENV_LLMRENDER_VALUES     values files, comma-separated (default llmrender.values.yaml)
//	ARGOCD_ENV_LLMRENDER_SET        a --set expression (a=1,b=x)
//
// An llmworkload.yaml in the directory is rendered as the KRM function's
// standalone mode does, and names its own release.
func cmpGenerate(env *environment) error {
	var args []string
	if v := env.variable("KUBE_VERSION"); v != "" {
		args = append(args, "--kube-version", v)
	}
	for _, a := range strings.Split(env.variable("KUBE_API_VERSIONS"), ",") {
		if a = strings.TrimSpace(a); a != "" {
			args = append(args, "--api-versions", a)
		}
	}
	if isFile(cmpWorkloadFile) {
		return runFn(env, append([]string{"--config", cmpWorkloadFile}, args...))
	}
	name := env.variable("ARGOCD_ENV_LLMRENDER_RELEASE")
	from := "ARGOCD_ENV_LLMRENDER_RELEASE"
	if name == "" {
		name, from = env.variable("ARGOCD_APP_NAME"), "ARGOCD_APP_NAME"
	}
	if name != "" {
		args = append(args, "--name", name)
	}
	if ns := env.variable("ARGOCD_APP_NAMESPACE"); ns != "" {
		args = append(args, "--namespace", ns)
	}
	files := strings.Split(env.variable("ARGOCD_ENV_LLMRENDER_VALUES"), ",")
	if len(files) == 1 && strings.TrimSpace(files[0]) == "" {
		files = []string{cmpValuesFile}
	}
	for _, f := range files {
		if f = strings.TrimSpace(f); f != "" {
			args = append(args, "-f", f)
		}
	}
	if s := env.variable("ARGOCD_ENV_LLMRENDER_SET"); s != "" {
		args = append(args, "--set", s)
	}
	err := runRender(env, args)
	var ue *usageError
	if errors.As(err, &ue) {
		// A usage mistake here is a variable's value: say which.
		return fmt.Errorf("from the Argo CD application (%s, ARGOCD_APP_NAMESPACE, KUBE_VERSION, ARGOCD_ENV_LLMRENDER_*): %s", from, ue.msg)
	}
	return err
}

func isFile(name string) bool {
	info, err := os.Stat(name)
	return err == nil && info.Mode().IsRegular()
}
