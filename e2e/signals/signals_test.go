//go:build e2e

// Package signals runs the chart's containers the way a kubelet does, as
// PID 1 of a PID namespace of their own, with stand-ins for the programs
// they start, and stops them the way a kubelet does: TERM to PID 1. A shell
// that is PID 1 ignores TERM unless it traps it, so a command line that
// keeps a shell above the program (a pipe through a log filter, lines left
// after the program) stops the trainer or server only with SIGKILL, after
// the grace period, without a checkpoint or a drain. Every long-running
// container must pass TERM (and INT, where the program can have it) on to
// its program and end with the program's status; a wait for a marker must
// end on TERM; the fabric guard must still stop the program and end with 3
// when NCCL falls back to sockets.
//
// The containers run in new PID and mount namespaces, over a copy-on-write
// view of the host's root, so they need root; 'make e2e' runs them.
package signals

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/llmrender/llmrender/internal/examples"
	"github.com/llmrender/llmrender/modes/matrix"
	"github.com/llmrender/llmrender/pipeline"
	"github.com/llmrender/llmrender/plan"
	"github.com/llmrender/llmrender/renderer"
	"github.com/llmrender/llmrender/rules"
	"github.com/llmrender/llmrender/values"

	"github.com/llmrender/llmrender/e2e/sandbox"
)

// chartDir is a chart to check instead of the built-in one, such as an
// earlier version of it, to compare: go test -tags e2e ./e2e/signals -args
// -chart DIR.
var chartDir = flag.String("chart", "", "check the chart in this directory instead of the built-in one")

func TestMain(m *testing.M) {
	if os.Getenv(envRecords) != "" {
		os.Exit(standIn())
	}
	os.Exit(m.Run())
}

// requireRoot fails, rather than skips, where the namespaces cannot be
// made: CI runs these tests as root.
func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatalf("these tests run containers as PID 1 of new PID and mount namespaces and need root (uid %d); run them as root, as 'make e2e' does in CI", os.Geteuid())
	}
	for _, tool := range []string{"mount", "unshare"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s (util-linux) is needed: %v", tool, err)
		}
	}
}

// workload is one render: an example, or a case of the matrix.
type workload struct {
	name  string
	units []*unit
	plan  *plan.Plan // what llmrender plan says of the render
}

// workloads renders every example and a slice of the matrix: every mode on
// an h100-80gb case (two nodes where the mode runs several) and on a
// trn1-32xlarge case (with precompilation where the mode runs it).
func workloads(t *testing.T) []workload {
	t.Helper()
	c, err := pipeline.LoadChart(*chartDir)
	if err != nil {
		t.Fatal(err)
	}
	var out []workload
	list, err := examples.List("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, ex := range list {
		res, err := pipeline.Render(pipeline.Request{Chart: c, Sources: values.Sources{Files: []string{ex.Path}}, Options: renderer.Options{ReleaseName: "llm"}})
		if err != nil {
			t.Fatalf("%s: %v", ex.Name, err)
		}
		out = append(out, workload{name: ex.Name, units: units(t, ex.Name, res), plan: planOf(t, res)})
	}
	for _, acc := range []string{"h100-80gb", "trn1-32xlarge"} {
		for _, mode := range matrix.Modes {
			cases := []matrix.Case{{Type: "finetune", Model: "llama-2-7b", Accelerator: acc, Mode: mode}}
			if mode == "serve" {
				cases = []matrix.Case{{Type: "inference", Model: "llama-3.1-8b-instruct", Accelerator: acc, Mode: mode, OwnNodes: 1}}
				if acc == "h100-80gb" {
					cases = append(cases, matrix.Case{Type: "inference", Model: "llama-3.1-70b-instruct", Accelerator: acc, Mode: mode, OwnNodes: 2})
				}
			}
			for _, mc := range cases {
				src := mc.Sources()
				if acc == "trn1-32xlarge" && (mode == "mpijob" || mode == "rayjob" || mode == "jobset") {
					src.Set = append(src.Set, "steps.precompile.enabled=true")
				}
				res, err := pipeline.Render(pipeline.Request{Chart: c, Sources: src, Options: renderer.Options{ReleaseName: "llm"}})
				var failed *rules.Failed
				if errors.As(err, &failed) {
					t.Errorf("%s is refused (%s): choose a case of this mode the chart renders", mc, failed.Findings[0].Message)
					continue
				}
				if err != nil {
					t.Fatalf("%s: %v", mc, err)
				}
				out = append(out, workload{name: mc.String(), units: units(t, mc.String(), res), plan: planOf(t, res)})
			}
		}
	}
	return out
}

