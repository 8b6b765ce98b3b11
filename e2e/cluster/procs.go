package cluster

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
)

// Every process the simulated cluster starts (its components, the
// programs the tests run, the network namespaces' holders) dies with the
// test binary, however it ends: a test that times out panics and exits
// without running TestMain's Stop, and the components it leaves behind
// would go on using the machine. Each is started with SIGKILL as its
// parent-death signal, from one OS thread that lives as long as the
// process (the signal follows the thread that started the child, not the
// process: a thread the Go runtime retires would take its children with
// it). Each also carries the owner's mark, so that a new run sweeps what
// an earlier one left (a test binary killed by SIGKILL before its children
// were set up, or a process that escaped its group).

// ownerEnv marks a process as started by a simulated cluster: the owner's
// PID and its start time, which tell an owner that still runs from one
// that is gone (PIDs are reused).
const ownerEnv = "LLMRENDER_SIM_OWNER"

var owner = processID(os.Getpid())

// processID is a PID with its start time (clock ticks since boot), or ""
// when the process is gone.
func processID(pid int) string {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	// The fields after the command name (which may hold spaces and
	// parentheses) start after its last ')'; starttime is field 22.
	rest := data[bytes.LastIndexByte(data, ')')+1:]
	fields := strings.Fields(string(rest))
	if len(fields) < 20 {
		return ""
	}
	return strconv.Itoa(pid) + "." + fields[19]
}

// starts are commands to start from the spawning thread.
var starts = make(chan startRequest)

type startRequest struct {
	cmd  *exec.Cmd
	done chan error
}

func init() {
	go func() {
		// This goroutine keeps its thread for the life of the process:
		// every child's parent-death signal is tied to it.
		runtime.LockOSThread()
		for r := range starts {
			r.done <- r.cmd.Start()
		}
	}()
}

// startOwned starts cmd in a process group of its own, marked as this
// test binary's, to be killed when the test binary ends.
func startOwned(cmd *exec.Cmd) error {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	cmd.Env = append(cmd.Env, ownerEnv+"="+owner)
	done := make(chan error, 1)
	starts <- startRequest{cmd, done}
	return <-done
}

// sweepLeftovers kills every process an earlier test binary started and
// left running (its owner's mark names a process that is gone), and says
// how many.
func sweepLeftovers() int {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	n := 0
	for _, d := range dirs {
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile(d + "/environ")
		if err != nil {
			continue
		}
		for _, kv := range bytes.Split(env, []byte{0}) {
			mark, ok := bytes.CutPrefix(kv, []byte(ownerEnv+"="))
			if !ok {
				continue
			}
			ownerPID, _, _ := strings.Cut(string(mark), ".")
			p, _ := strconv.Atoi(ownerPID)
			if p > 0 && processID(p) != string(mark) {
				syscall.Kill(pid, syscall.SIGKILL)
				n++
			}
			break
		}
	}
	return n
}
