package sandbox

import (
	"path/filepath"
	"syscall"

	"github.com/llmrender/llmrender/internal/tree"
)

// StandInNames are the programs the chart's containers run that their
// images hold, found on PATH: a run puts stand-ins under these names.
var StandInNames = []string{
	"torchrun", "python", "python3", "vllm", "mpirun", "mpiexec", "neuron_parallel_compile",
	"huggingface-cli", "hf", "ray", "tensorboard", "sleep", "nslookup",
}

// ImagePrograms are programs of the images the chart runs by absolute
// path: the GPUDirect daemons' entrypoints, the MPI workers' SSH server,
// and the download script of images that bring their own.
var ImagePrograms = []string{
	"/tcpgpudmarxd/build/app/tcpgpudmarxd",
	"/fts/entrypoint_rxdm_container.sh",
	"/scripts/container_entry.sh",
	"/llama/download.sh",
	"/usr/sbin/sshd",
}

// ValuePrograms are the user's programs that rendered values name
// (workload.command, steps.preprocess.command, mpi.program): the image
// holds them, so a run puts stand-ins where they are. A shell is not one:
// the image's shell is the host's here, and runs its script for real (the
// programs the script starts are the stand-ins), as a container would.
func ValuePrograms(values map[string]any) []string {
	var out []string
	for _, path := range [][]string{{"workload", "command"}, {"steps", "preprocess", "command"}} {
		if l, ok := tree.Get(values, path...).([]any); ok && len(l) > 0 {
			if s, ok := l[0].(string); ok && !shells[filepath.Base(s)] {
				out = append(out, s)
			}
		}
	}
	if p, ok := tree.Get(values, "mpi", "program").(string); ok && p != "" {
		out = append(out, p)
	}
	return out
}

// shells are the shells an image's command may start, which run here as
// the host's.
var shells = map[string]bool{"sh": true, "bash": true, "dash": true, "ash": true, "zsh": true}

// SignalName is a signal's name as a shell's kill takes it (TERM, INT).
func SignalName(s syscall.Signal) string {
	switch s {
	case syscall.SIGTERM:
		return "TERM"
	case syscall.SIGINT:
		return "INT"
	case syscall.SIGHUP:
		return "HUP"
	case syscall.SIGQUIT:
		return "QUIT"
	case syscall.SIGUSR1:
		return "USR1"
	case syscall.SIGUSR2:
		return "USR2"
	}
	return s.String()
}
