package testkit

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// EachAtOnce calls fn for each of 0..n-1 on every core the process may
// use, and returns when all calls have. fn reports through a
// testing.T, whose methods are safe from any goroutine; renders of one
// chart may run side by side (pipeline's TestConcurrentRendersAgree).
func EachAtOnce(n int, fn func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				fn(i)
			}
		})
	}
	wg.Wait()
}
