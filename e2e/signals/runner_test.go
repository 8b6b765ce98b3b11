//go:build e2e

package signals

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

const (
	// limit bounds every wait for something a container does; polls end
	// as soon as it happens, so the limit only matters when it never does.
	limit = 30 * time.Second
	// tick is the interval between two looks.
	tick = 10 * time.Millisecond
	// inside is where the stand-ins and their records are in a container.
	inside = "/.llmrender-test"
)

// setup runs as PID 1 of the new PID and mount namespaces: it builds the
// container's root (an overlay over the host's root whose writes land in a
// tmpfs, a /dev of its own with the links a container runtime makes (bash
// reads a process substitution from /dev/fd), a /proc of the namespace,
// the claim bound at
// its mount path, the stand-ins) and execs the container's command in it,
// which stays PID 1. Nothing it mounts or writes reaches the host: the
// mounts are private, and the overlay's upper layer goes with the
// namespace.
const setup = `set -euf
scratch=$1 bin=$2 data=$3 mnt=$4 wd=$5 dirs=$6 progs=$7 files=$8
shift 8
mount --make-rprivate /
mount -t tmpfs tmpfs "$scratch"
mkdir "$scratch/upper" "$scratch/work" "$scratch/root"
r=$scratch/root
mount -t overlay overlay -o "lowerdir=/,upperdir=$scratch/upper,workdir=$scratch/work" "$r"
mount -t tmpfs -o mode=755 tmpfs "$r/dev"
for d in null zero full random urandom tty; do
  touch "$r/dev/$d"
  mount --bind "/dev/$d" "$r/dev/$d"
done
ln -s /proc/self/fd "$r/dev/fd"
ln -s /proc/self/fd/0 "$r/dev/stdin"
ln -s /proc/self/fd/1 "$r/dev/stdout"
ln -s /proc/self/fd/2 "$r/dev/stderr"
mount -t proc proc "$r/proc"
mkdir -p "$r` + inside + `/bin" "$r` + inside + `/records"
mount --bind "$bin" "$r` + inside + `/bin"
mount --bind "$scratch.records" "$r` + inside + `/records"
IFS='
'
for d in $dirs; do mkdir -p "$r$d"; done
if [ -n "$mnt" ]; then
  mkdir -p "$r$mnt"
  mount --bind "$data" "$r$mnt"
fi
mkdir -p "$r$wd"
for p in $progs; do
  mkdir -p "$r${p%/*}"
  ln -sf ` + inside + `/bin/stand-in "$r$p"
done
cp -a "$files/." "$r/"
exec unshare --root="$r" --wd="$wd" -- "$@"
`

// box holds what every run shares: the stand-in programs.
type box struct {
	bin string
}

// standInNames are the programs the chart's containers run, found on PATH.
// bash is one too, for commands such as "bash -c ..." or "bash
// /llama/download.sh" that the user or an image supplies; the containers'
// own shells are /bin/bash and sh, resolved to the host's.
var standInNames = []string{
	"torchrun", "python", "python3", "vllm", "mpirun", "neuron_parallel_compile",
	"huggingface-cli", "ray", "tensorboard", "sleep", "bash",
}

// imagePrograms are programs of the fabric's images that the chart runs by
// absolute path.
var imagePrograms = []string{
	"/tcpgpudmarxd/build/app/tcpgpudmarxd",
	"/fts/entrypoint_rxdm_container.sh",
	"/scripts/container_entry.sh",
	"/llama/download.sh",
}

func newBox(t *testing.T, extra []string) *box {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b := &box{bin: filepath.Join(t.TempDir(), "bin")}
	if err := os.Mkdir(b.bin, 0o755); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(b.bin, "stand-in"), data, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range append(append([]string{}, standInNames...), extra...) {
		if err := os.Symlink("stand-in", filepath.Join(b.bin, n)); err != nil && !os.IsExist(err) {
			t.Fatal(err)
		}
	}
	return b
}

// outcome is what one run of a container did.
type outcome struct {
	// started counts the programs that started; polls the sleeps between
	// checks of a marker.
	started, polls int
	// reached: program `at` started (or, with a poll first, the poll).
	reached bool
	// caught: when the test was about to send its signal, PID 1 had a
	// handler for it. The kernel drops a signal for which the init of a PID
	// namespace has none, so without one the container cannot react.
	caught bool
	sent   bool // the test sent its signal to PID 1
	exited bool
	status int
	// signals are the signals each program received, by number.
	signals        map[int]string
	records        map[string]record
	stdout, stderr string
}

