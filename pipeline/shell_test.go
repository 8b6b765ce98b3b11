package pipeline

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/llmrender/llmrender/modes"
	"github.com/llmrender/llmrender/rules"
	"github.com/llmrender/llmrender/values"
)

// trickyArgs are workload.args a shell would split, expand or end early if
// a command line quoted them wrongly.
var trickyArgs = []string{"--run-name", "my run's \"best\"", "$HOME and `id` and $(id)", `back\slash`, "line\nbreak", "semi;colon & pipe|"}

// trickyPreprocess is a preprocessing command that is a shell script of its
// own, with quotes, an expansion and a command substitution.
var trickyPreprocess = []string{"bash", "-c", "echo \"it's $HOME\" > x; ls `pwd`"}

// trickyRevision is a model revision no Hugging Face repository has; it
// only has to reach huggingface-cli as one argument.
const trickyRevision = "v1 'rc' $REV"

// Every shell script the chart writes, in every mode, is valid bash with
// arguments full of quotes, dollars, backquotes, backslashes and newlines:
// bash -n parses each one (container commands run with -c, and RayJob
// entrypoints). Where the program gets its arguments as argv (after a
// script's "$@", or with no shell at all), they are exactly the user's,
// in order. Where a script writes the values into its own text (the
// MPIJob launcher's mpirun lines, the RayJob entrypoint, the JobSet
// precompilation, the download and preprocessing steps, the waits for
// markers), the script runs, with the shell the pod runs it with, against
// stub programs that record their argv: each program receives exactly
// the user's arguments, and markers under a mount path with a quote, a
// space and a dollar are found and written.
func TestShellScriptsQuoteArguments(t *testing.T) {
	bash, c, box := shellSetup(t)
	var set []string
	for i, a := range trickyArgs {
		// --set reads a backslash as an escape, as Helm does.
		set = append(set, fmt.Sprintf("workload.args[%d]=%s", i, strings.ReplaceAll(a, `\`, `\\`)))
	}
	for i, a := range trickyPreprocess {
		set = append(set, fmt.Sprintf("steps.preprocess.command[%d]=%s", i, a))
	}
	set = append(set, "storage.mountPath="+box.mount, "model.revision="+trickyRevision)
	checked, passedOn, ran, compared := 0, 0, 0, 0
	for _, m := range modes.Builtin() {
		if m.Launcher == modes.Server {
			continue // the server's flags are serving.args; workload.args is refused there
		}
		mode, nodes := m.Name, 1
		if m.Several() {
			nodes = 2
		}
		for _, profile := range []string{"h100-mega-80gb", "trn1-32xlarge"} {
			src := values.Sources{
				Set:       []string{fmt.Sprintf("orchestration.mode=%s,accelerator.profile=%s,accelerator.devices=0,workload.nodes=%d,workload.type=finetune,workload.script=train.py,model.name=llama-2-7b,storage.storageClassName=standard-rwx,storage.accessMode=ReadWriteMany,steps.preprocess.enabled=true,download.tokenSecret.name=hf", mode, profile, nodes)},
				SetString: set,
			}
			precompile := false
			if m.Holds("precompile") {
				precompile = profile == "trn1-32xlarge"
				src.Set = append(src.Set, fmt.Sprintf("steps.precompile.enabled=%v", precompile))
			}
			res, err := Render(Request{Chart: c, Sources: src})
			var failed *rules.Failed
			if errors.As(err, &failed) {
				t.Logf("%s/%s refused: %v", mode, profile, failed.Findings[0].Message)
				continue
			}
			if err != nil {
				t.Fatalf("%s/%s: %v", mode, profile, err)
			}
			objs := decoded(t, res)
			for _, o := range objs {
				var scripts []chartScript
				if o.Doc["kind"] == "RayJob" {
					if ep, ok := o.Doc["spec"].(map[string]any)["entrypoint"].(string); ok {
						// The dashboard's job API runs it with /bin/sh.
						scripts = append(scripts, chartScript{where: "RayJob entrypoint", shell: "sh", text: ep, entrypoint: true})
					}
				}
				walkContainers(o.Doc, func(ctr map[string]any) {
					cmd := stringsOf(ctr["command"])
					cmd = append(cmd, stringsOf(ctr["args"])...)
					shell := len(cmd) >= 3 && slices.Contains([]string{"sh", "bash", "/bin/sh", "/bin/bash"}, cmd[0]) && cmd[1] == "-c"
					if shell {
						scripts = append(scripts, chartScript{where: fmt.Sprintf("%v/%v", o.Doc["kind"], ctr["name"]), shell: filepath.Base(cmd[0]), text: cmd[2], container: fmt.Sprint(ctr["name"])})
					}
					// The program's own argv: after the script ("$@"), or the
					// command itself when no shell runs it.
					if i := slices.Index(cmd, trickyArgs[0]); i > 0 && (!shell || i > 2) {
						passedOn++
						if got := cmd[i:min(len(cmd), i+len(trickyArgs))]; !slices.Equal(got, trickyArgs) {
							t.Errorf("%s/%s: %v/%v passes %q, want %q", mode, profile, o.Doc["kind"], ctr["name"], got, trickyArgs)
						}
					}
				})
				for _, s := range scripts {
					checked++
					if out, err := exec.Command(bash, "-n", "-c", s.text).CombinedOutput(); err != nil {
						t.Errorf("%s/%s: %s: bash -n: %v: %s\n%s", mode, profile, s.where, err, out, s.text)
					}
					want, run := s.expect(box.mount, precompile)
					if !run {
						continue
					}
					ran++
					name := fmt.Sprintf("%s/%s: %s", mode, profile, s.where)
					calls, out, err := box.run(s.shell, s.text)
					if err != nil {
						t.Errorf("%s: %s -c failed: %v\n%s\n--- script:\n%s", name, s.shell, err, out, s.text)
						continue
					}
					if len(calls) != len(want) {
						t.Errorf("%s: calls %v, want %d calls of %v\n%s\n--- script:\n%s", name, calls, len(want), want, out, s.text)
						continue
					}
					for i, call := range calls {
						got, parsed := call.program(t, bash)
						compared++
						if call.name != want[i].name || call.compile != want[i].compile || !slices.Equal(got, want[i].argv) {
							t.Errorf("%s: call %d is %s (COMPILE=%s) with %q (parsed from %q), want %s (COMPILE=%s) with %q\n--- script:\n%s",
								name, i, call.name, call.compile, got, call.argv, want[i].name, want[i].compile, want[i].argv, s.text)
						}
						checked += parsed
					}
					for _, m := range markerRe.FindAllStringSubmatch(s.text, -1) {
						if _, err := os.Stat(unquoteWord(m[1])); err != nil {
							t.Errorf("%s: its marker was not written: %v", name, err)
						}
					}
				}
			}
		}
	}
	if checked < 40 || passedOn < 6 || ran < 40 || compared < 30 {
		t.Errorf("only %d scripts parsed, %d argument lists compared, %d scripts run and %d program calls compared: the test proves little", checked, passedOn, ran, compared)
	}
	t.Logf("%d scripts parsed by bash -n, %d argument lists compared; %d scripts run with stub programs, %d program calls compared", checked, passedOn, ran, compared)
}

// chartScript is a shell script of the rendered chart and the shell that
// runs it.
type chartScript struct {
	where, shell, text string
	container          string // "" for the RayJob entrypoint
	entrypoint         bool
}

// stubCall is one run of a stub program: its name, COMPILE in its
// environment ("-" when unset) and its arguments.
type stubCall struct {
	name, compile string
	argv          []string
}

// expect is what a script must call when it runs, and whether the test
// runs it: the scripts that write values into their own text. The others
// (fabric wrappers that run "$@", plugin installers, daemons) use fixed
// paths of the images and pass the arguments as argv, compared above.
func (s chartScript) expect(mount string, precompile bool) ([]stubCall, bool) {
	program := append([]string{"train.py"}, trickyArgs...)
	switch {
	case s.entrypoint:
		want := []stubCall{{"python3", "-", program}}
		if precompile {
			want = slices.Insert(want, 0, stubCall{"python3", "-", append(slices.Clone(program), "--neuron_parallel_compile")})
		}
		return want, true
	case s.container == "launcher":
		want := []stubCall{{"mpirun", "0", program}}
		if precompile {
			want = slices.Insert(want, 0, stubCall{"mpirun", "1", program})
		}
		return want, true
	case s.container == "precompile":
		return []stubCall{{"neuron_parallel_compile", "1", program}}, true
	case s.container == "download":
		return []stubCall{{"hf", "-", []string{"download", "meta-llama/Llama-2-7b-hf", "--revision", trickyRevision, "--local-dir", mount + "/models/llama-2-7b", "--exclude", "original/*"}}}, true
	case s.container == "preprocess":
		return []stubCall{{"bash", "-", trickyPreprocess[1:]}}, true
	case strings.HasPrefix(s.container, "wait-for-"):
		return nil, true
	}
	return nil, false
}

// program is the argv of the user's program in a call: after mpirun's own
// options and the fabric's bash wrapper (which it parses with bash -n:
// parsed counts it), after neuron_parallel_compile's torchrun and its
// options, or the call's own argv.
func (c stubCall) program(t *testing.T, bash string) (argv []string, parsed int) {
	argv = c.argv
	switch c.name {
	case "mpirun":
		for len(argv) > 0 && strings.HasPrefix(argv[0], "-") {
			n := 1
			if slices.Contains([]string{"-np", "-bind-to", "-map-by", "-x"}, argv[0]) {
				n = 2
			}
			argv = argv[min(n, len(argv)):]
		}
		if len(argv) >= 4 && argv[0] == "/bin/bash" && argv[1] == "-c" {
			if out, err := exec.Command(bash, "-n", "-c", argv[2]).CombinedOutput(); err != nil {
				t.Errorf("mpirun's rank command: bash -n: %v: %s\n%s", err, out, argv[2])
			}
			argv, parsed = argv[4:], 1
		}
	case "neuron_parallel_compile":
		if len(argv) > 0 && argv[0] == "torchrun" {
			argv = argv[1:]
			for len(argv) > 0 && strings.HasPrefix(argv[0], "--") {
				argv = argv[1:]
			}
		}
	}
	return argv, parsed
}

// markerRe finds the markers a script writes; waitRe those it waits for.
var (
	markerRe = regexp.MustCompile(`(?m)^marker=(.+)$`)
	waitRe   = regexp.MustCompile(`until \[ -f ('(?:[^']|'\\'')*'|[^ ]+) \]`)
)

// unquoteWord reads a word as llm.sh.quote writes it: plain, or in single
// quotes with '\” for a quote.
func unquoteWord(w string) string {
	if len(w) >= 2 && w[0] == '\'' && w[len(w)-1] == '\'' {
		return strings.ReplaceAll(w[1:len(w)-1], `'\''`, `'`)
	}
	return w
}

// shellSetup finds bash, loads the built-in chart and makes a stub box.
func shellSetup(t *testing.T) (bash string, c *Chart, box *stubBox) {
	t.Helper()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatal("bash is needed: it is what the containers run")
	}
	if c, err = BuiltinChart(); err != nil {
		t.Fatal(err)
	}
	return bash, c, newStubBox(t, bash)
}

// stubBox is where scripts run: a mount path (with a quote, a space and a
// dollar in its name), a home, a working directory, and stub programs
// first on PATH that append their name, COMPILE and argv to a log.
type stubBox struct {
	t                    *testing.T
	bin, log, home, work string
	mount                string
}

// stubbed are the programs the chart's scripts call.
var stubbed = []string{"mpirun", "torchrun", "python3", "python", "neuron_parallel_compile", "ray", "hf", "huggingface-cli", "bash"}

func newStubBox(t *testing.T, bash string) *stubBox {
	dir := t.TempDir()
	b := &stubBox{t: t, bin: filepath.Join(dir, "bin"), log: filepath.Join(dir, "calls"), home: filepath.Join(dir, "home"), work: filepath.Join(dir, "work"), mount: filepath.Join(dir, "it's my $data")}
	for _, d := range []string{b.bin, b.home, b.work} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	record := fmt.Sprintf(`{ printf '%%s\0' "${0##*/}" "${COMPILE--}" "$#"; [ "$#" -eq 0 ] || printf '%%s\0' "$@"; } >> %s`, shellWord(b.log))
	for _, name := range stubbed {
		if err := os.WriteFile(filepath.Join(b.bin, name), []byte("#!"+bash+"\n"+record+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// A script that waits for a marker that is not there ends at once.
	if err := os.WriteFile(filepath.Join(b.bin, "sleep"), []byte("#!"+bash+"\n"+record+"\nkill -KILL \"$PPID\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return b
}

// shellWord is a path as one single-quoted shell word.
func shellWord(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// run runs a script with shell -c after making the markers it waits for,
// in an empty mount path, and returns the stubs' calls and the output.
func (b *stubBox) run(shell, script string) ([]stubCall, []byte, error) {
	for _, p := range []string{b.mount, b.log} {
		if err := os.RemoveAll(p); err != nil {
			b.t.Fatal(err)
		}
	}
	for _, m := range waitRe.FindAllStringSubmatch(script, -1) {
		p := unquoteWord(m[1])
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			b.t.Fatal(err)
		}
	}
	path, err := exec.LookPath(shell)
	if err != nil {
		b.t.Fatalf("%s is needed: %v", shell, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "-c", script)
	cmd.Dir = b.work
	cmd.Env = []string{"PATH=" + b.bin + string(os.PathListSeparator) + os.Getenv("PATH"), "HOME=" + b.home}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return nil, out, err
	}
	data, err := os.ReadFile(b.log)
	if errors.Is(err, os.ErrNotExist) {
		return nil, out, nil
	}
	if err != nil {
		b.t.Fatal(err)
	}
	var calls []stubCall
	fields := bytes.Split(bytes.TrimSuffix(data, []byte{0}), []byte{0})
	for len(fields) >= 3 {
		n, err := strconv.Atoi(string(fields[2]))
		if err != nil || len(fields) < 3+n {
			return calls, out, fmt.Errorf("unreadable call log %q", data)
		}
		call := stubCall{name: string(fields[0]), compile: string(fields[1])}
		for _, f := range fields[3 : 3+n] {
			call.argv = append(call.argv, string(f))
		}
		calls = append(calls, call)
		fields = fields[3+n:]
	}
	return calls, out, nil
}

// stringsOf is a list of the YAML tree as strings.
func stringsOf(v any) []string {
	l, _ := v.([]any)
	var out []string
	for _, e := range l {
		out = append(out, fmt.Sprint(e))
	}
	return out
}

// The download runs Hugging Face's CLI as the image has it: hf
// (huggingface_hub 0.34 and later; 1.0 removed huggingface-cli), or
// huggingface-cli in an older image.
func TestDownloadRunsTheCLIAnImageHas(t *testing.T) {
	_, c, box := shellSetup(t)
	res, err := Render(Request{Chart: c, Sources: values.Sources{Set: []string{"storage.mountPath=" + box.mount}}})
	if err != nil {
		t.Fatal(err)
	}
	var script, shell string
	for _, o := range decoded(t, res) {
		walkContainers(o.Doc, func(ctr map[string]any) {
			if cmd := stringsOf(ctr["command"]); ctr["name"] == "download" && len(cmd) == 3 {
				shell, script = cmd[0], cmd[2]
			}
		})
	}
	if script == "" {
		t.Fatal("the default render has no download container run by a shell")
	}
	for i, want := range []string{"hf", "huggingface-cli"} {
		if i == 1 {
			// An image of huggingface_hub before 0.34 has no hf.
			if err := os.Remove(filepath.Join(box.bin, "hf")); err != nil {
				t.Fatal(err)
			}
		}
		calls, out, err := box.run(shell, script)
		if err != nil || len(calls) != 1 || calls[0].name != want || calls[0].argv[0] != "download" {
			t.Errorf("with %s on PATH: calls %v (%v)\n%s", want, calls, err, out)
		}
	}
}
