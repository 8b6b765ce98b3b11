package rules

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	objcontainers "github.com/llmrender/llmrender/internal/containers"
	"github.com/llmrender/llmrender/internal/lazy"
	"github.com/llmrender/llmrender/modes"
	"github.com/llmrender/llmrender/values"
)

// Object is one decoded manifest.
type Object struct {
	Source string         // template or file it came from
	Line   int            // line in Source where it starts; 0 for rendered templates
	Doc    map[string]any // the object as decoded YAML
	kinds  modes.Kinds    // where each kind keeps its pods; nil: the built-in chart's
}

// kindRow is the object's row of the kinds: where its pods are.
func (o Object) kindRow() (modes.Kind, bool) {
	kinds := o.kinds
	if kinds == nil {
		kinds = modes.BuiltinKinds()
	}
	k, ok := kinds[o.kind()]
	return k, ok
}

func (o Object) kind() string      { return str(o.Doc, "kind") }
func (o Object) name() string      { return str(o.Doc, "metadata", "name") }
func (o Object) namespace() string { return str(o.Doc, "metadata", "namespace") }
func (o Object) id() string        { return o.kind() + "/" + o.name() }

// Ref names the object for machine-readable reports.
func (o Object) Ref() *ObjectRef {
	return &ObjectRef{APIVersion: str(o.Doc, "apiVersion"), Kind: o.kind(), Namespace: o.namespace(), Name: o.name()}
}

// Where names the object in findings: Kind/name, after file:line when the
// object was read from a file.
func (o Object) Where() string {
	if o.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", o.Source, o.Line, o.id())
	}
	return o.id()
}

// AtLine moves a finding about an object read from a file to another line
// of that file: the line of the field it is about.
func (f Finding) AtLine(line int) Finding {
	if f.Loc.Line <= 0 || line == f.Loc.Line {
		return f
	}
	if rest, ok := strings.CutPrefix(f.Where, fmt.Sprintf("%s:%d: ", f.Loc.File, f.Loc.Line)); ok {
		f.Where = fmt.Sprintf("%s:%d: %s", f.Loc.File, line, rest)
	}
	f.Loc.Line = line
	return f
}

// Repeated is LR022's finding for an object that a set of manifests holds
// again after first (file:line): apply tools keep the last, so what the
// other rules checked in the first is not what a cluster gets.
func Repeated(o Object, first string) Finding {
	return objFinding("LR022", Warning, o, "", "the same object is at %s; kubectl apply and other tools keep only the last one", first)
}

func objFinding(rule string, sev Severity, o Object, field, format string, args ...any) Finding {
	f := Finding{Rule: rule, Severity: sev, Where: o.Where(), Field: field, Message: fmt.Sprintf(format, args...), Object: o.Ref()}
	if o.Line > 0 {
		f.Loc = values.Location{File: o.Source, Line: o.Line, Column: 1} // the object's first line in a file lint read
	}
	return f
}

// Facts are what the manifest rules know about the cluster beyond the
// objects: the catalog's storage classes whose volumes live on one node,
// its accelerator profiles (how pods select their nodes) and fabrics.
type Facts struct {
	// RequireDigests: every image must name its digest
	// (global.imageDigests: require).
	RequireDigests bool
	// Namespace is the one the objects were rendered for when nobody
	// chose it (a render without --namespace: Helm's default), "" when
	// unknown or chosen: where an object names no namespace of its own,
	// its strings must not name this one (LR024). A namespace chosen for
	// the render is where the output is meant to run.
	Namespace string
	// NamespaceChosen: the objects were rendered for a namespace somebody
	// chose, where they are meant to run; LR024 says nothing of them.
	NamespaceChosen  bool
	NodeLocalClasses map[string]bool
	Profiles         []ProfileFacts // by name
	Fabrics          map[string]FabricFacts
	// Kinds say where each kind keeps its pods (the chart's modes.yaml);
	// nil for the built-in chart's.
	Kinds modes.Kinds
}

// FactsFrom reads the facts from a values tree with a catalog (the built-in
// chart's, or merged values that override it).
func FactsFrom(v map[string]any) Facts {
	return CatalogFacts(mapAt(v, "catalog")).For(v)
}

