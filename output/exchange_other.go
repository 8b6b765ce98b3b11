//go:build !linux

package output

// exchange is not available here; swap falls back to two renames.
func exchange(a, b string) error { return errNoExchange }
