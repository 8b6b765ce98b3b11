package output

import (
	"errors"

	"golang.org/x/sys/unix"
)

// exchange swaps two paths in one step: renameat2 with RENAME_EXCHANGE
// (Linux 3.15; most local file systems, not all network ones).
func exchange(a, b string) error {
	err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE)
	if errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOTSUP) {
		return errNoExchange
	}
	return err
}
