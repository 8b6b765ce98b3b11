package main

import (
	"fmt"
	"runtime/debug"
)

// version, commit and date are stamped at build time:
//
//	-ldflags "-X main.version=v1.2.3 -X main.commit=SHA -X main.date=2026-11-29T00:00:00Z"
//
// make dist (hack/dist) and the Dockerfile set all three: the version from
// git tags (SemVer), the commit's hash, and the commit's time in RFC 3339,
// UTC (never the time of the build, so that two builds of a commit are
// byte-identical). A plain go build stamps nothing.
var (
	version = defaultVersion
	commit  = ""
	date    = ""
)

func runVersion(env *environment, args []string) error {
	fs := newFlagSet(env, "version", "version")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	info, _ := debug.ReadBuildInfo()
	fmt.Fprintln(env.stdout, versionLine(version, commit, date, info))
	return nil
}

// versionLine is what llmrender version prints: "llmrender VERSION", and
// "(commit SHA, built DATE)" after it when either was stamped, with
// "unknown" for the one that was not.
//
// A binary that go install built from the module proxy
// (go install github.com/llmrender/llmrender/cmd/llmrender@v1.2.3) has no
// stamps, but Go records the module's version in it: that version is
// printed instead of the default. A build in a checkout (whose build
// information names a VCS, or no version) keeps the default.
func versionLine(version, commit, date string, info *debug.BuildInfo) string {
	if version == defaultVersion && commit == "" && date == "" {
		if v := installedVersion(info); v != "" {
			version = v
		}
	}
	line := "llmrender " + version
	if commit == "" && date == "" {
		return line
	}
	if commit == "" {
		commit = "unknown"
	}
	if date == "" {
		date = "unknown"
	}
	return fmt.Sprintf("%s (commit %s, built %s)", line, commit, date)
}

// defaultVersion is version's value in a build that stamps none.
const defaultVersion = "0.1.0-dev"

// installedVersion is the main module's version when the binary was built
// from a module download (go install MODULE@VERSION), else "".
func installedVersion(info *debug.BuildInfo) string {
	if info == nil {
		return ""
	}
	v := info.Main.Version
	if v == "" || v == "(devel)" {
		return ""
	}
	for _, s := range info.Settings {
		if s.Key == "vcs" {
			return "" // built in a checkout: Go's pseudo version of the work tree
		}
	}
	return v
}
