package main

import "fmt"

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

func runVersion(env *environment, args []string) error {
	fs := newFlagSet(env, "version", "version")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	fmt.Fprintf(env.stdout, "llmrender %s\n", version)
	return nil
}
