package rules

import (
	"fmt"
	"strings"

	"github.com/llmrender/llmrender/modes"
	"github.com/llmrender/llmrender/values"
)

// The pods inside any object that runs them (Pods, Jobs, Deployments,
// LeaderWorkerSets, the operators' kinds), with their containers and the
// devices they ask for: what the manifest rules look at.

// podTemplate is one pod spec inside an object, with its metadata and how
// many pods (nodes) run it.
type podTemplate struct {
	path     string
	spec     map[string]any
	meta     map[string]any
	replicas int64
	after    string // a JobSet's replicated job these pods wait for
}

// podTemplates finds the pod specs of an object, where its row of the
// kinds (modes.yaml) says they are: the kinds the chart renders and those
// people write by hand.
func podTemplates(o Object) []podTemplate {
	k, ok := o.kindRow()
	if !ok {
		return nil
	}
	d := o.Doc
	at, count := modes.Path(k.Pods.At), modes.Path(k.Pods.Count)
	switch k.Pods.Shape {
	case modes.Template:
		return oneTemplate(k.Pods.At, mapAt(d, at...), integer(d, count...))
	case modes.LeaderWorker:
		// Each group (replica) is a leader and size - 1 workers; without a
		// leader template every pod of a group runs the worker template.
		lwt := mapAt(d, at...)
		groups, size := int64(1), max(integer(lwt, "size"), 1)
		if _, ok := num(d, count...); ok {
			groups = integer(d, count...)
		}
		if leader := mapAt(lwt, "leaderTemplate"); leader != nil {
			out := oneTemplate(k.Pods.At+".leaderTemplate", leader, groups)
			if size > 1 {
				out = append(out, oneTemplate(k.Pods.At+".workerTemplate", mapAt(lwt, "workerTemplate"), groups*(size-1))...)
			}
			return out
		}
		return oneTemplate(k.Pods.At+".workerTemplate", mapAt(lwt, "workerTemplate"), groups*size)
	case modes.ReplicaSpecs:
		return replicaSpecs(d, k.Pods.At)
	case modes.ReplicatedJobs:
		// The "node" job of a Trainer runtime runs numNodes pods (a
		// TrainJob's trainer.numNodes overrides it, and is checked against
		// the values instead); a kind without count reads 0, none.
		return replicatedJobs(d, k.Pods.At, integer(d, count...))
	case modes.RayCluster:
		spec := mapAt(d, at...)
		if spec == nil {
			return nil
		}
		out := oneTemplate(k.Pods.At+".headGroupSpec.template", mapAt(spec, "headGroupSpec", "template"), 1)
		for i, g := range list(spec, "workerGroupSpecs") {
			out = append(out, oneTemplate(fmt.Sprintf("%s.workerGroupSpecs[%d].template", k.Pods.At, i), mapAt(g, "template"), integer(g, "replicas"))...)
		}
		return out
	}
	return nil
}

// oneTemplate takes a pod template (metadata and spec) at path, run by n
// pods (at least one).
func oneTemplate(path string, template map[string]any, n int64) []podTemplate {
	spec := mapAt(template, "spec")
	if spec == nil {
		return nil
	}
	if path != "" {
		path += "."
	}
	return []podTemplate{{path: path + "spec", spec: spec, meta: mapAt(template, "metadata"), replicas: max(n, 1)}}
}

// rayClusterSpec is the Ray cluster an object describes, with its field
// path: a RayCluster's spec, or the cluster a RayJob brings along.
func rayClusterSpec(o Object) (map[string]any, string) {
	if k, ok := o.kindRow(); ok && k.Pods.Shape == modes.RayCluster {
		if spec := mapAt(o.Doc, modes.Path(k.Pods.At)...); spec != nil {
			return spec, k.Pods.At
		}
	}
	return nil, ""
}

// volcanoGang tells whether an object asks KubeRay for a Volcano gang: the
// queue label (KubeRay 1.6 and later gang-schedule every cluster when the
// operator runs with --batch-scheduler=volcano and read the queue from it)
// or the scheduler label earlier versions read.
func volcanoGang(o Object) bool {
	return str(o.Doc, "metadata", "labels", "ray.io/scheduler-name") == "volcano" || str(o.Doc, "metadata", "labels", "volcano.sh/queue-name") != ""
}