// For are the facts with what values say beside the catalog.
func (f Facts) For(v map[string]any) Facts {
	f.RequireDigests = str(v, "global", "imageDigests") == "require"
	return f
}

// CatalogFacts are the facts a catalog gives (all but RequireDigests and
// what the caller knows of the render).
func CatalogFacts(catalog map[string]any) Facts {
	f := Facts{NodeLocalClasses: map[string]bool{}, Fabrics: map[string]FabricFacts{}}
	for name, c := range mapAt(catalog, "storageClasses") {
		if boolean(c, "nodeLocal") {
			f.NodeLocalClasses[name] = true
		}
	}
	accs := mapAt(catalog, "accelerators")
	for _, name := range values.SortedKeys(accs) {
		sel := map[string]string{}
		for k, val := range mapAt(accs[name], "nodeSelector") {
			if s, ok := val.(string); ok {
				sel[k] = s
			}
		}
		fabGbps, _ := num(accs[name], "fabricGbps")
		tcpGbps, _ := num(accs[name], "tcpGbps")
		f.Profiles = append(f.Profiles, ProfileFacts{Name: name, NodeSelector: sel, Resource: str(accs[name], "resource"), Fabric: str(accs[name], "fabric"),
			FabricDevices: fabricDevices(accs[name]), FabricGbps: fabGbps, TCPGbps: tcpGbps,
			CoresPerDevice: integer(accs[name], "coresPerDevice"), DefaultLnc: integer(accs[name], "defaultLnc")})
	}
	for name, fab := range mapAt(catalog, "fabrics") {
		f.Fabrics[name] = FabricFacts{Platform: str(fab, "platform"), Interfaces: len(list(fab, "interfaces")), Resource: str(fab, "resource"), Releases: mapAt(fab, "releases"),
			ComputeDomain: mapAt(fab, "computeDomain") != nil}
	}
	return f
}

// CheckObjects runs every manifest rule over a set of objects.
func CheckObjects(objs []Object, facts Facts) []Finding {
	c := NewObjectChecker(facts)
	for _, o := range objs {
		c.Add(o)
	}
	return c.Findings()
}

var nprocRE = lazy.Regexp(`--nproc[_-]per[_-]node[= ]+(\d+)\b`)

// LR001: torchrun must start one process per device the pod gets.
func nprocMatchesDevices(objs []Object, facts Facts) []Finding {
	var out []Finding
	for _, o := range objs {
		for _, pt := range podTemplates(o) {
			for i, c := range list(pt.spec, "containers") {
				cm, _ := c.(map[string]any)
				m := nprocRE().FindStringSubmatch(commandLine(cm))
				res, n := devicesOf(cm)
				if m == nil || n == 0 {
					continue
				}
				nproc, _ := strconv.ParseInt(m[1], 10, 64)
				want := n
				if res == "aws.amazon.com/neuron" {
					want = n * facts.neuronCores(pt.spec, cm) // one process per (logical) NeuronCore
				}
				if nproc != want {
					out = append(out, objFinding("LR001", Error, o, fmt.Sprintf("%s.containers[%d]", pt.path, i),
						"torchrun starts %d processes per node but the container gets %d x %s (%d processes expected)", nproc, n, res, want))
				}
			}
		}
	}
	return out
}

