// Package plan summarises a render for a reviewer: the steps and their
// order, the objects of each, nodes x devices, world size, the memory fit
// estimate, storage, and every rule warning. It reads the rendered objects,
// so what it says is what would be applied.
package plan

import (
	"fmt"
	"slices"
	"sort"

	"github.com/llmrender/llmrender/internal/tree"
	"github.com/llmrender/llmrender/model"
	"github.com/llmrender/llmrender/pipeline"
	"github.com/llmrender/llmrender/rules"
	"github.com/llmrender/llmrender/workload"
)

// Plan is the summary of one render.
type Plan struct {
	Release     string  `json:"release"`
	Namespace   string  `json:"namespace"`
	Model       string  `json:"model"`
	Accelerator string  `json:"accelerator"`
	Mode        string  `json:"mode"`
	Type        string  `json:"type"`
	Compute     Compute `json:"compute"`
	// ModelFacts are what the memory math used of the model, and where
	// they come from; absent for a model that is not a transformer.
	ModelFacts *ModelFacts `json:"modelFacts,omitempty"`
	Fit        *Fit        `json:"fit,omitempty"`
	Serve      *Serve      `json:"serve,omitempty"`
	Fabric     *Fabric     `json:"fabric,omitempty"`
	Queue      *Queue      `json:"queue,omitempty"`
	Storage    []Claim     `json:"storage"`
	Steps      []Step      `json:"steps"`
	// Peak is the most accelerator pods the set ever asks for at once: all
	// of them, since every object may be applied together. With pods of a
	// whole node each, it is the number of accelerator nodes.
	Peak     int64     `json:"peakAcceleratorPods"`
	Findings []Finding `json:"findings"`
}

// ModelFacts are the model's architecture (model.Facts) with its KV
// cache a token, on every layer before tensor-parallel copies, in the
// cache's dtype, and the source of the facts.
type ModelFacts struct {
	model.Facts
	KVBytesPerToken int64  `json:"kvBytesPerToken"`
	KVCacheDtype    string `json:"kvCacheDtype"`
	Source          string `json:"source"`
}

// Compute is the main run's size.
type Compute struct {
	Nodes          int64  `json:"nodes"`
	DevicesPerNode int64  `json:"devicesPerNode"`
	Resource       string `json:"resource,omitempty"`
	Devices        int64  `json:"devices"`                  // nodes x devices per node
	WorldSize      int64  `json:"worldSize"`                // processes: one per GPU, one per NeuronCore (two per Trainium chip)
	Launch         string `json:"launch"`                   // who starts them
	SlotsPerWorker int64  `json:"slotsPerWorker,omitempty"` // mpirun's, in mode mpijob
}

// Fabric is how the run's nodes exchange data, and at what bandwidth.
type Fabric struct {
	Kind    string   `json:"kind"`             // the fabric wired, "" for none (NCCL over the primary NIC)
	Native  string   `json:"native,omitempty"` // the profile's fabric
	Gbps    float64  `json:"gbpsPerNode,omitempty"`
	TCPGbps float64  `json:"tcpGbpsPerNode,omitempty"` // the primary NIC alone
	Missing []string `json:"missing,omitempty"`        // accelerator pods of the run without the fabric's wiring
	// Domain is the NVLink domain the run's pods are kept in (rack-scale
	// NVLink), nil elsewhere.
	Domain *Domain `json:"nvlinkDomain,omitempty"`
	// KVTransfer: the fabric carries KV caches between prefill and decode
	// servers (serving.disaggregation), each on one node.
	KVTransfer bool `json:"kvTransfer,omitempty"`
}

// Domain is a rack-scale NVLink domain: how many nodes it holds and the
// node label that names it.
type Domain struct {
	Nodes int64  `json:"nodes"`
	Label string `json:"label"`
}

// Queue is the Kueue LocalQueue that admits the workload: the queue its
// objects are labelled with (kueue.queueName), and whether the release
// creates it (kueue.localQueue.create) or it must exist.
type Queue struct {
	Name          string   `json:"name"`
	Objects       []string `json:"objects"` // the objects Kueue holds until it admits them
	Created       bool     `json:"created"` // the release renders the LocalQueue
	ClusterQueue  string   `json:"clusterQueue,omitempty"`
	PriorityClass string   `json:"priorityClass,omitempty"` // the objects' WorkloadPriorityClass
}

// Fit is the memory estimate behind rule LR008.
type Fit struct {
	NeedBytes   float64 `json:"needBytes"`
	HaveBytes   float64 `json:"haveBytes"`
	Basis       string  `json:"basis"`
	HaveBasis   string  `json:"haveBasis,omitempty"` // how HaveBytes is counted, when not all the devices' memory
	Fits        bool    `json:"fits"`
	UsedPercent float64 `json:"usedPercent"`
}

