//go:build unix

package safeio

import (
	"os"
	"syscall"
)

// openNonBlocking opens for reading without waiting for a FIFO's writer.
// O_NONBLOCK changes nothing for regular files and directories.
func openNonBlocking(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}
