//go:build unix

package output

import (
	"errors"
	"syscall"
)

// processAlive tells whether a process with this id exists (signal 0
// checks without sending anything).
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
