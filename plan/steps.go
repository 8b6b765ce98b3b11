package plan

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/llmrender/llmrender/internal/tree"
	"github.com/llmrender/llmrender/modes"
	"github.com/llmrender/llmrender/rules"
)

// The steps of a render in the order they run, read from its objects, and
// what each holds of the accelerators while it runs.

// steps groups objects by their app.kubernetes.io/component label, ordered
// by sync wave, with the steps each waits for from depends-on. Steps that
// run inside another object (its llmrender.dev/steps-inside annotation)
// come right before that object's own step.
func steps(kinds modes.Kinds, objs []rules.Object) []Step {
	byName := map[string]*Step{}
	componentOf := map[string]string{} // Kind/name -> component
	var order []string
	hasWave := map[string]bool{} // a step's wave comes from its objects' lowest
	add := func(name string) *Step {
		s, ok := byName[name]
		if !ok {
			s = &Step{Name: name}
			byName[name] = s
			order = append(order, name)
		}
		return s
	}
	podsOf := map[string][]string{} // a step's accelerator pods: the object of each
	for _, o := range objs {
		comp, _ := meta(o, "labels")["app.kubernetes.io/component"].(string)
		if comp == "" {
			comp = "other"
		}
		id := fmt.Sprintf("%v/%s", o.Doc["kind"], name(o))
		componentOf[id] = comp
		s := add(comp)
		s.Objects = append(s.Objects, id)
		if w, err := strconv.Atoi(fmt.Sprint(meta(o, "annotations")["argocd.argoproj.io/sync-wave"])); err == nil && (!hasWave[comp] || w < s.Wave) {
			s.Wave, hasWave[comp] = w, true
		}
		if kind := fmt.Sprint(o.Doc["kind"]); kind == "TrainingRuntime" || kind == "ClusterTrainingRuntime" {
			continue // a template: its pods are the TrainJobs' that use it
		}
		for _, pc := range acceleratorPods(rules.Compute(kinds, o)) {
			s.Pods = append(s.Pods, pc)
			podsOf[comp] = append(podsOf[comp], id)
		}
	}
	// A step of several objects with accelerator pods (prefill and decode
	// servers) names the object of each.
	for comp, ids := range podsOf {
		if slices.ContainsFunc(ids, func(id string) bool { return id != ids[0] }) {
			for i, id := range ids {
				byName[comp].Pods[i].Path = id + " " + byName[comp].Pods[i].Path
			}
		}
	}
	// A TrainJob's pods are its runtime's, numNodes of them.
	for _, o := range objs {
		if o.Doc["kind"] != "TrainJob" {
			continue
		}
		s := byName[componentOf[fmt.Sprintf("TrainJob/%s", name(o))]]
		ref := tree.Map(o.Doc, "spec", "runtimeRef")
		nodes, hasNodes := tree.Map(o.Doc, "spec", "trainer")["numNodes"].(int64)
		for _, rt := range objs {
			if rt.Doc["kind"] != fmt.Sprint(ref["kind"]) || name(rt) != fmt.Sprint(ref["name"]) {
				continue
			}
			for _, pc := range acceleratorPods(rules.Compute(kinds, rt)) {
				pc.Path = fmt.Sprintf("%v/%s %s", rt.Doc["kind"], name(rt), pc.Path)
				if hasNodes {
					pc.Replicas = nodes
				}
				s.Pods = append(s.Pods, pc)
			}
		}
	}
	for _, o := range objs {
		comp := componentOf[fmt.Sprintf("%v/%s", o.Doc["kind"], name(o))]
		deps, _ := meta(o, "annotations")["config.kubernetes.io/depends-on"].(string)
		for _, ref := range strings.Split(deps, ",") {
			parts := strings.Split(ref, "/")
			if len(parts) < 2 {
				continue
			}
			target := componentOf[strings.Join(parts[len(parts)-2:], "/")]
			if target != "" && target != comp && !slices.Contains(byName[comp].After, target) {
				byName[comp].After = append(byName[comp].After, target)
			}
		}
	}
	// Steps inside an object: a chain in front of the object's own step.
	for _, o := range objs {
		inside, _ := meta(o, "annotations")["llmrender.dev/steps-inside"].(string)
		if inside == "" {
			continue
		}
		id := fmt.Sprintf("%v/%s", o.Doc["kind"], name(o))
		host := byName[componentOf[id]]
		after := host.After
		for _, n := range strings.Split(inside, ",") {
			s := add(n)
			s.Inside, s.Wave, s.After = id, host.Wave, after
			after = []string{n}
		}
		host.After = after
	}
	out := make([]Step, 0, len(order))
	for _, n := range order {
		s := byName[n]
		sort.Strings(s.After)
		out = append(out, *s)
	}
	return ordered(out)
}