// run runs a container as PID 1 of new PID and mount namespaces, with the
// claim's content in data (shared: a complete run writes markers there),
// and returns what it did. In modeSignal it sends sig to PID 1 once
// program `at` (or a poll before it) has started; in modeSocket it sends
// nothing: the guard must stop the program itself; in modeComplete every
// program ends at once and the run ends when PID 1 does, or at a poll.
func (b *box) run(t *testing.T, u *unit, data, mode string, at int, sig syscall.Signal) outcome {
	t.Helper()
	scratch := filepath.Join(t.TempDir(), "s")
	records := scratch + ".records"
	for _, d := range []string{scratch, records} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	progs := append(append([]string{}, imagePrograms...), u.programs...)
	// What the image, its init containers or the node leave in the
	// container's root; the fabric's plugin only in modeFabric.
	files := scratch + ".files"
	put := func(name, text string) {
		if err := os.MkdirAll(filepath.Join(files, filepath.Dir(name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(files, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(files, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, text := range u.files {
		put(name, text)
	}
	if mode == modeFabric {
		for _, name := range u.plugins {
			put(name, pluginNet)
		}
	}
	args := []string{"-c", setup, "setup", scratch, b.bin, data, u.dataMount, u.workDir, strings.Join(u.dirs, "\n"), strings.Join(progs, "\n"), files}
	cmd := exec.Command("/bin/sh", append(args, u.argv...)...)
	cmd.Env = append(append([]string{}, u.env...),
		envRecords+"="+inside+"/records", envMode+"="+mode, envAt+"="+strconv.Itoa(at), envStatus+"="+strconv.Itoa(standInStatus))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// A session of its own, as a container has: a "kill 0" in the container
	// reaches its own processes only.
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID | syscall.CLONE_NEWNS, Setsid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("cannot start a PID namespace (is this root?): %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	o := outcome{}
	var waitErr error
	done := false
	poll := func(until func() bool) {
		for deadline := time.Now().Add(limit); !done && time.Now().Before(deadline); {
			select {
			case waitErr = <-exited:
				done = true
				return
			case <-time.After(tick):
			}
			if until != nil && until() {
				return
			}
		}
	}
	started := func(name string) bool { _, err := os.Stat(filepath.Join(records, name)); return err == nil }
	polled := func() bool { m, _ := filepath.Glob(filepath.Join(records, "poll.*")); return len(m) > 0 }
	switch mode {
	case modeComplete:
		poll(polled)
	case modeSocket:
		poll(nil)
	case modeSignal, modeFabric:
		poll(func() bool { return started(fmt.Sprintf("start.%d", at)) || polled() })
		if !done {
			o.reached = true
			// A signal PID 1 has no handler for is dropped: nothing
			// will happen, and the run ends here.
			o.caught = catches(cmd.Process.Pid, sig)
			if o.caught {
				o.sent = cmd.Process.Signal(sig) == nil
				poll(nil)
			}
		}
	}
	if !done {
		cmd.Process.Kill()
		waitErr = <-exited
	} else {
		o.exited = true
	}
	o.status = statusOf(waitErr)
	o.stdout, o.stderr = stdout.String(), stderr.String()
	o.records, o.signals = readRecords(t, records)
	if mode == modeSocket {
		_, o.reached = o.records[fmt.Sprintf("start.%d", at)]
	}
	for name := range o.records {
		switch {
		case strings.HasPrefix(name, "start."):
			o.started++
		case strings.HasPrefix(name, "poll."):
			o.polls++
		}
	}
	// Everything the container wrote went to the tmpfs mounted over
	// scratch in its own mount namespace, or to the claim and records.
	if left, _ := os.ReadDir(scratch); len(left) > 0 {
		t.Errorf("%s: the run left %d entries on the host in %s", u.where, len(left), scratch)
	}
	return o
}

// catches tells whether a process has a handler for a signal (SigCgt).
func catches(pid int, sig syscall.Signal) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "SigCgt:"); ok {
			mask, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			return err == nil && mask&(1<<(uint(sig)-1)) != 0
		}
	}
	return false
}

// statusOf is a process's exit status as a container runtime reports it:
// its code, or 128 and the signal that ended it.
func statusOf(err error) int {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	return -1
}

func readRecords(t *testing.T, dir string) (map[string]record, map[int]string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	recs, sigs := map[string]record{}, map[int]string{}
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") || strings.HasPrefix(name, "claim.") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		var r record
		if err := json.Unmarshal(data, &r); err != nil {
			t.Fatalf("record %s: %v", name, err)
		}
		recs[name] = r
		if n, ok := strings.CutPrefix(name, "signal."); ok {
			i, _ := strconv.Atoi(n)
			sigs[i] = r.Signal
		}
	}
	return recs, sigs
}

// copyTree copies a directory of small files and links (a claim's
// markers, stand-ins the user's relative programs resolve to).
func copyTree(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.Walk(from, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		dst := filepath.Join(to, rel)
		switch {
		case info.IsDir():
			return os.MkdirAll(dst, 0o755)
		case info.Mode()&os.ModeSymlink != 0: // a stand-in in the claim
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(target, dst)
		}
		in, err := os.Open(p)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.Create(dst)
		if err != nil {
			return err
		}
		_, err = io.Copy(out, in)
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}
