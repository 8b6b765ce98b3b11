package workload

import (
	"strconv"
	"strings"
)

// Cloud TPU slices: a profile's tpu section names the shapes a slice may
// have; the slice's hosts are its chips over a host's, and the run's nodes
// are the hosts of every slice, each pod with all of its host's chips.

// Slice is the Cloud TPU slice a workload runs on.
type Slice struct {
	Topology string
	Hosts    int64 // per slice
	Slices   int64
}

// Slice is the workload's TPU slice, nil on profiles without slices.
func (w *Workload) Slice() *Slice {
	t := mapAt(w.Acc, "tpu")
	if t == nil {
		return nil
	}
	s := &Slice{Topology: str(w.V, "accelerator", "topology"), Slices: max(integer(w.V, "accelerator", "slices"), 1)}
	if s.Topology == "" {
		s.Topology = str(t, "topology")
	}
	chips := int64(1)
	for _, d := range strings.Split(s.Topology, "x") {
		n, _ := strconv.ParseInt(d, 10, 64)
		chips *= n
	}
	s.Hosts = max(chips/max(integer(w.Acc, "devicesPerNode"), 1), 1)
	return s
}
