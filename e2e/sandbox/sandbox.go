//go:build linux

// Package sandbox runs a container's command line as a kubelet starts it:
// as PID 1 of a PID and mount namespace of its own, in a root that overlays
// the host's (the host's shells and tools, read-only for the container: its
// writes land in a tmpfs that goes with the namespace), with the container's
// volumes bound at their mount paths and stand-ins where the image would
// hold the programs. It needs root and util-linux (mount, unshare).
package sandbox

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
)

// Bind is a host directory or file bound into the root.
type Bind struct{ Source, Target string }

// Link is a symbolic link made in the root (a stand-in at the path an
// image keeps a program at).
type Link struct{ Path, Target string }

// Spec is one container.
type Spec struct {
	Argv    []string
	Env     []string
	WorkDir string // "/" when empty
	// Dirs are made empty in the root.
	Dirs []string
	// Binds are bound in order: a directory before what is bound inside it.
	Binds []Bind
	Links []Link
	// Files is a directory whose content is copied onto the root (what an
	// image or the node leaves there), or "".
	Files string
	// User runs the command as another user than root (a
	// securityContext's runAsUser, runAsGroup and fsGroup), or nil.
	User *User
	// ReadOnlyRoot makes the root read-only (readOnlyRootFilesystem): only
	// the binds, /dev and /proc take writes.
	ReadOnlyRoot bool
	// NetNS is the network namespace (a /proc/PID/ns/net path) the
	// container joins, its pod's; "" keeps the host's.
	NetNS          string
	Stdin          io.Reader // nil for none
	Stdout, Stderr io.Writer
}

// User is who a container's processes run as.
type User struct {
	UID, GID uint32
	Groups   []uint32 // supplementary groups (fsGroup)
}

// setpriv is the command line that drops to the user.
func (u *User) setpriv() []string {
	if u == nil {
		return nil
	}
	groups := "--clear-groups"
	if len(u.Groups) > 0 {
		var ids []string
		for _, g := range u.Groups {
			ids = append(ids, strconv.FormatUint(uint64(g), 10))
		}
		groups = "--groups=" + strings.Join(ids, ",")
	}
	return []string{"/usr/bin/setpriv", fmt.Sprintf("--reuid=%d", u.UID), fmt.Sprintf("--regid=%d", u.GID), groups, "--"}
}

// setup runs as PID 1 of the new namespaces: it builds the root (the
// overlay, a /dev of its own with the links a container runtime makes
// (bash reads a process substitution from /dev/fd), a /proc of the
// namespace, the binds, links and files) and execs the container's command
// in it, which stays PID 1. Nothing it mounts or writes reaches the host:
// the mounts are private, and the overlay's upper layer is on a tmpfs
// mounted in this namespace only.
const setup = `set -euf
scratch=$1 dirs=$2 binds=$3 links=$4 files=$5 wd=$6 ro=$7 netns=$8
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
tab=$(printf '\t')
IFS='
'
for d in $dirs; do mkdir -p "$r$d"; done
for b in $binds; do
  src=${b%%"$tab"*} dst=${b#*"$tab"}
  if [ -d "$src" ]; then
    mkdir -p "$r$dst"
  else
    mkdir -p "$r${dst%/*}"
    touch "$r$dst"
  fi
  mount --bind "$src" "$r$dst"
done
mkdir -p "$r$wd"
for l in $links; do
  p=${l%%"$tab"*} t=${l#*"$tab"}
  mkdir -p "$r${p%/*}"
  ln -sf "$t" "$r$p"
done
if [ -n "$files" ]; then cp -a "$files/." "$r/"; fi
if [ "$ro" = 1 ]; then mount -o remount,bind,ro "$r"; fi
if [ -n "$netns" ]; then exec nsenter --net="$netns" -- unshare --root="$r" --wd="$wd" -- "$@"; fi
exec unshare --root="$r" --wd="$wd" -- "$@"
`

// Process is a running container.
type Process struct {
	cmd     *exec.Cmd
	scratch string
	done    chan struct{}
	status  int
	left    int
}

