//go:build e2e

package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The completion scripts in the shells themselves: bash calls the
// function as its completion machinery does (COMP_LINE, COMP_WORDS split
// at '=' as readline splits them); fish answers complete -C for a command
// line; zsh runs the function with compadd and _files recorded (the
// completion system itself needs a terminal).
func TestShellCompletions(t *testing.T) {
	binDir := t.TempDir()
	if err := os.Symlink(llmrenderBin, filepath.Join(binDir, "llmrender")); err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	writeFile(t, filepath.Join(work, "prod.values.yaml"), []byte("{}\n"))
	if err := os.Mkdir(filepath.Join(work, "overlay"), 0o755); err != nil {
		t.Fatal(err)
	}
	run := func(t *testing.T, shell string, args ...string) string {
		t.Helper()
		if _, err := exec.LookPath(shell); err != nil {
			t.Fatalf("%s is not installed: make e2e installs it (make host-tools)", shell)
		}
		cmd := exec.Command(shell, args...)
		cmd.Dir = work
		cmd.Env = append(os.Environ(), "PATH="+binDir+string(os.PathListSeparator)+os.Getenv("PATH"), "HOME="+t.TempDir())
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", shell, err, out)
		}
		return string(out)
	}
	type tc struct {
		line string
		want []string // every one must be offered
		not  []string // none may be
	}
	cases := []tc{
		{"llmrender va", []string{"validate"}, []string{"render"}},
		{"llmrender render --format s", []string{"sarif"}, []string{"json"}},
		{"llmrender lint -o j", []string{"json", "junit"}, nil},
		{"llmrender render --set model.name=llama-2-", []string{"llama-2-70b"}, []string{"tinyllama-1.1b"}},
		{"llmrender validate --st", []string{"--strict"}, nil},
		{"llmrender render -f pro", []string{"prod.values.yaml"}, nil},
		{"llmrender catalog m", []string{"models", "modes"}, []string{"accelerators"}},
	}
	check := func(t *testing.T, c tc, got string) {
		t.Helper()
		lines := strings.Fields(got)
		has := func(s string) bool {
			for _, l := range lines {
				if l == s || strings.HasSuffix(l, "="+s) || strings.HasPrefix(l, s+"\t") {
					return true
				}
			}
			return false
		}
		for _, w := range c.want {
			if !has(w) {
				t.Errorf("%q: %q not offered: %q", c.line, w, lines)
			}
		}
		for _, n := range c.not {
			if has(n) {
				t.Errorf("%q: %q offered: %q", c.line, n, lines)
			}
		}
	}
	t.Run("bash", func(t *testing.T) {
		for _, c := range cases {
			// readline's words: split at blanks and at COMP_WORDBREAKS' '='.
			words := strings.Fields(strings.ReplaceAll(c.line, "=", " = "))
			script := `source <(llmrender completion bash)
COMP_LINE="$1"; COMP_POINT=${#COMP_LINE}; shift; COMP_WORDS=("$@"); COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))
_llmrender; printf '%s\n' "${COMPREPLY[@]}"`
			check(t, c, run(t, "bash", append([]string{"--norc", "-c", script, "bash", c.line}, words...)...))
		}
	})
	t.Run("fish", func(t *testing.T) {
		for _, c := range cases {
			check(t, c, run(t, "fish", "--no-config", "-c", "llmrender completion fish | source; complete -C $argv[1]", c.line))
		}
	})
	t.Run("zsh", func(t *testing.T) {
		for _, c := range cases {
			script := `compdef() { :; }
compadd() { while [[ $1 == -* ]]; do [[ $1 == -- ]] && { shift; break }; shift; done; print -l -- "$@" }
_files() { print -l -- *(N) }
source <(llmrender completion zsh)
words=(${(z)1}); [[ $1 == *' ' ]] && words+=('')
CURRENT=${#words}
_llmrender | grep -- "^${words[CURRENT]}" || true`
			check(t, c, run(t, "zsh", "-f", "-c", script, "zsh", c.line))
		}
	})
}
