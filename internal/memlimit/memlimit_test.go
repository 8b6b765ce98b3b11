//go:build unix

package memlimit

import (
	"math"
	"runtime/debug"
	"syscall"
	"testing"
)

func TestSetFollowsTheDataLimit(t *testing.T) {
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_DATA, &old); err != nil {
		t.Fatal(err)
	}
	const limit = 48 << 30 // far above what the test uses
	if old.Max < limit {
		t.Fatalf("the hard RLIMIT_DATA (%d) is below %d", old.Max, uint64(limit))
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_DATA, &syscall.Rlimit{Cur: limit, Max: old.Max}); err != nil {
		t.Fatal(err)
	}
	defer syscall.Setrlimit(syscall.RLIMIT_DATA, &old)
	defer debug.SetMemoryLimit(math.MaxInt64)

	hard := Hard()
	if hard <= 0 || hard > limit {
		t.Fatalf("Hard() = %d with RLIMIT_DATA at %d", hard, int64(limit))
	}
	if got := Set(func(string) string { return "" }); got != int64(float64(hard)*Share) {
		t.Errorf("Set = %d, want %v of %d", got, Share, hard)
	}
	if got := debug.SetMemoryLimit(-1); got != int64(float64(hard)*Share) {
		t.Errorf("the runtime's limit is %d", got)
	}
	debug.SetMemoryLimit(math.MaxInt64)
	if got := Set(func(k string) string { return map[string]string{"GOMEMLIMIT": "1GiB"}[k] }); got != 0 || debug.SetMemoryLimit(-1) != math.MaxInt64 {
		t.Errorf("GOMEMLIMIT set: Set = %d, runtime limit %d; want the user's choice left alone", got, debug.SetMemoryLimit(-1))
	}
}
