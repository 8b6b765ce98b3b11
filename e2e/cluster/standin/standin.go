// Package standin plays the programs an image holds (torchrun, mpirun,
// python, vllm, ray, huggingface-cli, sshd, ...) inside the simulated
// cluster's containers, under their names. The shell scripts around them
// run for real; a stand-in tells the cluster's runtime how it was started
// (its command line, environment and working directory) and does what the
// runtime answers: work for a moment and end, serve until a signal, or
// fail with the runtime's reason. Distributed programs hear back only when
// every rank has started, which is how the runtime checks that the ranks
// agree. Every signal it gets is reported before it ends.
package standin

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/llmrender/llmrender/e2e/cluster/engine"
	"github.com/llmrender/llmrender/e2e/sandbox"
)

// Socket is where the runtime listens, as a container sees it.
const Socket = "/.llmrender-test/sim/runtime.sock"

// EnvScript names the script a stand-in stands for (see ScriptStandIn).
const EnvScript = "LLMRENDER_STANDIN_SCRIPT"

// ScriptStandIn is a shell script that runs the stand-in program at path
// under its own name: it stands for the image's shell scripts, which
// commands may run with `bash script.sh` as well as directly.
func ScriptStandIn(path string) string {
	return "#!/bin/sh\n" + EnvScript + "=\"$0\" exec " + path + " \"$@\"\n"
}

// Hello is what a stand-in tells the runtime when it starts.
type Hello struct {
	Argv []string `json:"argv"`
	Env  []string `json:"env"`
	Dir  string   `json:"dir"`
	// Hostfile is the content of mpirun's hostfile.
	Hostfile string `json:"hostfile,omitempty"`
}

// Answer is what the runtime tells it to do.
type Answer struct {
	Act     string `json:"act"` // work, serve, exit
	Status  int    `json:"status,omitempty"`
	Message string `json:"message,omitempty"`
	// HTTP, for serve: the engine (vllm, sglang) whose HTTP API to serve,
	// as its command line configures it (package engine); "" for none.
	HTTP string `json:"http,omitempty"`
}

// Report is what a stand-in tells the runtime as it ends: the signal
// that ended it, or that it ended by itself.
type Report struct {
	Signal string `json:"signal,omitempty"`
	Done   bool   `json:"done,omitempty"`
}

// pause is the length of a `sleep N` between two looks at a marker: short,
// so that a wait sees a marker soon after it is written.
const pause = 200 * time.Millisecond

// work is how long a program that ends by itself runs.
const work = 300 * time.Millisecond

