package plugin

import (
	"testing"
)

// BenchmarkFn is the KRM function path: a ResourceList in, one out.
func BenchmarkFn(b *testing.B) {
	env := testEnv(&testing.T{}, ".")
	in := readFixture(&testing.T{}, "transformer.yaml")
	b.ReportAllocs()
	for b.Loop() {
		if out := Run(in, env); out.Err != nil {
			b.Fatal(out.Err)
		}
	}
}
