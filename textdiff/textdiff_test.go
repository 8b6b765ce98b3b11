package textdiff

import (
	"fmt"
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

// bigPair is two objects of n lines with a change every `every` lines.
func bigPair(n, every int) (a, b []string) {
	for i := 0; i < n; i++ {
		a = append(a, fmt.Sprintf("  key%d: %d", i, i%7))
		if i%every == every/2 {
			b = append(b, fmt.Sprintf("  key%d: changed", i))
			continue
		}
		b = append(b, a[i])
	}
	return append([]string{"head: a"}, a...), append([]string{"head: b"}, b...)
}

// Past the LCS table's bound, a pair is diffed with Myers' algorithm, not
// replaced whole: exactly while the changes are few (go-udiff's lcs gives
// up beyond 50 edits), and always with a script that turns a into b and
// changes no more lines than a whole replacement.
func TestLargeObjects(t *testing.T) {
	for _, c := range []struct{ n, every, want int }{{5000, 250, 2 * 21}, {5000, 50, -1}, {20000, 1000, 2 * 21}} {
		a, b := bigPair(c.n, c.every)
		if len(a)*len(b) <= MaxCells {
			t.Fatal("the pair fits the table")
		}
		changed := checkScript(t, a, b)
		t.Logf("%d lines, a change every %d: %d changed lines (a whole replacement: %d)", c.n, c.every, changed, len(a)+len(b))
		if c.want > 0 && changed != c.want || changed > len(a)+len(b) {
			t.Errorf("%d lines, a change every %d: %d changed lines, want %d", c.n, c.every, changed, c.want)
		}
	}
}

// checkScript checks that Lines(a, b) turns a into b and returns how many
// lines it changes.
func checkScript(t *testing.T, a, b []string) int {
	t.Helper()
	ops := Lines(a, b)
	var gotA, gotB []string
	changed := 0
	for _, op := range ops {
		if op.Kind != '+' {
			gotA = append(gotA, op.Line)
		}
		if op.Kind != '-' {
			gotB = append(gotB, op.Line)
		}
		if op.Kind != ' ' {
			changed++
		}
	}
	if strings.Join(gotA, "\n") != strings.Join(a, "\n") || strings.Join(gotB, "\n") != strings.Join(b, "\n") {
		t.Fatal("the edit script does not turn a into b")
	}
	return changed
}

func BenchmarkLarge(b *testing.B) {
	for _, n := range []int{1000, 5000, 20000} {
		x, y := bigPair(n, 250)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				Lines(x, y)
			}
		})
	}
}
