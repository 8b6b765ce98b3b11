package main

import (
	"runtime/debug"
	"testing"
)

func TestVersionLine(t *testing.T) {
	installed := &debug.BuildInfo{Main: debug.Module{Path: "github.com/llmrender/llmrender", Version: "v1.2.3"}}
	checkout := &debug.BuildInfo{Main: debug.Module{Path: "github.com/llmrender/llmrender", Version: "v0.0.0-20261129000000-0123456789ab+dirty"},
		Settings: []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "0123456789ab"}}}
	devel := &debug.BuildInfo{Main: debug.Module{Path: "github.com/llmrender/llmrender", Version: "(devel)"}}
	cases := []struct {
		name                  string
		version, commit, date string
		info                  *debug.BuildInfo
		want                  string
	}{
		{"unstamped", defaultVersion, "", "", nil, "llmrender 0.1.0-dev"},
		{"unstamped devel", defaultVersion, "", "", devel, "llmrender 0.1.0-dev"},
		{"unstamped checkout", defaultVersion, "", "", checkout, "llmrender 0.1.0-dev"},
		{"go install", defaultVersion, "", "", installed, "llmrender v1.2.3"},
		{"version only", "v0.2.0", "", "", installed, "llmrender v0.2.0"},
		{"stamped", "v0.2.0", "abc1234", "2026-11-29T00:00:00Z", installed, "llmrender v0.2.0 (commit abc1234, built 2026-11-29T00:00:00Z)"},
		{"no date", "v0.2.0", "abc1234", "", nil, "llmrender v0.2.0 (commit abc1234, built unknown)"},
		{"no commit", "v0.2.0", "", "2026-11-29T00:00:00Z", nil, "llmrender v0.2.0 (commit unknown, built 2026-11-29T00:00:00Z)"},
	}
	for _, c := range cases {
		if got := versionLine(c.version, c.commit, c.date, c.info); got != c.want {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
}