// Claim is a volume claim the workload uses.
type Claim struct {
	Name         string   `json:"name"`
	Size         string   `json:"size,omitempty"`
	AccessModes  []string `json:"accessModes,omitempty"`
	StorageClass string   `json:"storageClass,omitempty"`
	Existing     bool     `json:"existing"`           // referenced, not created by this render
	SizedFor     string   `json:"sizedFor,omitempty"` // how the chart computed the size (storage.size empty)
}

// Step is one component of the workload (storage, download, run, ...).
type Step struct {
	Name    string             `json:"name"`
	Wave    int                `json:"wave"`
	After   []string           `json:"after,omitempty"` // steps it waits for
	Objects []string           `json:"objects"`
	Pods    []rules.PodCompute `json:"pods,omitempty"` // pod templates that request accelerators
	// Inside names the object whose pods run this step before their own
	// work (init containers, or the MPI launcher's or Ray job's script).
	Inside string `json:"inside,omitempty"`
	// Held is how many accelerator pods exist while the step runs when
	// every object is applied at once; Busy tells whether they work for
	// the step (precompilation on the workers) or wait for it.
	Held int64 `json:"heldAcceleratorPods"`
	Busy bool  `json:"busy,omitempty"`
	// IdleEstimate is how long held accelerators wait for the step, where
	// it can be estimated (downloads), e.g. "~3 min".
	IdleEstimate string `json:"idleEstimate,omitempty"`
}

// Finding is a rule warning (or a waived finding) shown in the plan.
type Finding struct {
	Rule     string `json:"rule"`
	Severity string `json:"severity"`
	Where    string `json:"where"`
	Message  string `json:"message"`
	Waived   bool   `json:"waived,omitempty"`
}

// Build summarises a successful render of the built-in chart.
func Build(res *pipeline.Result, release, namespace string) (*Plan, error) {
	objs, err := pipeline.Decode(res.Objects)
	if err != nil {
		return nil, err
	}
	p := &Plan{Release: release, Namespace: namespace, Storage: []Claim{}, Findings: []Finding{}}
	w := workload.New(res.Modes, res.Values)
	var e workload.Estimate // LR008's, which the server's lines also read
	if w != nil {
		p.Model, p.Accelerator, p.Mode, p.Type = w.ModelName, w.Profile, w.Mode, w.Type
		res, _ := w.Acc["resource"].(string)
		ranks := w.Ranks()
		p.Compute = Compute{Nodes: w.Nodes, DevicesPerNode: w.Devices, Resource: res, Devices: w.Nodes * w.Devices,
			WorldSize: ranks.WorldSize, Launch: ranks.Launch, SlotsPerWorker: ranks.Slots}
		if res == "" {
			p.Compute.Devices, p.Compute.DevicesPerNode = 0, 0
		}
		if f := w.Facts(); f.Transformer() {
			p.ModelFacts = &ModelFacts{Facts: f, KVCacheDtype: w.KVCacheDtype(), KVBytesPerToken: f.KVBytesPerToken(w.KVCacheBytes()), Source: w.FactsSource()}
		}
		e = workload.FitEstimate(w)
		if e.HaveBytes > 0 && e.NeedBytes > 0 {
			p.Fit = &Fit{NeedBytes: e.NeedBytes, HaveBytes: e.HaveBytes, Basis: e.Basis, HaveBasis: e.HaveBasis,
				Fits: e.NeedBytes <= e.HaveBytes, UsedPercent: 100 * e.NeedBytes / e.HaveBytes}
		}
	}
	p.Storage = claims(objs)
	if w != nil && w.ClaimSized() {
		for i := range p.Storage {
			if !p.Storage[i].Existing {
				p.Storage[i].SizedFor = w.ClaimNeed().String()
			}
		}
	}
	p.Steps = steps(res.Kinds, objs)
	// The fabric, when the workload spans nodes of a machine that has one
	// (wired or not: a reviewer needs both) or its pods carry it on one.
	if w != nil && tree.String(w.Acc, "fabric") != "" && (w.Nodes > 1 || carryFabric(p.Steps)) {
		p.Fabric = fabricOf(w, p.Steps)
	}
	p.Queue = queueOf(objs)
	for _, s := range p.Steps {
		p.Peak += together(s.Pods)
	}
	checkpoint := 0.0
	if w != nil {
		checkpoint, _ = w.Model["checkpointBytes"].(float64)
		if n, ok := w.Model["checkpointBytes"].(int64); ok {
			checkpoint = float64(n)
		}
	}
	held(p.Steps, p.Peak, checkpoint)
	if w != nil && w.Mode == "serve" {
		p.Serve = serveOf(w, e, objs, namespace, checkpoint)
		// An autoscaler starts up to its most servers: the object's own
		// replicas are only where it starts (and what waits for a step).
		if p.Serve.Autoscaling != "" {
			for _, s := range p.Steps {
				if most := p.Serve.Replicas * p.Serve.NodesPerServer; s.Name == "run" && most > together(s.Pods) {
					p.Peak += most - together(s.Pods)
				}
			}
		}
	}
	for _, f := range res.Warnings {
		p.Findings = append(p.Findings, Finding{f.Rule, string(f.Severity), f.Where, f.Message, false})
	}
	for _, f := range res.Waived {
		p.Findings = append(p.Findings, Finding{f.Rule, string(f.Severity), f.Where, f.Message, true})
	}
	return p, nil
}