// replicatedJobs are the pod templates of a JobSet's replicated jobs (at
// path, e.g. "spec"): replicas x the Job's parallelism pods each. nodes,
// when positive, is the pod count of a Trainer runtime's "node" job.
func replicatedJobs(d map[string]any, path string, nodes int64) []podTemplate {
	var out []podTemplate
	for i, rj := range list(mapAt(d, modes.Path(path)...), "replicatedJobs") {
		job, _ := rj.(map[string]any)
		spec := mapAt(job, "template", "spec", "template", "spec")
		if spec == nil {
			continue
		}
		pods := max(integer(job, "replicas"), 1) * max(integer(job, "template", "spec", "parallelism"), 1)
		if name, _ := job["name"].(string); name == "node" && nodes > 0 {
			pods = nodes
		}
		pt := podTemplate{path: fmt.Sprintf("%s.replicatedJobs[%d].template.spec.template.spec", path, i), spec: spec,
			meta: mapAt(job, "template", "spec", "template", "metadata"), replicas: pods}
		if deps := list(job, "dependsOn"); len(deps) > 0 {
			pt.after = str(deps[0], "name")
		}
		out = append(out, pt)
	}
	return out
}

// replicaSpecs are the pod templates of a map of named replica specs at
// path (Kubeflow's), replicas pods each.
func replicaSpecs(d map[string]any, path string) []podTemplate {
	specs := mapAt(d, modes.Path(path)...)
	var out []podTemplate
	for _, n := range values.SortedKeys(specs) {
		if spec := mapAt(specs[n], "template", "spec"); spec != nil {
			r := integer(specs[n], "replicas")
			if r < 1 {
				r = 1
			}
			out = append(out, podTemplate{path: fmt.Sprintf("%s.%s.template.spec", path, n), spec: spec, meta: mapAt(specs[n], "template", "metadata"), replicas: r})
		}
	}
	return out
}

func containers(spec map[string]any) []map[string]any {
	var out []map[string]any
	for _, key := range []string{"initContainers", "containers"} {
		for _, c := range list(spec, key) {
			if m, ok := c.(map[string]any); ok {
				out = append(out, m)
			}
		}
	}
	return out
}

// commandLine is a container's command and args as one string, for rules
// that look for flags whether they are list items or inside a shell line.
func commandLine(c map[string]any) string {
	var parts []string
	for _, key := range []string{"command", "args"} {
		for _, e := range list(c, key) {
			if s, ok := e.(string); ok {
				parts = append(parts, s)
			}
		}
	}
	return strings.Join(parts, " ")
}

// accelerator resources whose count must match a process count.
var deviceResources = []string{"nvidia.com/gpu", "amd.com/gpu", "google.com/tpu", "aws.amazon.com/neuron", "aws.amazon.com/neuroncore"}

func devicesOf(c map[string]any) (string, int64) {
	for _, r := range deviceResources {
		if n := integer(c, "resources", "limits", r); n > 0 {
			return r, n
		}
		if n := integer(c, "resources", "requests", r); n > 0 {
			return r, n
		}
	}
	return "", 0
}

// PodCompute is what one pod template of an object asks for.
type PodCompute struct {
	Path string `json:"path"` // field path of the pod spec
	// After is the replicated job of the same JobSet that must be complete
	// before these pods are created (its dependsOn), "" when they are
	// created with the object.
	After    string `json:"after,omitempty"`
	Replicas int64  `json:"replicas"` // pods (nodes) that run it
	Resource string `json:"resource,omitempty"`
	Devices  int64  `json:"devices"`          // accelerator devices per pod, all containers
	Fabric   string `json:"fabric,omitempty"` // its fabric wiring, as a reviewer reads it
}

// Compute lists the pod templates of an object with their device
// requests; kinds say where each kind keeps its pods (nil: the built-in
// chart's).
func Compute(kinds modes.Kinds, o Object) []PodCompute {
	o.kinds = kinds
	var out []PodCompute
	for _, pt := range podTemplates(o) {
		pc := PodCompute{Path: pt.path, After: pt.after, Replicas: pt.replicas, Fabric: podFabric(pt)}
		for _, c := range list(pt.spec, "containers") {
			cm, _ := c.(map[string]any)
			if res, n := devicesOf(cm); n > 0 {
				pc.Resource, pc.Devices = res, pc.Devices+n
			}
		}
		out = append(out, pc)
	}
	return out
}