// Start starts a container.
func Start(s Spec) (*Process, error) {
	if len(s.Argv) == 0 {
		return nil, errors.New("sandbox: no command")
	}
	for _, field := range [][]string{s.Dirs, pairs(s.Binds), links(s.Links)} {
		for _, v := range field {
			if strings.Contains(v, "\n") {
				return nil, fmt.Errorf("sandbox: a path with a line break: %q", v)
			}
		}
	}
	scratch, err := os.MkdirTemp("", "sandbox")
	if err != nil {
		return nil, err
	}
	wd := s.WorkDir
	if wd == "" {
		wd = "/"
	}
	ro := "0"
	if s.ReadOnlyRoot {
		ro = "1"
	}
	args := []string{"-c", setup, "setup", scratch, strings.Join(s.Dirs, "\n"), strings.Join(pairs(s.Binds), "\n"), strings.Join(links(s.Links), "\n"), s.Files, wd, ro, s.NetNS}
	args = append(args, s.User.setpriv()...)
	cmd := exec.Command("/bin/sh", append(args, s.Argv...)...)
	cmd.Env = s.Env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = s.Stdin, s.Stdout, s.Stderr
	// A session of its own, as a container has: a "kill 0" in the
	// container reaches its own processes only.
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID | syscall.CLONE_NEWNS, Setsid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		os.Remove(scratch)
		return nil, fmt.Errorf("cannot start a PID namespace (is this root?): %w", err)
	}
	p := &Process{cmd: cmd, scratch: scratch, done: make(chan struct{})}
	go func() {
		p.status = statusOf(cmd.Wait())
		// Everything the container wrote went to the tmpfs mounted over
		// scratch in its own mount namespace, or to its binds.
		entries, _ := os.ReadDir(scratch)
		p.left = len(entries)
		os.RemoveAll(scratch)
		close(p.done)
	}()
	return p, nil
}

func pairs(binds []Bind) []string {
	var out []string
	for _, b := range binds {
		out = append(out, b.Source+"\t"+b.Target)
	}
	return out
}

func links(ls []Link) []string {
	var out []string
	for _, l := range ls {
		out = append(out, l.Path+"\t"+l.Target)
	}
	return out
}

// PID is PID 1's process ID on the host.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Signal sends a signal to PID 1, as the kubelet does.
func (p *Process) Signal(sig syscall.Signal) error { return p.cmd.Process.Signal(sig) }

// Kill ends the container at once (the kubelet's SIGKILL at the end of
// the grace period); the kernel then kills every process of the namespace.
func (p *Process) Kill() { p.cmd.Process.Kill() }

// Done is closed when PID 1 has ended.
func (p *Process) Done() <-chan struct{} { return p.done }

// Status is the container's exit status as a runtime reports it (its
// code, or 128 and the signal that ended it), once Done is closed.
func (p *Process) Status() int { return p.status }

// Leaked counts what the container left on the host outside its binds
// (nothing, unless the isolation failed), once Done is closed.
func (p *Process) Leaked() int { return p.left }

// Catches tells whether PID 1 has a handler for a signal (SigCgt). The
// kernel drops a signal for which the init of a PID namespace has none,
// so without one the container cannot react to it.
func (p *Process) Catches(sig syscall.Signal) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.PID()))
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

// Expand replaces $(VAR) as Kubernetes does in command, args and env
// values: with the variable's value when it is defined, else left as is;
// $$ is a $.
func Expand(s string, vals map[string]string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
			continue
		case '(':
			if end := strings.IndexByte(s[i:], ')'); end > 0 {
				if v, ok := vals[s[i+2:i+end]]; ok {
					b.WriteString(v)
					i += end
					continue
				}
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// FlagInt reads a numeric flag as --name=N or --name N; torchrun's
// MIN:MAX nodes reads as a number when the two are one.
func FlagInt(argv []string, names ...string) (int64, bool) {
	v, ok := Flag(argv, names...)
	if !ok {
		return 0, false
	}
	if lo, hi, ok := strings.Cut(v, ":"); ok && lo == hi {
		v = lo
	}
	x, err := strconv.ParseInt(v, 10, 64)
	return x, err == nil
}

// Flag reads a flag as --name=V or --name V.
func Flag(argv []string, names ...string) (string, bool) {
	for i, a := range argv {
		for _, n := range names {
			if v, ok := strings.CutPrefix(a, n+"="); ok {
				return v, true
			}
			if a == n && i+1 < len(argv) {
				return argv[i+1], true
			}
		}
	}
	return "", false
}