// LR002: a ReadWriteOnce claim can be attached to one node at a time, so
// every pod that mounts it must run on the same node. Pods count once per
// replica; a pod that must run beside another (a required pod affinity on
// kubernetes.io/hostname) does not add a node. Pods that never run at the
// same time (a download Pod before a run Pod) still count: the scheduler can
// put them on different nodes, and a disk still attached elsewhere blocks
// the next one. A claim of a node-local class is exempt: its volume pins
// every pod that mounts it to its node.
func rwoShared(objs []Object, facts Facts) []Finding {
	rwo := map[string]string{}
	for _, o := range objs {
		if o.kind() == "PersistentVolumeClaim" && !facts.NodeLocalClasses[str(o.Doc, "spec", "storageClassName")] {
			for _, m := range stringList(o.Doc, "spec", "accessModes") {
				if m == "ReadWriteOnce" || m == "ReadWriteOncePod" {
					rwo[o.name()] = m
				}
			}
		}
	}
	type mounter struct {
		o    Object
		pods int64
	}
	byClaim := map[string][]mounter{}
	for _, o := range objs {
		for _, pt := range podTemplates(o) {
			if besideAnother(pt.spec) {
				continue
			}
			for _, v := range list(pt.spec, "volumes") {
				if claim := str(v, "persistentVolumeClaim", "claimName"); rwo[claim] != "" {
					byClaim[claim] = append(byClaim[claim], mounter{o, pt.replicas})
				}
			}
		}
	}
	var out []Finding
	for _, claim := range values.SortedKeys(byClaim) {
		ms := byClaim[claim]
		var pods int64
		var names []string
		for _, m := range ms {
			pods += m.pods
			if !slices.Contains(names, m.o.id()) {
				names = append(names, m.o.id())
			}
		}
		if pods > 1 {
			out = append(out, objFinding("LR002", Error, ms[0].o, "volumes", "%d pods that can run on different nodes (%s) mount claim %s, which is %s and attaches to one node at a time; use ReadWriteMany storage, or run the steps in one pod",
				pods, strings.Join(names, ", "), claim, rwo[claim]))
		}
	}
	return out
}

// besideAnother tells whether a pod must run on the node of other pods: a
// required pod affinity on the node's hostname.
func besideAnother(spec map[string]any) bool {
	for _, term := range list(spec, "affinity", "podAffinity", "requiredDuringSchedulingIgnoredDuringExecution") {
		if str(term, "topologyKey") == "kubernetes.io/hostname" {
			return true
		}
	}
	return false
}

// LR003: an Indexed Job for distributed work needs stable pod DNS names and
// must not retry single ranks.
func indexedJobWiring(objs []Object) []Finding {
	headless := map[string]map[string]any{}
	for _, o := range objs {
		if o.kind() == "Service" && str(o.Doc, "spec", "clusterIP") == "None" {
			headless[o.name()] = mapAt(o.Doc, "spec", "selector")
		}
	}
	var out []Finding
	for _, o := range objs {
		if o.kind() != "Job" || str(o.Doc, "spec", "completionMode") != "Indexed" || integer(o.Doc, "spec", "parallelism") < 2 {
			continue
		}
		sub := str(o.Doc, "spec", "template", "spec", "subdomain")
		switch sel, ok := headless[sub]; {
		case sub == "":
			out = append(out, objFinding("LR003", Error, o, "spec.template.spec.subdomain", "an Indexed Job for several nodes needs subdomain set to a headless Service, or ranks cannot find each other"))
		case !ok:
			out = append(out, objFinding("LR003", Error, o, "spec.template.spec.subdomain", "subdomain %s names no headless Service (clusterIP: None) in this set", sub))
		case str(sel, "job-name") != o.name() && str(sel, "batch.kubernetes.io/job-name") != o.name():
			out = append(out, objFinding("LR003", Error, o, "spec.template.spec.subdomain", "headless Service %s does not select this Job's pods (selector job-name: %s)", sub, o.name()))
		}
		if integer(o.Doc, "spec", "backoffLimit") > 0 {
			out = append(out, objFinding("LR003", Error, o, "spec.backoffLimit", "backoffLimit is %d: a retried rank cannot rejoin a running torch.distributed job; set 0", integer(o.Doc, "spec", "backoffLimit")))
		}
	}
	return out
}

// LR014: a JobSet's failure and success policies name replicated jobs it
// has, and its failure rules have distinct names (JobSet's webhook refuses
// the JobSet otherwise, at apply time).
func jobSetPolicies(objs []Object) []Finding {
	var out []Finding
	for _, o := range objs {
		if o.kind() != "JobSet" {
			continue
		}
		jobs := map[string]bool{}
		for _, rj := range list(o.Doc, "spec", "replicatedJobs") {
			jobs[str(rj, "name")] = true
		}
		known := strings.Join(values.SortedKeys(jobs), ", ")
		targets := func(path string, names []string) {
			for _, n := range names {
				if !jobs[n] {
					out = append(out, objFinding("LR014", Error, o, path, "names replicated job %q, which this JobSet does not have (it has %s): steps that run in the run's pods have no job of their own", n, known))
				}
			}
		}
		targets("spec.successPolicy.targetReplicatedJobs", stringList(o.Doc, "spec", "successPolicy", "targetReplicatedJobs"))
		seen := map[string]int{}
		for i, r := range list(o.Doc, "spec", "failurePolicy", "rules") {
			path := fmt.Sprintf("spec.failurePolicy.rules[%d]", i)
			targets(path+".targetReplicatedJobs", stringList(r, "targetReplicatedJobs"))
			if j, dup := seen[str(r, "name")]; dup {
				out = append(out, objFinding("LR014", Error, o, path+".name", "rule name %q is also the name of rule %d; JobSet needs distinct names", str(r, "name"), j))
			}
			seen[str(r, "name")] = i
		}
	}
	return out
}

