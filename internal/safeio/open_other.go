//go:build !unix

package safeio

import "os"

// openNonBlocking opens for reading; without O_NONBLOCK the check before
// opening is what keeps a FIFO from blocking.
func openNonBlocking(path string) (*os.File, error) { return os.Open(path) }
