package rules

// objectRule is one manifest rule. A rule that looks at each object alone
// (keeps nil) runs as each object arrives; one that relates objects (a
// claim and the pods that mount it) keeps the objects keeps picks and
// runs over them at the end.
type objectRule struct {
	check func([]Object, Facts) []Finding
	keeps func(Object) bool
}

// objectRules are the manifest rules, in the order their findings are
// listed before sorting. LR024 (namespace.go) is not among them: it keeps
// what it finds in each object, not the object (ObjectChecker).
var objectRules = []objectRule{
	{rwoShared, func(o Object) bool { return o.kind() == "PersistentVolumeClaim" || mountsClaim(o) }},
	{fabricWiring, nil},
	{nprocMatchesDevices, nil},
	{undigestedImages, nil},
	{foreignDevices, nil},
	{noFacts(indexedJobWiring), func(o Object) bool { return o.kind() == "Service" || o.kind() == "Job" }},
	{noFacts(petWithoutElastic), nil},
	{noFacts(rayJobs), func(o Object) bool { return o.kind() == "RayCluster" || o.kind() == "RayJob" }},
	{noFacts(gangSizes), func(o Object) bool { s, _ := rayClusterSpec(o); return o.kind() == "Queue" || s != nil }},
	{noFacts(sharedMemory), nil},
	{noFacts(mutableImages), nil},
	{noFacts(mpiSlots), nil},
	{noFacts(plainSecrets), nil},
	{noFacts(jobSetPolicies), nil},
	{noFacts(pickerConfigs), nil},
}

func noFacts(rule func([]Object) []Finding) func([]Object, Facts) []Finding {
	return func(objs []Object, _ Facts) []Finding { return rule(objs) }
}

// mountsClaim tells whether a pod template of o mounts a claim.
func mountsClaim(o Object) bool {
	for _, pt := range podTemplates(o) {
		for _, v := range list(pt.spec, "volumes") {
			if str(v, "persistentVolumeClaim", "claimName") != "" {
				return true
			}
		}
	}
	return false
}

// An ObjectChecker runs the manifest rules over objects handed to it one
// at a time. Of each object it keeps only what a rule relating objects
// needs (the claims, the Services, the Ray clusters; for LR024 what names
// a namespace), so that checking a stream of objects costs memory for
// those, not for the stream: a dump of a cluster's ConfigMaps keeps none.
type ObjectChecker struct {
	facts    Facts
	found    [][]Finding // per rule of objectRules that looks at one object
	kept     [][]Object  // per rule that relates objects
	names    []string    // every object's, for LR024's hits that name an object
	bound    []namespaceHits
	matchers map[string]*namespaceMatcher
}

// NewObjectChecker is a checker with facts about the cluster.
func NewObjectChecker(facts Facts) *ObjectChecker {
	return &ObjectChecker{facts: facts, found: make([][]Finding, len(objectRules)), kept: make([][]Object, len(objectRules)),
		matchers: map[string]*namespaceMatcher{}}
}

// Add checks one object with the rules that look at it alone and keeps
// what the others need of it.
func (c *ObjectChecker) Add(o Object) {
	o.kinds = c.facts.Kinds
	one := []Object{o}
	for i, r := range objectRules {
		switch {
		case r.keeps == nil:
			c.found[i] = append(c.found[i], r.check(one, c.facts)...)
		case r.keeps(o):
			c.kept[i] = append(c.kept[i], o)
		}
	}
	if !c.facts.NamespaceChosen {
		c.names = append(c.names, o.name())
		if h := c.namespaceHits(o); len(h.fields) > 0 {
			c.bound = append(c.bound, h)
		}
	}
}

// Findings are the findings of every rule over the objects added, sorted.
func (c *ObjectChecker) Findings() []Finding {
	var fs []Finding
	for i, r := range objectRules {
		if r.keeps != nil {
			fs = append(fs, r.check(c.kept[i], c.facts)...)
			continue
		}
		fs = append(fs, c.found[i]...)
	}
	if len(c.bound) > 0 {
		// A set only when a hit may need it: a dump of a cluster has
		// hundreds of thousands of names and usually no hit.
		names := make(map[string]bool, len(c.names))
		for _, n := range c.names {
			names[n] = true
		}
		for _, h := range c.bound {
			fs = append(fs, h.findings(names)...)
		}
	}
	Sort(fs)
	return fs
}
