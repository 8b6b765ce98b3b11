//go:build e2e

package signals

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/llmrender/llmrender/e2e/sandbox"
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

// box holds what every run shares: the stand-in programs.
type box struct {
	bin string
}

// standInNames are the programs the chart's containers run, found on PATH.
// A shell is not one: "bash -c 'a && b'" or "bash /llama/download.sh",
// which the user or an image supplies, run the host's bash as the image's
// would, and the programs it starts are the stand-ins (a script an image
// holds is one that execs the stand-in, so that a shell can run it).
var standInNames = sandbox.StandInNames

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
	script := "#!/bin/sh\nexec " + inside + "/bin/stand-in \"$@\"\n"
	if err := os.WriteFile(filepath.Join(b.bin, "stand-in.sh"), []byte(script), 0o755); err != nil {
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
	scratch := t.TempDir()
	records := filepath.Join(scratch, "records")
	if err := os.Mkdir(records, 0o755); err != nil {
		t.Fatal(err)
	}
	progs := append(append([]string{}, sandbox.ImagePrograms...), u.programs...)
	// What the image, its init containers or the node leave in the
	// container's root; the fabric's plugin only in modeFabric.
	files := filepath.Join(scratch, "files")
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
	binds := []sandbox.Bind{{Source: b.bin, Target: inside + "/bin"}, {Source: records, Target: inside + "/records"}}
	if u.dataMount != "" {
		binds = append(binds, sandbox.Bind{Source: data, Target: u.dataMount})
	}
	var links []sandbox.Link
	for _, p := range progs {
		target := inside + "/bin/stand-in"
		if strings.HasSuffix(p, ".sh") {
			target += ".sh"
		}
		links = append(links, sandbox.Link{Path: p, Target: target})
	}
	var stdout, stderr bytes.Buffer
	proc, err := sandbox.Start(sandbox.Spec{Argv: u.argv, WorkDir: u.workDir, Dirs: u.dirs, Binds: binds, Links: links, Files: files,
		Env: append(append([]string{}, u.env...),
			envRecords+"="+inside+"/records", envMode+"="+mode, envAt+"="+strconv.Itoa(at), envStatus+"="+strconv.Itoa(standInStatus)),
		Stdout: &stdout, Stderr: &stderr})
	if err != nil {
		t.Fatal(err)
	}
	o := outcome{}
	done := false
	poll := func(until func() bool) {
		for deadline := time.Now().Add(limit); !done && time.Now().Before(deadline); {
			select {
			case <-proc.Done():
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
			o.caught = proc.Catches(sig)
			if o.caught {
				o.sent = proc.Signal(sig) == nil
				poll(nil)
			}
		}
	}
	if !done {
		proc.Kill()
		<-proc.Done()
	} else {
		o.exited = true
	}
	o.status = proc.Status()
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
	// Everything the container wrote went to the tmpfs mounted in its
	// own mount namespace, or to the claim and records.
	if left := proc.Leaked(); left > 0 {
		t.Errorf("%s: the run left %d entries on the host", u.where, left)
	}
	return o
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
