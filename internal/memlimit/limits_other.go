//go:build !unix

package memlimit

// rlimits: systems without rlimits have none to honour.
func rlimits() []uint64 { return nil }
