package textdiff

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestUnifiedMatchesDiffU(t *testing.T) {
	cases := []struct{ a, b string }{
		{"a\nb\nc\n", "a\nB\nc\n"},
		{"1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n", "1\n2\nthree\n4\n5\n6\n7\n8\n9\n10\neleven\n12\n"},
		{"1\n2\n3\n4\n5\n6\n7\n8\n9\n", "0\n1\n2\n3\n5\n6\n7\n8\n9\n10\n"},
		{"", "new\n"},
		{"old\n", ""},
		{"x: 1\ny:\n  - a\n  - b\n", "x: 2\ny:\n  - a\n  - c\n  - b\n"},
	}
	diff, err := exec.LookPath("diff")
	if err != nil {
		t.Fatal("diff(1) is needed to check the output format")
	}
	for i, c := range cases {
		dir := t.TempDir()
		a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
		os.WriteFile(a, []byte(c.a), 0o644)
		os.WriteFile(b, []byte(c.b), 0o644)
		out, _ := exec.Command(diff, "-U3", "--label", "a", "--label", "b", a, b).Output()
		got := Unified("a", "b", c.a, c.b, 3, Colors{})
		if got != string(out) {
			t.Errorf("case %d:\ngot:\n%s\ndiff -U3:\n%s", i, got, out)
		}
	}
	if Unified("a", "b", "same\n", "same\n", 3, Colors{}) != "" {
		t.Error("equal texts printed a diff")
	}
}

func TestColors(t *testing.T) {
	got := Unified("a", "b", "x\n", "y\n", 3, ANSI)
	if !strings.Contains(got, "\x1b[31m-x\x1b[0m") || !strings.Contains(got, "\x1b[32m+y\x1b[0m") {
		t.Errorf("no colours: %q", got)
	}
}
