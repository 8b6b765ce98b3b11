// Package memlimit gives the Go runtime a soft memory limit below the hard
// limit the process runs under (its data or address-space rlimit, or its
// cgroup's memory.max), so that the garbage collector collects before the
// kernel refuses memory, whatever the GC percentage and however far the
// collector has fallen behind on a busy machine. Without it, a process at
// a high GOGC that holds a few hundred MB live can ask for several times
// that before its next cycle, and dies with "cannot allocate memory" on
// one machine and passes on another.
package memlimit

import (
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// Share is the part of the hard limit the runtime's soft limit takes: the
// rest is for what the runtime does not count against it (heap arena
// metadata, C and kernel mappings, pages the scavenger has not returned
// yet).
const Share = 0.7

// Set applies Share of the tightest hard limit as the runtime's soft
// memory limit and returns it, or returns 0 and changes nothing when
// GOMEMLIMIT is set (the user's choice wins) or no hard limit applies.
func Set(getenv func(string) string) int64 {
	if getenv("GOMEMLIMIT") != "" {
		return 0
	}
	hard := Hard()
	if hard <= 0 {
		return 0
	}
	soft := int64(float64(hard) * Share)
	debug.SetMemoryLimit(soft)
	return soft
}

// Hard is the tightest of the process's rlimits on memory (RLIMIT_DATA and
// RLIMIT_AS where the system has them) and the memory.max of its cgroup
// (v2), in bytes; 0 when none is set.
func Hard() int64 {
	limit := int64(0)
	tighter := func(n uint64) {
		if n == 0 || n >= math.MaxInt64 {
			return
		}
		if limit == 0 || int64(n) < limit {
			limit = int64(n)
		}
	}
	for _, n := range rlimits() {
		tighter(n)
	}
	if n, ok := cgroupMax(); ok {
		tighter(n)
	}
	return limit
}

// cgroupMax reads memory.max of the cgroup (v2) the process is in.
func cgroupMax() (uint64, bool) {
	self, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return 0, false
	}
	for line := range strings.SplitSeq(string(self), "\n") {
		path, ok := strings.CutPrefix(line, "0::")
		if !ok {
			continue
		}
		b, err := os.ReadFile("/sys/fs/cgroup" + strings.TrimSpace(path) + "/memory.max")
		if err != nil {
			return 0, false
		}
		n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64) // "max" fails: no limit
		return n, err == nil
	}
	return 0, false
}
