package rules

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/llmrender/llmrender/values"
	"github.com/llmrender/llmrender/workload"
)

// Storage: which pods can share the claim (LR002), which classes provide
// its access mode (LR018), and what a claim must hold (LR013).

// LR002: a ReadWriteOnce or node-local volume cannot be shared by nodes.
func sharedStorage(w *workload.Workload, pos *values.Positions) []Finding {
	class := str(w.V, "storage", "storageClassName")
	mode := w.AccessMode()
	if !w.SingleNode() {
		return nil
	}
	who := ""
	// Pods of the run other than the nodes' workers mount the claim too:
	// the MPI launcher, the Ray head.
	switch other := w.Row().BesideWorkers; {
	case w.Pods() > 1:
		who = w.PodsText()
	case other != "":
		who = fmt.Sprintf("%s and the worker", other)
	case !w.NodeLocal() && (boolean(w.V, "shell", "enabled") || boolean(w.V, "tensorboard", "enabled")):
		// A node-local volume pins every pod to its node; a zonal disk does
		// not, and a shell that holds it on another node blocks the run.
		ptr := "/shell/enabled"
		if !boolean(w.V, "shell", "enabled") {
			ptr = "/tensorboard/enabled"
		}
		return []Finding{at(pos, "LR002", Error, ptr, fmt.Sprintf(
			"the shell or TensorBoard pod and the run pod cannot share a %s disk: the shell can land on another node and hold the disk there, and the run would wait for it forever; use ReadWriteMany storage, a node-local class, or disable them", mode))}
	default:
		return nil
	}
	if w.NodeLocal() {
		ptr := "/storage/nodeLocal"
		if !boolean(w.V, "storage", "nodeLocal") {
			ptr = "/storage/storageClassName"
		}
		return []Finding{at(pos, "LR002", Error, ptr, fmt.Sprintf(
			"%s cannot share node-local storage (class %q pins the volume to one node); use a ReadWriteMany class such as NFS, Filestore or FSx",
			who, class))}
	}
	return []Finding{at(pos, "LR002", Error, "/storage/accessMode", fmt.Sprintf(
		"%s cannot share a %s volume, which one node at a time can mount; use ReadWriteMany storage", who, mode))}
}

// LR018: a claim asks for an access mode its storage class cannot provide,
// so it stays Pending and so does every pod that mounts it.
func storageClassModes(w *workload.Workload, pos *values.Positions) []Finding {
	if !boolean(w.V, "storage", "create") {
		return nil // an existing claim: its class is not ours to check
	}
	mode := w.AccessMode()
	class := str(w.V, "storage", "storageClassName")
	ptr := "/storage/storageClassName"
	if class == "" {
		if mode != "ReadWriteMany" {
			return nil
		}
		ptr := podsCause(w, pos)
		if str(w.V, "storage", "accessMode") != "" {
			ptr = "/storage/accessMode"
		}
		return []Finding{at(pos, "LR018", Error, ptr, fmt.Sprintf(
			"the claim must be ReadWriteMany (%s mount it), but storage.storageClassName is empty and a cluster's default class is usually ReadWriteOnce block storage (GKE standard-rwo, EKS gp2/gp3, AKS managed-csi); set storage.storageClassName to a class that provides ReadWriteMany: %s",
			w.PodsText(), strings.Join(classesWith(w, mode), ", ")))}
	}
	entry := w.StorageClass()
	if entry == nil {
		if mode == "ReadWriteOnce" {
			return nil
		}
		return []Finding{at(pos, "LR018", Warning, ptr, fmt.Sprintf(
			"storage class %q is not in catalog.storageClasses, so whether it provides %s is unknown; the claim stays Pending if it does not. Add the class to catalog.storageClasses to check it",
			class, mode))}
	}
	modes := stringList(entry, "accessModes")
	if slices.Contains(modes, mode) {
		return nil
	}
	msg := fmt.Sprintf("storage class %q provides %s, not %s: the claim would stay Pending", class, strings.Join(modes, ", "), mode)
	if others := classesWith(w, mode); len(others) > 0 {
		msg += "; classes that provide it: " + strings.Join(others, ", ")
	}
	return []Finding{at(pos, "LR018", Error, ptr, msg)}
}

// classesWith names catalog storage classes that provide an access mode.
// Where the cluster is known (the profile's platform, else the selected
// class's) they are that platform's, its usual ones first (their
// preference); otherwise each platform's two usual ones, with the
// platform's name.
func classesWith(w *workload.Workload, mode string) []string {
	classes := mapAt(w.V, "catalog", "storageClasses")
	platform := w.Platform()
	if platform == "" {
		platform = str(classes, str(w.V, "storage", "storageClassName"), "platform")
	}
	perPlatform := map[string][]string{}
	var platforms []string
	for _, name := range values.SortedKeys(classes) {
		c := classes[name]
		p := str(c, "platform")
		if !slices.Contains(stringList(c, "accessModes"), mode) || boolean(c, "nodeLocal") {
			continue
		}
		if _, seen := perPlatform[p]; !seen {
			platforms = append(platforms, p)
		}
		perPlatform[p] = append(perPlatform[p], name)
	}
	for _, names := range perPlatform {
		slices.SortStableFunc(names, func(a, b string) int { return preference(classes, a) - preference(classes, b) })
	}
	if names := perPlatform[platform]; platform != "" && len(names) > 0 {
		return []string{strings.Join(names, ", ")}
	}
	var out []string
	for _, p := range platforms {
		names := perPlatform[p]
		if len(names) > 2 {
			names = names[:2]
		}
		entry := strings.Join(names, ", ")
		if p != "" {
			entry += " (" + p + ")"
		}
		out = append(out, entry)
	}
	return out
}

// preference is where a storage class comes among its platform's in a
// suggestion: its catalog preference; a class without one comes after
// every class with one.
func preference(classes map[string]any, name string) int {
	if n := integer(classes, name, "preference"); n > 0 {
		return int(n)
	}
	return math.MaxInt32
}

// LR013: an explicit storage size smaller than the checkpoint cannot work.
func storageSize(w *workload.Workload, pos *values.Positions) []Finding {
	if !boolean(w.V, "storage", "create") && str(w.V, "storage", "claimName") == "" {
		return []Finding{at(pos, "LR013", Error, "/storage/create", "storage.create is false but storage.claimName is empty: name the existing PersistentVolumeClaim to mount, or set storage.create: true")}
	}
	size := str(w.V, "storage", "size")
	if size == "" || !boolean(w.V, "storage", "create") || !boolean(w.V, "download", "enabled") {
		return nil
	}
	have, ok := quantity(size)
	need, _ := num(w.Model, "checkpointBytes")
	if ok && have < need*1.1 {
		return []Finding{at(pos, "LR013", Error, "/storage/size", fmt.Sprintf("%s holds less than the %s checkpoint of %s plus 10%%; leave storage.size empty to compute it",
			size, workload.Human(need), w.ModelName))}
	}
	if c := w.ClaimNeed(); ok && c.Checkpoints > 0 && have < need*1.1+float64(c.Checkpoints)*c.CheckpointBytes {
		return []Finding{at(pos, "LR013", Warning, "/storage/size", fmt.Sprintf("%s holds the %s checkpoint of %s but not also the %d training checkpoint(s) of %s (weights and AdamW state) the run keeps on the claim; leave storage.size empty to compute it, set output.uri to upload them, or lower storage.checkpointsKept",
			size, workload.Human(need), w.ModelName, c.Checkpoints, workload.Human(c.CheckpointBytes)))}
	}
	return nil
}