// acceleratorPods are the pod templates that request accelerators.
func acceleratorPods(all []rules.PodCompute) []rules.PodCompute {
	var out []rules.PodCompute
	for _, pc := range all {
		if pc.Devices > 0 {
			out = append(out, pc)
		}
	}
	return out
}

// together is the most of these pods that exist at once: pods that wait
// for the replicated job before them (a JobSet's dependsOn) are created
// when those are gone, so a chain counts as its largest member.
func together(pods []rules.PodCompute) int64 {
	var total, chain int64
	for _, pc := range pods {
		if pc.After == "" {
			total += chain
			chain = 0
		}
		chain = max(chain, pc.Replicas)
	}
	return total + chain
}

// waiting is how many of these pods exist from the start: those that wait
// for no replicated job.
func waiting(pods []rules.PodCompute) int64 {
	var n int64
	for _, pc := range pods {
		if pc.After == "" {
			n += pc.Replicas
		}
	}
	return n
}

// held fills in, for every step before the run, the accelerator pods that
// exist meanwhile when everything is applied at once: a step inside an
// object holds that object's accelerator pods, a step of its own every
// accelerator pod of the set (the run's pods are created at once and wait).
func held(steps []Step, peak int64, checkpoint float64) {
	podsOf := map[string]int64{}    // an object's accelerator pods at most at once
	waitingIn := map[string]int64{} // those that exist from the start
	for _, s := range steps {
		for _, o := range s.Objects {
			podsOf[o] += together(s.Pods)
			waitingIn[o] += waiting(s.Pods)
		}
	}
	for i := range steps {
		s := &steps[i]
		switch {
		case len(s.Pods) > 0:
			continue // the accelerator pods' own step
		case s.Inside != "":
			// Steps that run on the workers keep them busy; the others
			// hold the pods created with the object (none in a JobSet whose
			// run waits for its steps' replicated jobs).
			s.Busy = s.Name == "precompile" || s.Name == "fabric-test"
			s.Held = waitingIn[s.Inside]
			if s.Busy {
				s.Held = podsOf[s.Inside]
			}
		case s.Name == "download" || s.Name == "preprocess":
			s.Held = peak
		default:
			continue
		}
		if s.Name == "download" && !s.Busy && s.Held > 0 && checkpoint > 0 {
			s.IdleEstimate = fmt.Sprintf("~%d min for %s at %s/s", max(1, int(checkpoint/downloadRate/60+0.5)), bytesText(checkpoint), bytesText(downloadRate))
		}
	}
}

// ordered puts steps in an order that respects After (a step comes after
// everything it waits for), choosing by wave and then name among the steps
// that are ready. A cycle, which the chart never makes, falls back to wave
// order for what remains.
func ordered(steps []Step) []Step {
	less := func(a, b Step) bool {
		if a.Wave != b.Wave {
			return a.Wave < b.Wave
		}
		if ra, rb := rank(a.Name), rank(b.Name); ra != rb {
			return ra < rb
		}
		return a.Name < b.Name
	}
	placed := map[string]bool{}
	out := make([]Step, 0, len(steps))
	for len(out) < len(steps) {
		best := -1
		for i, s := range steps {
			if placed[s.Name] {
				continue
			}
			ready := true
			for _, a := range s.After {
				ready = ready && placed[a]
			}
			if ready && (best < 0 || less(s, steps[best])) {
				best = i
			}
		}
		if best < 0 { // a cycle: take the earliest remaining
			for i, s := range steps {
				if !placed[s.Name] && (best < 0 || less(s, steps[best])) {
					best = i
				}
			}
		}
		placed[steps[best].Name] = true
		out = append(out, steps[best])
	}
	return out
}

// rank orders steps of one wave for a reader: what the workload needs
// first (storage, identity), then its steps, the run, and what runs beside it.
func rank(step string) int {
	switch step {
	case "storage", "identity", "queue", "workers":
		return 0
	case "run":
		return 2
	case "shell", "tensorboard":
		return 3
	}
	return 1
}
