package main

import (
	"bytes"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/llmrender/llmrender/modes"
	"github.com/llmrender/llmrender/pipeline"
	"github.com/llmrender/llmrender/report"
	"github.com/llmrender/llmrender/values"
)

// runCompletion prints a shell's completion script. The scripts ask
// `llmrender __complete WORDS...` for candidates, so commands, flags and
// catalog names are always those of the binary on PATH.
func runCompletion(env *environment, args []string) error {
	fs := newFlagSet(env, "completion", "completion bash|zsh|fish")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("expected one shell: bash, zsh or fish")
	}
	script, ok := completionScripts[fs.Arg(0)]
	if !ok {
		return usagef("no completion for shell %q (bash, zsh or fish)", fs.Arg(0))
	}
	_, err := fmt.Fprint(env.stdout, script)
	return err
}

// Directives __complete prints instead of candidates: the shell completes
// file or directory names itself.
const (
	completeFiles = ":files"
	completeDirs  = ":dirs"
)

// runComplete prints the candidates for the last word of a command line
// (the words after "llmrender", the last one being completed, maybe
// empty), one per line, or a directive. It never fails: a shell shows
// nothing rather than an error.
func runComplete(env *environment, args []string) error {
	for _, c := range complete(args) {
		fmt.Fprintln(env.stdout, c)
	}
	return nil
}

// Flags whose value is a file or a directory.
var (
	fileFlags = map[string]bool{"-f": true, "--values": true, "--against": true, "--report-file": true, "--config": true, "--index": true}
	dirFlags  = map[string]bool{"--chart": true, "--output-dir": true, "--post-render": true}
)

func complete(words []string) []string {
	if len(words) == 0 {
		words = []string{""}
	}
	cur := words[len(words)-1]
	if len(words) == 1 && !strings.HasPrefix(cur, "-") {
		var out []string
		for _, c := range commands() {
			out = append(out, c.name)
		}
		return out
	}
	name := "render"
	rest := words[:len(words)-1]
	if len(rest) > 0 && !strings.HasPrefix(rest[0], "-") {
		name, rest = rest[0], rest[1:]
	}
	flags := commandFlags(name)
	if len(rest) > 0 {
		prev := rest[len(rest)-1]
		if takesValue, known := flags[prev]; known && takesValue {
			return flagValues(name, prev, cur)
		}
	}
	if strings.HasPrefix(cur, "-") {
		var out []string
		for f := range flags {
			out = append(out, f)
		}
		sort.Strings(out)
		return out
	}
	switch name {
	case "help":
		out := []string{"rules"}
		for _, c := range commands() {
			out = append(out, c.name)
		}
		return out
	case "catalog":
		return []string{"models", "accelerators", "modes"}
	case "cmp":
		return []string{"discover", "generate"}
	case "completion":
		return []string{"bash", "zsh", "fish"}
	case "model":
		if len(positional(rest, flags)) == 0 {
			return []string{"import"}
		}
		return []string{completeFiles} // a config.json or its directory
	case "lint", "fn":
		return []string{completeFiles}
	}
	return nil
}

// positional are the words of a command line that are neither flags nor
// their values.
func positional(words []string, flags map[string]bool) []string {
	var out []string
	for i := 0; i < len(words); i++ {
		w := words[i]
		switch {
		case !strings.HasPrefix(w, "-"):
			out = append(out, w)
		case flags[w] && !strings.Contains(w, "="):
			i++ // its value
		}
	}
	return out
}

// flagUsageRE reads a flag from pflag's usage: "  -f, --values stringArray   ...".
var flagUsageRE = regexp.MustCompile(`^\s+(?:-(\w), )?--([\w-]+)( \w+)?\s`)

// commandFlags are a command's flags (both spellings), each with whether
// it takes a value, read from the command's own --help.
func commandFlags(name string) map[string]bool {
	var cmd *command
	for _, c := range commands() {
		if c.name == name {
			cmd = &c
		}
	}
	if cmd == nil || name == "help" {
		return map[string]bool{}
	}
	var out bytes.Buffer
	_ = cmd.run(&environment{stdout: &out, stderr: &bytes.Buffer{}, stdin: strings.NewReader("")}, []string{"--help"})
	flags := map[string]bool{}
	for _, line := range strings.Split(out.String(), "\n") {
		m := flagUsageRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		takes := m[3] != ""
		flags["--"+m[2]] = takes
		if m[1] != "" {
			flags["-"+m[1]] = takes
		}
	}
	return flags
}