// LR004: PET_RDZV_* exist only when the PyTorchJob is elastic; and a
// replica that restarts in place under runPolicy.backoffLimit 0 never
// does: the training operator adds up the container restarts of all the
// job's pods and fails the job when the sum reaches backoffLimit, at the
// first restart for 0 (pkg/core/job.go, pastBackoffLimit).
func petWithoutElastic(objs []Object) []Finding {
	var out []Finding
	for _, o := range objs {
		if o.kind() != "PyTorchJob" {
			continue
		}
		if get(o.Doc, "spec", "runPolicy", "backoffLimit") != nil && integer(o.Doc, "spec", "runPolicy", "backoffLimit") == 0 {
			for _, role := range values.SortedKeys(mapAt(o.Doc, "spec", "pytorchReplicaSpecs")) {
				policy := str(get(o.Doc, "spec", "pytorchReplicaSpecs", role), "restartPolicy")
				if policy == "" {
					policy = "OnFailure" // the operator's default
				}
				if policy != "Never" {
					out = append(out, objFinding("LR004", Warning, o, "spec.pytorchReplicaSpecs."+role+".restartPolicy",
						"restartPolicy %s under runPolicy.backoffLimit 0: the training operator fails the whole job at the first container restart (it counts the restarts of all the job's pods against backoffLimit), so nothing is ever restarted; use restartPolicy Never, or a backoffLimit above 0", policy))
				}
			}
		}
		if get(o.Doc, "spec", "elasticPolicy") != nil {
			continue
		}
		for _, pt := range podTemplates(o) {
			for _, c := range containers(pt.spec) {
				if strings.Contains(commandLine(c), "PET_RDZV_") {
					out = append(out, objFinding("LR004", Error, o, pt.path, "container %s uses PET_RDZV_* but the PyTorchJob has no elasticPolicy, so the operator never sets them and the job never starts; add elasticPolicy or use MASTER_ADDR/RANK", str(c, "name")))
				}
			}
		}
	}
	return out
}

// LR005: RayJob lifecycle and cluster selection.
func rayJobs(objs []Object) []Finding {
	clusters := map[string]string{}
	gangs := map[string]bool{}
	for _, o := range objs {
		if o.kind() == "RayCluster" {
			clusters[o.name()] = o.namespace()
			gangs[o.name()] = volcanoGang(o)
		}
	}
	var out []Finding
	for _, o := range objs {
		if o.kind() != "RayJob" {
			continue
		}
		if _, ok := num(o.Doc, "spec", "ttlSecondsAfterFinished"); ok && !boolean(o.Doc, "spec", "shutdownAfterJobFinishes") {
			out = append(out, objFinding("LR005", Error, o, "spec.ttlSecondsAfterFinished", "ttlSecondsAfterFinished needs shutdownAfterJobFinishes: true (KubeRay 1.4 and later reject the RayJob)"))
		}
		if name := str(o.Doc, "spec", "clusterSelector", "ray.io/cluster"); name != "" {
			if ns, ok := clusters[name]; ok && ns != o.namespace() {
				out = append(out, objFinding("LR005", Error, o, "spec.clusterSelector", "RayCluster %s is in namespace %q but the RayJob is in %q; a RayJob only finds clusters in its own namespace", name, ns, o.namespace()))
			}
			if gangs[name] || volcanoGang(o) {
				out = append(out, objFinding("LR005", Error, o, "spec.clusterSelector", "the RayJob selects RayCluster %s, which is gang-scheduled by Volcano; KubeRay refuses such RayJobs (\"gang scheduling does not support RayJob ... referencing an existing RayCluster\") and they stay Initializing. Give the RayJob its own cluster (spec.rayClusterSpec) with the volcano.sh/queue-name label", name))
			}
		}
	}
	return out
}