func planOf(t *testing.T, res *pipeline.Result) *plan.Plan {
	p, err := plan.Build(res, "llm", "default")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// checkTopology: the launchers the container started (the stand-ins'
// records of a run where every program ends at once) start what the plan
// says: torchrun nnodes x nproc_per_node = the world size, when the
// command gives both (the operators fill in the rest); mpirun -np = the
// workers x slots; a server tensor x pipeline x data parallel = the
// devices of a server. It returns the launchers checked.
func checkTopology(o outcome, p *plan.Plan) ([]string, error) {
	var checked []string
	for name, r := range o.records {
		if !strings.HasPrefix(name, "start.") || len(r.Argv) == 0 {
			continue
		}
		argv := r.Argv[1:]
		switch filepath.Base(r.Argv[0]) {
		case "torchrun":
			nodes, okN := sandbox.FlagInt(argv, "--nnodes")
			procs, okP := sandbox.FlagInt(argv, "--nproc_per_node", "--nproc-per-node")
			if !okN || !okP {
				continue
			}
			checked = append(checked, "torchrun")
			if nodes*procs != p.Compute.WorldSize {
				return checked, fmt.Errorf("torchrun starts %d x %d = %d processes; plan says world size %d (%s)", nodes, procs, nodes*procs, p.Compute.WorldSize, p.Compute.Launch)
			}
		case "mpirun":
			np, ok := sandbox.FlagInt(argv, "-np", "-n")
			if !ok {
				continue
			}
			checked = append(checked, "mpirun")
			if want := p.Compute.Nodes * p.Compute.SlotsPerWorker; np != want {
				return checked, fmt.Errorf("mpirun -np %d; the plan's %d workers x %d slots are %d", np, p.Compute.Nodes, p.Compute.SlotsPerWorker, want)
			}
		case "vllm", "python3":
			if p.Serve == nil || p.Compute.Resource == "" || (filepath.Base(r.Argv[0]) == "python3" && !slices.Contains(argv, "sglang.launch_server")) {
				continue
			}
			tp, _ := sandbox.FlagInt(argv, "--tensor-parallel-size", "--tp-size")
			pp, _ := sandbox.FlagInt(argv, "--pipeline-parallel-size", "--pp-size")
			dp, ok := sandbox.FlagInt(argv, "--data-parallel-size")
			if !ok || filepath.Base(r.Argv[0]) == "python3" {
				dp = 1 // SGLang's --tp-size is every device
			}
			checked = append(checked, filepath.Base(r.Argv[0]))
			if devices := p.Compute.WorldSize; tp*pp*dp != devices {
				return checked, fmt.Errorf("the server runs tensor %d x pipeline %d x data %d parallel = %d ranks; the plan's server has %d (%s)", tp, pp, dp, tp*pp*dp, devices, p.Compute.Launch)
			}
		}
	}
	return checked, nil
}

// verdict is one check of a unit, and its failure.
type verdict struct {
	what string
	err  error
}

// checkSignal: program `at` received sig, which the test sent to PID 1,
// and the container ended with the program's status.
func checkSignal(o outcome, at int, sig string) error {
	switch {
	case !o.reached:
		return fmt.Errorf("PID 1 ended (status %d) before program %d started", o.status, at)
	case o.started <= at:
		return fmt.Errorf("waited for a marker instead of starting program %d", at)
	case !o.caught:
		return fmt.Errorf("PID 1 has no handler for %s: the kernel drops the kubelet's %[1]s and the program runs on until SIGKILL", sig)
	case !o.sent:
		return fmt.Errorf("%s could not be sent to PID 1", sig)
	case !o.exited:
		return fmt.Errorf("PID 1 did not end within %s of %s", limit, sig)
	case o.signals[at] != sig:
		return fmt.Errorf("the program got %q, not %s (PID 1 ended with %d)", o.signals[at], sig, o.status)
	case o.status == standInStatus:
	case o.records[fmt.Sprintf("start.%d", at)].PPID != 1 && o.status == 128+signalNumbers[sig]:
		// A shell of the user's own between (bash -c 'a && b') got the
		// signal with its program, and died of it: its status is the
		// container's.
	default:
		return fmt.Errorf("the container ended with %d, not the program's %d", o.status, standInStatus)
	}
	return nil
}

var signalNumbers = map[string]int{"TERM": int(syscall.SIGTERM), "INT": int(syscall.SIGINT)}

// checkWait: a container waiting for a marker ends on TERM, with a status
// that does not say the wait is over.
func checkWait(o outcome) error {
	switch {
	case !o.caught:
		return errors.New("waiting for a marker, PID 1 has no handler for TERM: the wait goes on until SIGKILL")
	case !o.exited:
		return fmt.Errorf("waiting for a marker, PID 1 did not end within %s of TERM", limit)
	case o.status == 0:
		return errors.New("waiting for a marker, PID 1 ended with 0 on TERM, as if the marker were there")
	}
	return nil
}

// checkGuard: when the program prints NCCL's socket line, the fabric guard
// prints it and its message, stops the program with TERM and ends with 3.
func checkGuard(o outcome, at int) error {
	switch {
	case !o.reached:
		return fmt.Errorf("PID 1 ended (status %d) before program %d started", o.status, at)
	case !o.exited:
		return fmt.Errorf("the guard did not stop the run within %s of NCCL's socket line", limit)
	case o.signals[at] != "TERM":
		return fmt.Errorf("on NCCL's socket line the program got %q, not TERM", o.signals[at])
	case o.status != 3:
		return fmt.Errorf("on NCCL's socket line the container ended with %d, not 3", o.status)
	case !strings.Contains(o.stdout, socketLine):
		return errors.New("the guard did not print the program's output")
	case !strings.Contains(o.stderr, "(fabric.guard)"):
		return errors.New("the guard did not say why it stopped the run")
	}
	return nil
}

// checkWorkload runs every container of a render. First every container
// once with programs that end at once, in the render's order and again
// until nothing more completes, so that each has the claim's content it
// would find (the markers of the steps before it) and the number of
// programs it starts. Then each long-running container from an empty
// claim, TERM at its first program or its wait for a marker; then, from
// the content it would find, TERM at each of its programs in turn (the
// ones before end at once), INT at its first, and the fabric guard on
// NCCL's socket line.
func checkWorkload(t *testing.T, b *box, w workload) map[*unit][]verdict {
	claim := t.TempDir()
	before := map[*unit]string{}
	programs := map[*unit]int{}
	ended := map[*unit]outcome{}
	for pass := 0; pass < 4; pass++ {
		progress := false
		for _, u := range w.units {
			if _, ok := before[u]; ok || u.skip != "" {
				continue
			}
			snap := t.TempDir()
			copyTree(t, claim, snap)
			o := b.run(t, u, claim, modeComplete, 0, 0)
			if o.exited && o.polls == 0 {
				before[u], programs[u], ended[u] = snap, o.started, o
				progress = true
			}
		}
		if !progress {
			break
		}
	}
	from := func(u *unit) string {
		d := t.TempDir()
		if s, ok := before[u]; ok {
			copyTree(t, s, d)
		}
		return d
	}
	out := map[*unit][]verdict{}
	for _, u := range w.units {
		if u.skip != "" || u.short != "" {
			continue
		}
		// Its programs succeeding, it runs to its end and succeeds: else
		// the checks below would not see the programs it never reaches.
		if e, ok := ended[u]; ok {
			var err error
			if e.status != 0 {
				err = withOutput(fmt.Errorf("with every program ending with 0, it ended with %d", e.status), e)
			}
			out[u] = append(out[u], verdict{"runs to its end", err})
			if launchers, err := checkTopology(e, w.plan); len(launchers) > 0 {
				out[u] = append(out[u], verdict{"starts the plan's topology (" + strings.Join(launchers, ", ") + ")", err})
			}
		}
		o := b.run(t, u, t.TempDir(), modeSignal, 0, syscall.SIGTERM)
		waits := o.polls > 0 && o.started == 0
		first := 1
		if waits {
			out[u] = append(out[u], verdict{"TERM while it waits for a marker", withOutput(checkWait(o), o)})
			first = 0
			if _, ok := before[u]; !ok {
				out[u] = append(out[u], verdict{"gets past its wait", errors.New("no container of the render writes the marker it waits for")})
			}
		} else {
			out[u] = append(out[u], verdict{"TERM at program 0", withOutput(checkSignal(o, 0, "TERM"), o)})
		}
		for k := first; k < programs[u]; k++ {
			o := b.run(t, u, from(u), modeSignal, k, syscall.SIGTERM)
			out[u] = append(out[u], verdict{fmt.Sprintf("TERM at program %d", k), withOutput(checkSignal(o, k, "TERM"), o)})
		}
		// INT too, where the program can have it: sh starts a background
		// program with INT ignored (POSIX), bash lets it have INT back.
		if programs[u] > 0 && u.argv[0] != "/bin/sh" {
			o := b.run(t, u, from(u), modeSignal, 0, syscall.SIGINT)
			out[u] = append(out[u], verdict{"INT at program 0", withOutput(checkSignal(o, 0, "INT"), o)})
		}
		if u.guard && programs[u] > 0 {
			last := programs[u] - 1
			o := b.run(t, u, from(u), modeSocket, last, 0)
			out[u] = append(out[u], verdict{"NCCL's socket line", withOutput(checkGuard(o, last), o)})
			// With the plugin where the node or the pod puts it, NCCL
			// loads it from the container's environment (after the
			// profile), and the guard lets the program run.
			if len(u.plugins) > 0 {
				o := b.run(t, u, from(u), modeFabric, last, syscall.SIGTERM)
				err := checkSignal(o, last, "TERM")
				if net := o.records[fmt.Sprintf("start.%d", last)].Net; net != pluginNet {
					err = fmt.Errorf("NCCL found no net plugin on LD_LIBRARY_PATH (it chose %q), though the plugin is where the fabric puts it (%s)", net, strings.Join(u.plugins, ", "))
				}
				out[u] = append(out[u], verdict{"NCCL loads the fabric's plugin", withOutput(err, o)})
			}
		}
	}
	return out
}

// withOutput adds what the container printed to a failure.
func withOutput(err error, o outcome) error {
	if err == nil {
		return nil
	}
	var progs []string
	for name, r := range o.records {
		if strings.HasPrefix(name, "start.") {
			progs = append(progs, fmt.Sprintf("%s=%s", name, filepath.Base(r.Argv[0])))
		}
	}
	sort.Strings(progs)
	return fmt.Errorf("%w\n    programs: %v; output: %s", err, progs, clip(o.stdout+o.stderr))
}

func clip(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 600 {
		s = s[:300] + " ... " + s[len(s)-300:]
	}
	return strings.ReplaceAll(s, "\n", "\n      ")
}

// Every long-running container of every example and of the matrix slice
// passes the kubelet's TERM on to its program and ends with its status.
func TestContainersPassTERMToTheirProgram(t *testing.T) {
	requireRoot(t)
	ws := workloads(t)
	var extra []string
	for _, w := range ws {
		for _, u := range w.units {
			extra = append(extra, u.onPath...)
		}
	}
	b := newBox(t, extra)
	results := make([]map[*unit][]verdict, len(ws))
	t.Run("workloads", func(t *testing.T) {
		for i, w := range ws {
			t.Run(w.name, func(t *testing.T) {
				t.Parallel()
				results[i] = checkWorkload(t, b, w)
			})
		}
	})

	total, passed, checks, checksPassed := 0, 0, 0, 0
	kinds := map[string]bool{}
	launchers := map[string]int{}
	skipped := map[string]bool{}
	ran := 0
	for i, w := range ws {
		if results[i] == nil {
			continue // not selected by -run
		}
		ran++
		for _, u := range w.units {
			switch {
			case u.skip != "":
				skipped[fmt.Sprintf("%s (%s)", u.kind, u.skip)] = true
				continue
			case u.short != "":
				skipped[fmt.Sprintf("%s (%s)", u.kind, u.short)] = true
				continue
			}
			total++
			kinds[u.kind] = true
			ok := len(results[i][u]) > 0
			if !ok {
				t.Errorf("%s: no check ran", u.where)
			}
			for _, v := range results[i][u] {
				checks++
				if l, ok := strings.CutPrefix(v.what, "starts the plan's topology ("); ok {
					for _, name := range strings.Split(strings.TrimSuffix(l, ")"), ", ") {
						launchers[name]++
					}
				}
				if v.err != nil {
					ok = false
					t.Errorf("%s: %s: %v\n    command: %s", u.where, v.what, v.err, clip(strings.Join(u.argv, " ")))
				} else {
					checksPassed++
				}
			}
			if ok {
				passed++
			}
		}
	}
	var names []string
	for k := range kinds {
		names = append(names, k)
	}
	sort.Strings(names)
	var skips []string
	for k := range skipped {
		skips = append(skips, k)
	}
	sort.Strings(skips)
	t.Logf("%d workloads; long-running containers that pass the kubelet's signals on: %d of %d (checks: %d of %d)", ran, passed, total, checksPassed, checks)
	t.Logf("kinds run: %s", strings.Join(names, ", "))
	t.Logf("not run: %s", strings.Join(skips, "; "))
	t.Logf("launchers checked against the plan's topology: %v", launchers)
	if ran < len(ws) {
		return // a selection of the workloads: the kinds are not all there
	}
	for _, l := range []string{"torchrun", "mpirun", "vllm"} {
		if launchers[l] == 0 {
			t.Errorf("no %s was checked against the plan's topology: the test no longer covers it", l)
		}
	}
	for _, k := range requiredKinds {
		if !kinds[k] {
			t.Errorf("no container of kind %s was run: the test no longer covers it", k)
		}
	}
}

// requiredKinds are the kinds of long-running containers the chart writes;
// the test fails when a render no longer yields one.
var requiredKinds = []string{
	"Job/main", "Job/download", "Job/preprocess", "Job/wait-for-*", "Pod/main",
	"PyTorchJob/pytorch", "PyTorchJob/fabric-test", "PyTorchJob/wait-for-*",
	"MPIJob/launcher", "MPIJob/wait-for-*",
	"RayJob/ray-head", "RayJob/ray-worker", "RayJob/entrypoint",
	"JobSet/main", "JobSet/precompile", "JobSet/download",
	"TrainingRuntime/node",
	"Deployment/server", "Deployment/download", "LeaderWorkerSet/server", "LeaderWorkerSet/wait-for-*",
	"MPIJob/fabric-test", "Job/tcpx-daemon", "PyTorchJob/tcpxo-daemon",
	"Deployment/tensorboard", "Pod/shell",
}

// The checks fail the shells this test is about and pass the ones that
// get it right: each control runs through the same namespaces, stand-ins
// and checks as the chart's containers.
func TestChecksTellShellsThatDropTERM(t *testing.T) {
	requireRoot(t)
	b := newBox(t, nil)
	control := func(argv ...string) *unit {
		return &unit{argv: argv, env: append([]string{}, operatorEnv...), workDir: "/", dataMount: "/data"}
	}
	cases := []struct {
		name string
		u    *unit
		wait bool // the check is checkWait
		pass bool
	}{
		{"a pipe through a log filter", control("/bin/bash", "-c", "set -o pipefail\n\"$@\" 2>&1 | while IFS= read -r line; do printf '%s\\n' \"$line\"; done", "fabric", "torchrun", "train.py"), false, false},
		{"lines after the program", control("/bin/sh", "-c", "set -eu\nhuggingface-cli download x\ntouch /data/done"), false, false},
		{"a trap that does not wait again", control("/bin/sh", "-c", "trap 'kill -TERM \"$pid\"' TERM\ntorchrun train.py &\npid=$!\nwait \"$pid\""), false, false},
		{"a sleep loop without a trap", control("/bin/sh", "-c", "until [ -f /data/done ]; do sleep 10; done"), true, false},
		{"exec", control("/bin/sh", "-c", "set -eu\nexec torchrun train.py"), false, true},
		{"the program itself", control("sleep", "infinity"), false, true},
		// Waits again while the wait was cut short by the trap, as llm_run
		// does; "while kill -0" would not do: the shell may reap the
		// program while it runs the trap, and then lose its status.
		{"a trap that passes TERM on and waits again", control("/bin/sh", "-c", "trap 'woke=1; kill -TERM \"$pid\"' TERM\ntorchrun train.py &\npid=$!\nwhile :; do woke=; wait \"$pid\" && s=0 || s=$?; [ -n \"$woke\" ] && [ \"$s\" -gt 128 ] || break; done\nexit \"$s\""), false, true},
		{"a sleep loop with a trap", control("/bin/sh", "-c", "trap 'exit 143' TERM\nuntil [ -f /data/done ]; do sleep 10 & wait $!; done"), true, true},
	}
	// The chart's own llm_run around a shell that runs a compound command
	// (a preprocess step's bash -c 'a && b'): TERM goes to the whole
	// process group, so the program the shell waits for gets it; passed to
	// the shell alone (as llm_run once did), the shell dies and its
	// program is killed later, without it.
	step := preprocessStep(t, "sleep infinity && touch /data/after")
	cases = append(cases, struct {
		name string
		u    *unit
		wait bool
		pass bool
	}{"llm_run of bash -c 'a && b'", step, false, true})
	shellOnly := *step
	shellOnly.argv = append([]string{}, step.argv...)
	shellOnly.argv[len(shellOnly.argv)-1] = strings.Replace(step.argv[len(step.argv)-1], `kill "-$1" "-$llm_pid"`, `kill "-$1" "$llm_pid"`, 1)
	if shellOnly.argv[len(shellOnly.argv)-1] == step.argv[len(step.argv)-1] {
		t.Fatal("the chart's llm_run no longer signals the program's process group as this control expects")
	}
	cases = append(cases, struct {
		name string
		u    *unit
		wait bool
		pass bool
	}{"llm_run that signals the shell alone", &shellOnly, false, false})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := b.run(t, c.u, t.TempDir(), modeSignal, 0, syscall.SIGTERM)
			var err error
			if c.wait {
				if o.polls == 0 {
					t.Fatalf("the control did not wait for its marker: %+v", o)
				}
				err = checkWait(o)
			} else {
				err = checkSignal(o, 0, "TERM")
			}
			switch {
			case c.pass && err != nil:
				t.Errorf("a shell that passes TERM on fails the check: %v", withOutput(err, o))
			case !c.pass && err == nil:
				t.Errorf("a shell that drops TERM passes the check")
			case err != nil:
				t.Logf("fails as it should: %v", err)
			default:
				t.Logf("passes")
			}
		})
	}
}

// preprocessStep is the preprocess step's container of a render whose
// step command is bash -c with a compound command line.
func preprocessStep(t *testing.T, line string) *unit {
	t.Helper()
	c, err := pipeline.LoadChart(*chartDir)
	if err != nil {
		t.Fatal(err)
	}
	res, err := pipeline.Render(pipeline.Request{Chart: c, Options: renderer.Options{ReleaseName: "llm"}, Sources: values.Sources{
		Set:       []string{"steps.preprocess.enabled=true", "steps.preprocess.command[0]=bash", "steps.preprocess.command[1]=-c"},
		SetString: []string{"steps.preprocess.command[2]=" + line}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range units(t, "preprocess", res) {
		if strings.HasSuffix(u.kind, "/preprocess") {
			return u
		}
	}
	t.Fatal("no preprocess container in the render")
	return nil
}