func meta(o rules.Object, key string) map[string]any { return tree.Map(o.Doc, "metadata", key) }

func name(o rules.Object) string {
	m, _ := o.Doc["metadata"].(map[string]any)
	return fmt.Sprint(m["name"])
}

// claims lists the PVCs rendered and the claims pod templates mount but
// the render does not create.
func claims(objs []rules.Object) []Claim {
	out := []Claim{}
	created := map[string]bool{}
	for _, o := range objs {
		if o.Doc["kind"] != "PersistentVolumeClaim" {
			continue
		}
		spec, _ := o.Doc["spec"].(map[string]any)
		c := Claim{Name: name(o)}
		resources, _ := spec["resources"].(map[string]any)
		if req, ok := resources["requests"].(map[string]any); ok {
			c.Size = fmt.Sprint(req["storage"])
		}
		for _, m := range tree.List(spec["accessModes"]) {
			c.AccessModes = append(c.AccessModes, fmt.Sprint(m))
		}
		if sc, ok := spec["storageClassName"].(string); ok {
			c.StorageClass = sc
		}
		created[c.Name] = true
		out = append(out, c)
	}
	var existing []string
	for _, o := range objs {
		tree.Walk(o.Doc, func(m map[string]any) {
			if pvc, ok := m["persistentVolumeClaim"].(map[string]any); ok {
				n := fmt.Sprint(pvc["claimName"])
				if !created[n] && !slices.Contains(existing, n) {
					existing = append(existing, n)
				}
			}
		})
	}
	sort.Strings(existing)
	for _, n := range existing {
		out = append(out, Claim{Name: n, Existing: true})
	}
	return out
}

// downloadRate is the rate the idle estimate assumes for a download from
// the Hugging Face hub or Meta's CDN into a cluster volume.
const downloadRate = 100e6 // bytes per second

// fabricOf summarises the run's fabric: what is wired, the bandwidth it
// gives a node, and the run's accelerator pods that lack it.
func fabricOf(w *workload.Workload, steps []Step) *Fabric {
	f := &Fabric{Kind: w.FabricOf(), Native: tree.String(w.Acc, "fabric"), Gbps: number(w.Acc, "fabricGbps"), TCPGbps: number(w.Acc, "tcpGbps")}
	f.KVTransfer = w.Disaggregated() && f.Kind != ""
	if d := tree.Map(w.Acc, "nvlinkDomain"); d != nil && w.Nodes > 1 {
		f.Domain = &Domain{Nodes: tree.Int(d, "nodes"), Label: tree.String(d, "label")}
	}
	for _, s := range steps {
		if s.Name != "run" {
			continue
		}
		for _, pc := range s.Pods {
			if pc.Devices > 0 && !wired(pc) {
				f.Missing = append(f.Missing, pc.Path)
			}
		}
	}
	return f
}

// carryFabric tells whether any accelerator pod is wired for a fabric.
func carryFabric(steps []Step) bool {
	for _, s := range steps {
		for _, pc := range s.Pods {
			if wired(pc) {
				return true
			}
		}
	}
	return false
}

// wired tells whether an accelerator pod has fabric wiring.
func wired(pc rules.PodCompute) bool {
	return pc.Devices > 0 && pc.Fabric != "" && pc.Fabric != "tcp by choice"
}

// queueOf finds the Kueue LocalQueue the objects are submitted to (the
// kueue.x-k8s.io/queue-name label), nil when none is.
func queueOf(objs []rules.Object) *Queue {
	var q *Queue
	for _, o := range objs {
		labels := meta(o, "labels")
		queue, _ := labels["kueue.x-k8s.io/queue-name"].(string)
		if queue == "" {
			continue
		}
		if q == nil {
			q = &Queue{Name: queue}
		}
		if queue != q.Name {
			continue // the chart labels only the run's object; the first queue named is the workload's
		}
		q.Objects = append(q.Objects, fmt.Sprintf("%v/%s", o.Doc["kind"], name(o)))
		if pc, _ := labels["kueue.x-k8s.io/priority-class"].(string); pc != "" {
			q.PriorityClass = pc
		}
	}
	if q == nil {
		return nil
	}
	for _, o := range objs {
		if o.Doc["kind"] == "LocalQueue" && name(o) == q.Name {
			q.Created = true
			q.ClusterQueue, _ = tree.Map(o.Doc, "spec")["clusterQueue"].(string)
		}
	}
	return q
}

func number(m map[string]any, key string) float64 {
	f, _ := tree.Number(m, key)
	return f
}