// LR006: Volcano gangs must be fixed size and fit their queue.
func gangSizes(objs []Object) []Finding {
	queues := map[string]map[string]any{}
	for _, o := range objs {
		if o.kind() == "Queue" && strings.HasPrefix(str(o.Doc, "apiVersion"), "scheduling.volcano.sh/") {
			queues[o.name()] = mapAt(o.Doc, "spec", "capability")
		}
	}
	var out []Finding
	for _, o := range objs {
		spec, path := rayClusterSpec(o)
		if spec == nil || !volcanoGang(o) {
			continue
		}
		for i, g := range list(spec, "workerGroupSpecs") {
			r, lo, hi := integer(g, "replicas"), integer(g, "minReplicas"), integer(g, "maxReplicas")
			if lo != r || hi != r {
				out = append(out, objFinding("LR006", Error, o, fmt.Sprintf("%s.workerGroupSpecs[%d]", path, i), "gang-scheduled worker group %s has replicas %d, minReplicas %d, maxReplicas %d; all three must be equal so the gang is complete", str(g, "groupName"), r, lo, hi))
			}
		}
		queue := str(o.Doc, "metadata", "labels", "volcano.sh/queue-name")
		capability, ok := queues[queue]
		if !ok {
			continue
		}
		need := map[string]float64{}
		for _, pt := range podTemplates(o) {
			for _, c := range list(pt.spec, "containers") {
				for _, res := range []string{"cpu", "memory"} {
					if q, ok := quantity(get(c, "resources", "requests", res)); ok {
						need[res] += q * float64(pt.replicas)
					}
				}
			}
		}
		for _, res := range []string{"cpu", "memory"} {
			if limit, ok := quantity(capability[res]); ok && need[res] > limit {
				out = append(out, objFinding("LR006", Error, o, "metadata.labels", "the cluster requests %s %s but queue %s allows %v; the gang would never be admitted", res, formatQuantity(res, need[res]), queue, capability[res]))
			}
		}
	}
	return out
}

