//go:build e2e

package signals

import (
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/llmrender/llmrender/e2e/sandbox"
)

// The stand-ins are this test binary under the names of the programs the
// containers run (torchrun, vllm, mpirun, huggingface-cli, ...): TestMain
// becomes one when envRecords is set, which only the containers' own
// environment sets.
const (
	envRecords = "LLMRENDER_STANDIN"        // the records directory, as the container sees it
	envMode    = "LLMRENDER_STANDIN_MODE"   // modeComplete, modeSignal, modeSocket or modeFabric
	envAt      = "LLMRENDER_STANDIN_AT"     // the program (0, 1, ...) that waits; the ones before it end at once
	envStatus  = "LLMRENDER_STANDIN_STATUS" // what the waiting program exits with after a signal
)

const (
	// modeComplete: every program ends at once with 0, so the scripts run
	// to their end and leave their markers.
	modeComplete = "complete"
	// modeSignal: program envAt waits for a signal.
	modeSignal = "signal"
	// modeSocket: program envAt starts NCCL as NCCL does (it loads its
	// net plugin from LD_LIBRARY_PATH and says at INFO which network it
	// uses), with no plugin in the container: it falls back to sockets.
	// Then it waits for a signal.
	modeSocket = "socket"
	// modeFabric: the same, with the fabric's plugin where the node's
	// installer or the pod's init container puts it.
	modeFabric = "fabric"
)

// socketLine is what NCCL prints when it chooses its socket transport.
const socketLine = "llm-0:42:42 [0] NCCL INFO Using network Socket"

// pluginNet is the network of the stand-in plugin (the file's content).
const pluginNet = "Fabric"

// standInStatus is what a stand-in exits with after a signal: neither 0
// nor a status a shell makes up (1, 2, 126, 127, 128+n).
const standInStatus = 42

// record is what a stand-in writes when it starts (start.N, or poll.PID
// for a sleep between checks of a marker) and when a signal reaches it
// (signal.N).
type record struct {
	Argv []string `json:"argv"`
	PID  int      `json:"pid"`
	PPID int      `json:"ppid"`
	// IntIgnored: SIGINT was ignored when the program started, as sh
	// leaves it for a program it starts in the background. The stand-in
	// keeps it ignored, as Python does.
	IntIgnored bool   `json:"intIgnored"`
	Signal     string `json:"signal,omitempty"`
	// Net is the network NCCL chose (modeSocket, modeFabric).
	Net string `json:"net,omitempty"`
}

// actingOnSignal is how long a stand-in takes to act on a signal.
const actingOnSignal = 200 * time.Millisecond

// standIn is the program a stand-in runs; it returns its exit status.
func standIn() int {
	dir := os.Getenv(envRecords)
	name := filepath.Base(os.Args[0])
	args := os.Args[1:]
	// Handlers first: a signal passed on before the start record exists
	// must not kill the stand-in by default.
	intIgnored := signal.Ignored(syscall.SIGINT)
	sigs := []os.Signal{syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2}
	if !intIgnored {
		sigs = append(sigs, syscall.SIGINT)
	}
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, sigs...)
	rec := record{Argv: os.Args, PID: os.Getpid(), PPID: os.Getppid(), IntIgnored: intIgnored}

	// A sleep of a few seconds is the pause between two checks (of a
	// marker, or of a process group passed a signal), not a program: it is
	// recorded apart and never counted. It sleeps as sleep does, so that a
	// loop around it goes on.
	if name == "sleep" && len(args) == 1 && args[0] != "infinity" {
		writeRecord(dir, fmt.Sprintf("poll.%d", os.Getpid()), rec)
		var wake <-chan time.Time // nil, never ready: an argument it cannot read
		if secs, err := strconv.ParseFloat(strings.TrimSuffix(args[0], "s"), 64); err == nil {
			wake = time.After(time.Duration(secs * float64(time.Second)))
		}
		select {
		case s := <-ch:
			return 128 + int(s.(syscall.Signal))
		case <-wake:
			return 0
		}
	}
	n := claim(dir)
	at, _ := strconv.Atoi(os.Getenv(envAt))
	mode := os.Getenv(envMode)
	nccl := (mode == modeSocket || mode == modeFabric) && n == at
	if nccl {
		rec.Net = ncclNet()
	}
	writeRecord(dir, fmt.Sprintf("start.%d", n), rec)
	if mode == modeComplete || n < at {
		return 0
	}
	if debug := strings.ToUpper(os.Getenv("NCCL_DEBUG")); nccl && (debug == "INFO" || debug == "TRACE") {
		fmt.Println(strings.TrimSuffix(socketLine, "Socket") + rec.Net)
	}
	s := <-ch
	// A program takes a moment to act on a signal (a checkpoint, a
	// drain): a script that leaves PID 1 meanwhile has it killed first.
	time.Sleep(actingOnSignal)
	rec.Signal = sandbox.SignalName(s.(syscall.Signal))
	writeRecord(dir, fmt.Sprintf("signal.%d", n), rec)
	status, err := strconv.Atoi(os.Getenv(envStatus))
	if err != nil {
		status = standInStatus
	}
	return status
}

// ncclNet is the network NCCL uses: its net plugin's, when it finds the
// plugin library as NCCL opens it (dlopen, so on LD_LIBRARY_PATH): the
// library NCCL_NET_PLUGIN names (as given, or libnccl-net-NAME.so), or
// libnccl-net.so; otherwise its own socket transport (nccl
// src/plugin/plugin_open.cc).
func ncclNet() string {
	names := []string{"libnccl-net.so"}
	if p := os.Getenv("NCCL_NET_PLUGIN"); p != "" {
		names = []string{p, "libnccl-net-" + p + ".so"}
	}
	for _, name := range names {
		candidates := []string{name}
		if !strings.Contains(name, "/") {
			candidates = nil
			for _, d := range strings.Split(os.Getenv("LD_LIBRARY_PATH"), ":") {
				if d != "" {
					candidates = append(candidates, filepath.Join(d, name))
				}
			}
		}
		for _, c := range candidates {
			if data, err := os.ReadFile(c); err == nil {
				return strings.TrimSpace(string(data))
			}
		}
	}
	return "Socket"
}

// claim returns the number of this program in the order of starts.
func claim(dir string) int {
	for n := 0; ; n++ {
		f, err := os.OpenFile(filepath.Join(dir, fmt.Sprintf("claim.%d", n)), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err == nil {
			f.Close()
			return n
		}
		if !os.IsExist(err) {
			fmt.Fprintln(os.Stderr, "stand-in:", err)
			os.Exit(125)
		}
	}
}

// writeRecord writes a record whole or not at all: the test reads the
// directory while stand-ins write to it.
func writeRecord(dir, name string, rec record) {
	data, _ := json.Marshal(rec)
	tmp := filepath.Join(dir, "."+name)
	if err := os.WriteFile(tmp, data, 0o644); err == nil {
		err = os.Rename(tmp, filepath.Join(dir, name))
		if err == nil {
			return
		}
	}
	fmt.Fprintln(os.Stderr, "stand-in: cannot write", name)
	os.Exit(125)
}