// flagValues completes a flag's value.
func flagValues(cmd, flag, cur string) []string {
	switch {
	case fileFlags[flag]:
		return []string{completeFiles}
	case dirFlags[flag]:
		return []string{completeDirs}
	case flag == "--format":
		return report.Formats
	case flag == "--color":
		return []string{"auto", "always", "never"}
	case flag == "--kind":
		return []string{"values", "LLMWorkload"}
	case flag == "-o" || flag == "--output":
		switch cmd {
		case "plan":
			return []string{"text", "json", "markdown"}
		case "catalog":
			return []string{"table", "json", "yaml"}
		case "lint":
			return report.Formats
		}
	case flag == "--set" || flag == "--set-string":
		return setValues(cur)
	}
	return nil
}

// setKeys are the values whose names come from the catalog.
var setKeys = map[string]string{"model.name": "models", "accelerator.profile": "accelerators", "orchestration.mode": "modes"}

// setValues completes --set KEY=NAME with the built-in catalog's names.
func setValues(cur string) []string {
	key, _, hasValue := strings.Cut(cur, "=")
	if !hasValue {
		var out []string
		for k := range setKeys {
			out = append(out, k+"=")
		}
		sort.Strings(out)
		return out
	}
	section, ok := setKeys[key]
	if !ok {
		return nil
	}
	var names []string
	if section == "modes" {
		names = append(names, modes.Builtin().Names()...)
	} else if c, err := pipeline.LoadChart(""); err == nil {
		catalog, _ := c.Values["catalog"].(map[string]any)
		entries, _ := catalog[section].(map[string]any)
		names = values.SortedKeys(entries)
	}
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = key + "=" + n
	}
	return out
}

var completionScripts = map[string]string{
	"bash": `# bash completion for llmrender. Load it with
#   source <(llmrender completion bash)
# or save it as /etc/bash_completion.d/llmrender.
_llmrender() {
    local line=${COMP_LINE:0:COMP_POINT} cur=${COMP_WORDS[COMP_CWORD]}
    local -a words
    read -ra words <<< "$line"
    [[ $line == *[[:space:]] || ${#words[@]} -eq 0 ]] && words+=("")
    local full=${words[${#words[@]}-1]}
    local IFS=$'\n' out
    out=$(llmrender __complete "${words[@]:1}" 2>/dev/null) || return
    case $out in
    :files) COMPREPLY=($(compgen -f -- "$cur")); compopt -o filenames 2>/dev/null ;;
    :dirs) COMPREPLY=($(compgen -d -- "$cur")); compopt -o filenames 2>/dev/null ;;
    *)
        COMPREPLY=($(compgen -W "$out" -- "$full"))
        # bash splits words at = and :; replace only its current part.
        local prefix=${full%"$cur"}
        [[ -n $prefix && $prefix != "$full" ]] && COMPREPLY=("${COMPREPLY[@]#"$prefix"}")
        ;;
    esac
}
complete -o default -F _llmrender llmrender
`,
	"zsh": `#compdef llmrender
# zsh completion for llmrender. Load it with
#   source <(llmrender completion zsh)
# or save it as _llmrender in a directory of $fpath.
_llmrender() {
    local -a out
    out=("${(@f)$(llmrender __complete "${(@)words[2,CURRENT]}" 2>/dev/null)}")
    case $out[1] in
    :files) _files ;;
    :dirs) _files -/ ;;
    *) (( ${#out} )) && [[ -n $out[1] ]] && compadd -Q -- "${out[@]}" ;;
    esac
}
if [[ $funcstack[1] == _llmrender ]]; then
    _llmrender "$@"
else
    compdef _llmrender llmrender
fi
`,
	"fish": `# fish completion for llmrender. Load it with
#   llmrender completion fish | source
# or save it as ~/.config/fish/completions/llmrender.fish.
function __llmrender_complete
    set -l tokens (commandline -opc)
    set -l cur (commandline -ct)
    set -l out (llmrender __complete $tokens[2..-1] "$cur" 2>/dev/null)
    switch "$out[1]"
        case :files
            __fish_complete_path "$cur"
        case :dirs
            __fish_complete_directories "$cur"
        case '*'
            printf '%s\n' $out
    end
end
complete -c llmrender -f -a '(__llmrender_complete)'
`,
}