// Run is the stand-in's main; it returns the exit status.
func Run() int {
	// A script's stand-in (ScriptStandIn) names the script it stands for.
	if script := os.Getenv(EnvScript); script != "" {
		os.Unsetenv(EnvScript)
		os.Args[0] = script
	}
	name := filepath.Base(os.Args[0])
	args := os.Args[1:]
	// Handlers first: a signal that comes before the runtime answers must
	// still be seen. SIGINT stays ignored when the shell started the
	// program with it ignored, as Python leaves it.
	sigs := make(chan os.Signal, 1)
	watch := []os.Signal{syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT}
	if !signal.Ignored(syscall.SIGINT) {
		watch = append(watch, syscall.SIGINT)
	}
	signal.Notify(sigs, watch...)
	switch {
	case name == "sleep" && !(len(args) == 1 && args[0] == "infinity"):
		select {
		case <-time.After(pause):
			return 0
		case s := <-sigs:
			return 128 + int(s.(syscall.Signal))
		}
	case name == "neuron_parallel_compile" && len(args) > 0:
		// It runs the command it is given, compiling instead of training.
		return execve(args)
	case name == "ray" && len(args) > 0 && args[0] == "start":
		if err := CheckRayStart(args[1:]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	conn, err := net.Dial("unix", Socket)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s (stand-in): the runtime does not answer: %v\n", name, err)
		return 125
	}
	defer conn.Close()
	dir, _ := os.Getwd()
	hello := Hello{Argv: os.Args, Env: os.Environ(), Dir: dir, Hostfile: hostfile(name, args)}
	if err := json.NewEncoder(conn).Encode(hello); err != nil {
		return 125
	}
	answers := make(chan Answer, 1)
	go func() {
		var a Answer
		if err := json.NewDecoder(bufio.NewReader(conn)).Decode(&a); err != nil {
			a = Answer{Act: "exit", Status: 125, Message: "the runtime went away: " + err.Error()}
		}
		answers <- a
	}()
	stop := func(s os.Signal, status int) int {
		json.NewEncoder(conn).Encode(Report{Signal: sandbox.SignalName(s.(syscall.Signal))})
		return status
	}
	var a Answer
	select {
	case a = <-answers:
	case s := <-sigs:
		return stop(s, 128+int(s.(syscall.Signal)))
	}
	if a.Message != "" {
		fmt.Fprintf(os.Stderr, "%s: %s\n", name, a.Message)
	}
	done := func(status int) int {
		json.NewEncoder(conn).Encode(Report{Done: true})
		return status
	}
	switch a.Act {
	case "work":
		select {
		case <-time.After(work):
			return done(0)
		case s := <-sigs:
			return stop(s, 128+int(s.(syscall.Signal)))
		}
	case "serve":
		if a.HTTP != "" {
			return serveHTTP(a.HTTP, sigs, stop)
		}
		// A server drains and ends with 0 on TERM.
		return stop(<-sigs, 0)
	}
	return done(a.Status)
}

// serveHTTP answers the engine's HTTP API as the command line configures
// it, until a signal; a command line the engine would refuse, or an
// address it cannot listen on, ends it with 1, as the engine would end.
func serveHTTP(engineName string, sigs chan os.Signal, stop func(os.Signal, int) int) int {
	parse := engine.ParseVLLM
	if engineName == engine.SGLang {
		parse = engine.ParseSGLang
	}
	cfg, err := parse(os.Args, os.Environ())
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", engineName, err)
		return 1
	}
	ln, err := net.Listen("tcp", cfg.Addr())
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", engineName, err)
		return 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- engine.New(cfg).Serve(ctx, ln) }()
	select {
	case s := <-sigs:
		cancel()
		<-served
		return stop(s, 0) // it drains and ends with 0 on TERM
	case err := <-served:
		cancel()
		fmt.Fprintf(os.Stderr, "%s: %v\n", engineName, err)
		return 1
	}
}

// execve runs a command in place of the stand-in, found on PATH.
func execve(argv []string) int {
	path, err := exec.LookPath(argv[0])
	if err == nil {
		err = syscall.Exec(path, argv, os.Environ())
	}
	fmt.Fprintln(os.Stderr, err)
	return 127
}

// hostfile reads mpirun's hostfile: --hostfile, -hostfile or
// --machinefile, else the one Open MPI is configured with, as MPI
// Operator v2 configures it (OMPI_MCA_orte_default_hostfile).
func hostfile(name string, args []string) string {
	if name != "mpirun" && name != "mpiexec" {
		return ""
	}
	path := os.Getenv("OMPI_MCA_orte_default_hostfile")
	for i, a := range args {
		if (a == "--hostfile" || a == "-hostfile" || a == "--machinefile" || a == "-machinefile") && i+1 < len(args) {
			path = args[i+1]
		}
	}
	if path == "" {
		return ""
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "# unreadable: " + err.Error()
	}
	return string(data)
}

// CheckRayStart reads `ray start`'s flags as Ray does: --resources must be
// a JSON object of numbers (Ray parses it with json.loads and stops on
// anything else), --num-cpus, --num-gpus and --memory numbers.
func CheckRayStart(args []string) error {
	for i := 0; i < len(args); i++ {
		name, value, ok := strings.Cut(args[i], "=")
		if !ok && i+1 < len(args) && !strings.HasPrefix(args[i+1], "--") {
			value, ok = args[i+1], true
			i++
		}
		switch name {
		case "--resources":
			var res map[string]float64
			if err := json.Unmarshal([]byte(value), &res); err != nil {
				return fmt.Errorf("ray start: --resources=%s is not a valid JSON string (%v); Ray expects a format like --resources='{\"CustomResource1\": 3}'", value, err)
			}
		case "--num-cpus", "--num-gpus", "--memory", "--object-store-memory":
			var n float64
			if _, err := fmt.Sscan(value, &n); err != nil || !ok {
				return fmt.Errorf("ray start: %s=%s is not a number", name, value)
			}
		}
	}
	return nil
}
