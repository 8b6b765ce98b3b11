//go:build unix

package memlimit

import "syscall"

// rlimits are the soft limits on the data segment and the address space,
// leaving out the unlimited ones.
func rlimits() []uint64 {
	const infinity = ^uint64(0) // RLIM_INFINITY
	var out []uint64
	for _, res := range []int{syscall.RLIMIT_DATA, syscall.RLIMIT_AS} {
		var r syscall.Rlimit
		if syscall.Getrlimit(res, &r) == nil && r.Cur != infinity {
			out = append(out, r.Cur)
		}
	}
	return out
}