func formatQuantity(res string, v float64) string {
	if res == "memory" {
		return fmt.Sprintf("%.0fGi", v/(1<<30))
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// LR007: NCCL and Neuron runtimes need a large /dev/shm, which counts
// against the container's memory limit.
func sharedMemory(objs []Object) []Finding {
	var out []Finding
	for _, o := range objs {
		for _, pt := range podTemplates(o) {
			shmVolumes := map[string]float64{}
			for _, v := range list(pt.spec, "volumes") {
				if str(v, "emptyDir", "medium") == "Memory" {
					size, _ := quantity(get(v, "emptyDir", "sizeLimit"))
					shmVolumes[str(v, "name")] = size
				}
			}
			for i, c := range list(pt.spec, "containers") {
				cm, _ := c.(map[string]any)
				res, n := devicesOf(cm)
				if n < 2 {
					continue
				}
				shm, found := -1.0, false
				for _, m := range list(cm, "volumeMounts") {
					if str(m, "mountPath") == "/dev/shm" {
						if size, ok := shmVolumes[str(m, "name")]; ok {
							shm, found = size, true
						}
					}
				}
				field := fmt.Sprintf("%s.containers[%d]", pt.path, i)
				if !found {
					out = append(out, objFinding("LR007", Error, o, field, "container %s uses %d x %s but has no /dev/shm memory volume; the default 64Mi makes NCCL and DataLoader workers fail", str(cm, "name"), n, res))
					continue
				}
				if limit, ok := quantity(get(cm, "resources", "limits", "memory")); ok && shm > 0 && limit < shm {
					out = append(out, objFinding("LR007", Error, o, field, "memory limit %v is below the /dev/shm size %s, which counts against it; the pod is killed when shm fills", get(cm, "resources", "limits", "memory"), formatQuantity("memory", shm)))
				}
			}
		}
	}
	return out
}

// LR010: a tag that moves (latest, or none) makes two runs differ: pulled
// on every start, each start may get another image; pulled once per node,
// nodes that pulled at different times run different ones. Every container
// counts, init and ephemeral ones too.
func mutableImages(objs []Object) []Finding {
	var out []Finding
	for _, o := range objs {
		for _, c := range objcontainers.Of(o.Doc) {
			image := c.Image()
			if !mutableTag(image) {
				continue
			}
			switch policy := str(c.Spec, "imagePullPolicy"); policy {
			case "Always", "":
				// Kubernetes pulls latest, or no tag, on every start when
				// the policy is not set.
				out = append(out, objFinding("LR010", Warning, o, c.Path, "container %s pulls %s with imagePullPolicy Always%s: each start may run a different image; pin a version tag or digest",
					c.Name(), image, map[bool]string{true: " (the default for latest or no tag)"}[policy == ""]))
			default:
				out = append(out, objFinding("LR010", Warning, o, c.Path, "container %s runs %s, a tag that moves: nodes that pulled it at different times run different images (imagePullPolicy %s); pin a version tag or digest",
					c.Name(), image, policy))
			}
		}
	}
	return out
}

// LR010 under global.imageDigests: require: an image named by tag may
// change under it; only a digest names exactly what was reviewed.
func undigestedImages(objs []Object, facts Facts) []Finding {
	if !facts.RequireDigests {
		return nil
	}
	var out []Finding
	for _, o := range objs {
		for _, c := range objcontainers.Of(o.Doc) {
			if image := c.Image(); !strings.Contains(image, "@sha256:") {
				out = append(out, objFinding("LR010", Error, o, c.Path,
					"container %s runs %s, which names no digest, and digests are required (global.imageDigests: require, or lint --require-digests): pin it as %s@sha256:<digest> (crane digest %s prints it)", c.Name(), image, image, image))
			}
		}
	}
	return out
}

func mutableTag(image string) bool {
	if strings.Contains(image, "@sha256:") {
		return false
	}
	_, tag, _ := imageParts(image)
	return tag == "" || tag == "latest"
}

var npRE = lazy.Regexp(`(?:^|\s)(?:-np|-n|--np|-c)[= ]+(\d+)\b`)

// LR012: mpirun must start exactly one rank per slot.
func mpiSlots(objs []Object) []Finding {
	var out []Finding
	for _, o := range objs {
		if o.kind() != "MPIJob" {
			continue
		}
		slots := integer(o.Doc, "spec", "slotsPerWorker")
		if slots < 1 {
			slots = 1
		}
		workers := integer(o.Doc, "spec", "mpiReplicaSpecs", "Worker", "replicas")
		for _, c := range list(o.Doc, "spec", "mpiReplicaSpecs", "Launcher", "template", "spec", "containers") {
			line := commandLine(c.(map[string]any))
			if !strings.Contains(line, "mpirun") {
				continue
			}
			if m := npRE().FindStringSubmatch(line); m != nil {
				np, _ := strconv.ParseInt(m[1], 10, 64)
				if np != workers*slots {
					out = append(out, objFinding("LR012", Error, o, "spec.mpiReplicaSpecs.Launcher", "mpirun -np %d but %d workers x %d slots = %d ranks", np, workers, slots, workers*slots))
				}
			}
		}
	}
	return out
}

// Whole name parts only: HF_TOKEN and AWS_SECRET_ACCESS_KEY, not MAX_NEW_TOKENS.
var secretNameRE = lazy.Regexp(`(?i)(^|_)(token|secret|password|passwd|api_?key|access_?key|secret_?key|credentials?)($|_)`)

// LR016: credentials in plain env end up in every copy of the manifest.
func plainSecrets(objs []Object) []Finding {
	var out []Finding
	for _, o := range objs {
		for _, pt := range podTemplates(o) {
			for _, c := range containers(pt.spec) {
				for _, e := range list(c, "env") {
					name, value := str(e, "name"), str(e, "value")
					if value != "" && secretNameRE().MatchString(name) {
						out = append(out, objFinding("LR016", Error, o, pt.path, "container %s sets %s to a literal value; reference a Secret with valueFrom.secretKeyRef", str(c, "name"), name))
					}
				}
			}
		}
	}
	return out
}

// fabricDevices are the devices of its fabric's resource a profile's
// machine has: fabricDevices, or efaDevices, the profiles' older name.
func fabricDevices(profile any) int64 {
	if n := integer(profile, "fabricDevices"); n > 0 {
		return n
	}
	return integer(profile, "efaDevices")
}
