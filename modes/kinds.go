package modes

import (
	"fmt"
	"slices"
	"strings"
)

// Kind is a row of modes.yaml's kinds: where an object of the kind keeps
// its pods, and how they behave; the header of the file's kinds says what
// each column means.
type Kind struct {
	Kind  string `json:"kind" yaml:"kind"`
	Pods  Pods   `json:"pods" yaml:"pods"`
	Ends  string `json:"ends" yaml:"ends"`
	Peers string `json:"peers" yaml:"peers"`
}

// Pods is where a kind's pod templates are: a shape and its fields, each a
// dotted field path from the object's top.
type Pods struct {
	Shape string `json:"shape" yaml:"shape"`
	At    string `json:"at,omitempty" yaml:"at,omitempty"`
	Count string `json:"count,omitempty" yaml:"count,omitempty"`
}

// The shapes a kind's pods come in.
const (
	Template       = "template"
	LeaderWorker   = "leaderWorker"
	ReplicaSpecs   = "replicaSpecs"
	ReplicatedJobs = "replicatedJobs"
	RayCluster     = "rayCluster"
	NoPods         = "none"
)

var shapes = []string{Template, LeaderWorker, ReplicaSpecs, ReplicatedJobs, RayCluster, NoPods}

// What Kind.Ends says.
const (
	Always          = "always"
	Never           = "never"
	ByRestartPolicy = "byRestartPolicy"
)

var ends = []string{Always, Never, ByRestartPolicy}

// Which of a kind's pods talk to one another (Kind.Peers).
const (
	AllPeers   = "all"
	OnePeer    = "one"
	GroupPeers = "group"
)

var peers = []string{AllPeers, OnePeer, GroupPeers}

// Kinds are the rows of modes.yaml's kinds by kind.
type Kinds map[string]Kind

// BuiltinKinds are the built-in chart's kinds, compiled in with its modes.
func BuiltinKinds() Kinds { return builtinKinds }

// Path is a dotted field path as its fields ("" is the object itself).
func Path(dotted string) []string {
	if dotted == "" {
		return nil
	}
	return strings.Split(dotted, ".")
}

// kindsOf checks the rows and keys them by kind.
func kindsOf(name string, rows []Kind) (Kinds, error) {
	out := make(Kinds, len(rows))
	for i, k := range rows {
		where := fmt.Sprintf("%s: kinds[%d]", name, i)
		if k.Kind != "" {
			where += " (" + k.Kind + ")"
		}
		needsAt := k.Pods.Shape != Template && k.Pods.Shape != NoPods
		switch {
		case k.Kind == "":
			return nil, fmt.Errorf("%s: kind is empty", where)
		case out[k.Kind].Kind != "":
			return nil, fmt.Errorf("%s: the kind is listed twice", where)
		case !slices.Contains(shapes, k.Pods.Shape):
			return nil, fmt.Errorf("%s: pods: shape is %q, expected %s", where, k.Pods.Shape, Or(shapes))
		case needsAt && k.Pods.At == "":
			return nil, fmt.Errorf("%s: pods: shape %s needs at, the field that holds it", where, k.Pods.Shape)
		case slices.Contains(Path(k.Pods.At), "") || slices.Contains(Path(k.Pods.Count), ""):
			return nil, fmt.Errorf("%s: pods: %q or %q is not a dotted field path", where, k.Pods.At, k.Pods.Count)
		case !slices.Contains(ends, k.Ends):
			return nil, fmt.Errorf("%s: ends is %q, expected %s", where, k.Ends, Or(ends))
		case !slices.Contains(peers, k.Peers):
			return nil, fmt.Errorf("%s: peers is %q, expected %s", where, k.Peers, Or(peers))
		}
		out[k.Kind] = k
	}
	return out, nil
}
