// Package memo remembers the results of pure functions for a process.
package memo

import "sync"

// Memo remembers the results of a pure function, shared by every render of
// the process (patterns compiled, how yaml.v3 writes a string), up to max
// entries: past the bound, results are computed per call as before, so
// input crafted to be distinct cannot grow it without limit. Errors are
// not remembered.
type Memo[K comparable, V any] struct {
	mu  sync.RWMutex
	m   map[K]V
	max int
}

// New is a memo of at most max results.
func New[K comparable, V any](max int) *Memo[K, V] {
	return &Memo[K, V]{m: map[K]V{}, max: max}
}

// Get returns the remembered result for k, or computes and remembers it.
func (c *Memo[K, V]) Get(k K, compute func() (V, error)) (V, error) {
	c.mu.RLock()
	v, ok := c.m[k]
	c.mu.RUnlock()
	if ok {
		return v, nil
	}
	v, err := compute()
	if err != nil {
		return v, err
	}
	c.mu.Lock()
	if len(c.m) < c.max {
		c.m[k] = v
	}
	c.mu.Unlock()
	return v, nil
}

// Len is how many results are remembered.
func (c *Memo[K, V]) Len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.m)
}
