package renderer

import "sync"

// memo remembers the results of a pure function, shared by every render of
// the process (patterns compiled, how yaml.v3 writes a string), up to max
// entries: past the bound, results are computed per call as before, so
// input crafted to be distinct cannot grow it without limit. Errors are
// not remembered.
type memo[K comparable, V any] struct {
	mu  sync.RWMutex
	m   map[K]V
	max int
}

func newMemo[K comparable, V any](max int) *memo[K, V] {
	return &memo[K, V]{m: map[K]V{}, max: max}
}

// get returns the remembered result for k, or computes and remembers it.
func (c *memo[K, V]) get(k K, compute func() (V, error)) (V, error) {
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
