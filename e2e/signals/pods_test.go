//go:build e2e

package signals

import (
	"bytes"
	"fmt"
	"path"
	"sort"
	"strings"
	"testing"

	"github.com/llmrender/llmrender/internal/tree"
	"github.com/llmrender/llmrender/pipeline"

	"github.com/llmrender/llmrender/e2e/sandbox"
)

// unit is one container of a render, as the kubelet would start it.
type unit struct {
	where string // render: Kind/name: container
	// kind groups the units the chart writes alike (e.g. "MPIJob/launcher"),
	// to show that every kind was run.
	kind      string
	argv      []string
	env       []string
	workDir   string
	dataMount string   // where the claim is mounted, or ""
	dirs      []string // the other mount paths
	programs  []string // stand-ins at absolute paths (the user's programs)
	// files are what an image, an init container or the node's installer
	// leaves for the command (path -> content): the fabric's NCCL
	// environment profile, which it sources.
	files map[string]string
	// plugins are where the node's installer or the pod's init container
	// puts the fabric's NCCL net plugin; they are there in modeFabric only.
	plugins     []string
	pluginRoots []string // the mount paths of the plugin's volumes
	onPath      []string // stand-ins found on PATH (the user's programs)
	// guard: the chart wrote the command and the container reads NCCL's
	// INFO log, as the fabric guard does.
	guard bool
	// short says why the container is not a long-running one; skip why
	// the test cannot run it.
	short, skip string
}

// operatorEnv is what the operators and the kubelet add to a container's
// environment (rank, leader and rendezvous variables) that the commands
// refer to; the pod's own variables come after and win.
var operatorEnv = []string{
	"PATH=" + inside + "/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
	"HOME=/root", "HOSTNAME=llm-0",
	"JOB_COMPLETION_INDEX=0", "RANK=0", "WORLD_SIZE=2", "MASTER_ADDR=llm-master-0", "MASTER_PORT=29500",
	"PET_NNODES=2", "PET_NPROC_PER_NODE=8", "PET_NODE_RANK=0", "PET_MASTER_ADDR=llm-node-0-0", "PET_MASTER_PORT=29500",
	"PET_RDZV_ID=llm", "PET_RDZV_BACKEND=c10d", "PET_RDZV_ENDPOINT=llm-worker-0:29400",
	"LWS_LEADER_ADDRESS=llm-0.llm", "LWS_GROUP_SIZE=2", "LWS_WORKER_INDEX=0",
}

// units lists the containers of a render: every container and init
// container of every pod template, the Ray head and workers with the
// command KubeRay gives them, and the RayJob's entrypoint, which the Ray
// dashboard runs with /bin/sh.
func units(t *testing.T, render string, res *pipeline.Result) []*unit {
	t.Helper()
	objs, err := pipeline.Decode(res.Objects)
	if err != nil {
		t.Fatal(err)
	}
	progs := sandbox.ValuePrograms(res.Values)
	profiles := envProfiles(res.Values)
	workingDir, _ := tree.Get(res.Values, "workload", "workingDir").(string)
	var out []*unit
	for _, o := range objs {
		kind, _ := o.Doc["kind"].(string)
		name, _ := tree.Get(o.Doc, "metadata", "name").(string)
		at := fmt.Sprintf("%s: %s/%s", render, kind, name)
		if kind == "RayJob" {
			out = append(out, rayUnits(at, o.Doc, progs, workingDir)...)
			continue
		}
		topology := operatorTopology(o.Doc)
		walkPodSpecs(o.Doc, func(spec map[string]any) {
			for _, key := range []string{"initContainers", "containers"} {
				for _, c := range maps(spec[key]) {
					if c["image"] == nil {
						continue // a patch of a container, not one
					}
					u := newUnit(at, kind, spec, c, progs)
					u.setOperatorEnv(topology)
					u.argv = append(strs(c["command"]), strs(c["args"])...)
					if len(strs(c["command"])) == 0 {
						u.skip = "runs its image's entrypoint"
						u.guard = false
					}
					u.resolve()
					out = append(out, u)
				}
			}
		})
	}
	// The fabric's NCCL plugin comes with its environment profile, beside
	// its libraries (lib64/) or in scripts/ beside them.
	for _, u := range out {
		u.files = map[string]string{}
		for _, root := range u.pluginRoots {
			u.plugins = append(u.plugins, path.Join(root, "lib64", "libnccl-net.so"))
			for _, name := range profiles {
				text, ok := sandbox.ProfileText[name]
				if !ok {
					t.Fatalf("catalog.fabrics names the NCCL environment profile %s, which the test does not know: add what it sets to sandbox.ProfileText", name)
				}
				u.files[path.Join(root, "lib64", name)] = text
				u.files[path.Join(root, "scripts", name)] = text
			}
		}
	}
	return out
}

// envProfiles are the names of the fabrics' NCCL environment profiles
// (catalog.fabrics.*.envProfile).
func envProfiles(v map[string]any) []string {
	var out []string
	fabrics, _ := tree.Get(v, "catalog", "fabrics").(map[string]any)
	for _, f := range fabrics {
		if name, ok := tree.Get(f, "envProfile").(string); ok && name != "" {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// newUnit fills what a container's pod and fields give: environment,
// working directory, mounts.
func newUnit(at, kind string, spec, c map[string]any, progs []string) *unit {
	name, _ := c["name"].(string)
	u := &unit{where: at + ": " + name, kind: kind + "/" + kindName(name), workDir: "/"}
	if wd, ok := c["workingDir"].(string); ok && wd != "" {
		u.workDir = wd
	}
	claims := map[string]bool{}
	plugins := map[string]bool{}
	for _, v := range maps(spec["volumes"]) {
		name := fmt.Sprint(v["name"])
		if v["persistentVolumeClaim"] != nil {
			claims[name] = true
		}
		host, _ := tree.Get(v, "hostPath", "path").(string)
		if sandbox.PluginVolumes["hostPath:"+host] || (v["emptyDir"] != nil && sandbox.PluginVolumes["emptyDir:"+name]) {
			plugins[name] = true
		}
	}
	for _, m := range maps(c["volumeMounts"]) {
		p := fmt.Sprint(m["mountPath"])
		switch name := fmt.Sprint(m["name"]); {
		case claims[name]:
			u.dataMount = p
		case plugins[name]:
			u.pluginRoots = append(u.pluginRoots, p)
			fallthrough
		default:
			u.dirs = append(u.dirs, p)
		}
	}
	u.dirs = append(u.dirs, u.workDir)
	vals := map[string]string{}
	u.env = append(u.env, operatorEnv...)
	for _, kv := range operatorEnv {
		k, v, _ := strings.Cut(kv, "=")
		vals[k] = v
	}
	for _, e := range maps(c["env"]) {
		n := fmt.Sprint(e["name"])
		var v string
		switch from, _ := e["valueFrom"].(map[string]any); {
		case from == nil:
			v = sandbox.Expand(fmt.Sprint(e["value"]), vals)
			if e["value"] == nil {
				v = ""
			}
		case from["secretKeyRef"] != nil:
			v = "stand-in-secret"
		default:
			v = "0" // a field of the pod (its rank label, ...)
		}
		if n == "NCCL_DEBUG" && v == "INFO" {
			u.guard = true
		}
		if n == "PATH" {
			v = inside + "/bin:" + v
		}
		vals[n] = v
		u.env = append(u.env, n+"="+v)
	}
	for _, p := range progs {
		switch {
		case strings.HasPrefix(p, "/"):
			u.programs = append(u.programs, p)
		case strings.Contains(p, "/"):
			u.programs = append(u.programs, path.Join(u.workDir, p))
		default:
			u.onPath = append(u.onPath, p)
		}
	}
	return u
}

// operatorTopology is what an operator tells the pods of an object about
// its size, as the operator derives it: the training operator's PET_NNODES
// and WORLD_SIZE (the replicas; min:max when elastic), the LeaderWorkerSet
// controller's LWS_GROUP_SIZE.
func operatorTopology(doc map[string]any) map[string]string {
	out := map[string]string{}
	switch doc["kind"] {
	case "PyTorchJob":
		var n int64
		if specs, ok := tree.Get(doc, "spec", "pytorchReplicaSpecs").(map[string]any); ok {
			for _, r := range specs {
				n += toInt64(tree.Get(r, "replicas"))
			}
		}
		out["PET_NNODES"], out["WORLD_SIZE"] = fmt.Sprint(n), fmt.Sprint(n)
		if e, ok := tree.Get(doc, "spec", "elasticPolicy").(map[string]any); ok {
			out["PET_NNODES"] = fmt.Sprintf("%d:%d", toInt64(e["minReplicas"]), toInt64(e["maxReplicas"]))
		}
	case "LeaderWorkerSet":
		out["LWS_GROUP_SIZE"] = fmt.Sprint(toInt64(tree.Get(doc, "spec", "leaderWorkerTemplate", "size")))
	}
	return out
}

func toInt64(v any) int64 {
	switch n := v.(type) {
	case int:
		return int64(n)
	case int64:
		return n
	case float64:
		return int64(n)
	}
	return 0
}

// setOperatorEnv puts an object's topology in place of the test's
// defaults in operatorEnv; the container's own variables still win.
func (u *unit) setOperatorEnv(topology map[string]string) {
	for i, kv := range u.env {
		k, _, _ := strings.Cut(kv, "=")
		if v, ok := topology[k]; ok && i < len(operatorEnv) {
			u.env[i] = k + "=" + v
		}
	}
}

// resolve turns the command into what the kubelet runs: $(VAR) from the
// environment, and the shells the image's PATH finds as the host's.
func (u *unit) resolve() {
	vals := map[string]string{}
	for _, kv := range u.env {
		k, v, _ := strings.Cut(kv, "=")
		vals[k] = v
	}
	for i, a := range u.argv {
		u.argv[i] = sandbox.Expand(a, vals)
	}
	if len(u.argv) > 0 {
		switch u.argv[0] {
		case "sh":
			u.argv[0] = "/bin/sh"
		case "bash":
			u.argv[0] = "/bin/bash"
		default:
			if strings.HasPrefix(u.argv[0], "/") && u.argv[0] != "/bin/sh" && u.argv[0] != "/bin/bash" {
				u.programs = append(u.programs, u.argv[0])
			}
		}
	}
	if strings.HasSuffix(u.kind, "/nccl-plugin-installer") {
		u.short = "copies the NCCL plugin into the pod and ends"
	}
}

// rayUnits are a RayJob's head and workers with the command KubeRay
// (v1.6, BuildPod) gives a Ray container: its own command and args, when
// it has them, joined, then "&&", then ulimit and the ray start command it
// generates, run by /bin/bash -c; and the entrypoint.
func rayUnits(at string, doc map[string]any, progs []string, workingDir string) []*unit {
	var out []*unit
	cluster, _ := tree.Get(doc, "spec", "rayClusterSpec").(map[string]any)
	groups := []map[string]any{}
	if h, ok := cluster["headGroupSpec"].(map[string]any); ok {
		groups = append(groups, h)
	}
	groups = append(groups, maps(cluster["workerGroupSpecs"])...)
	var head *unit
	for i, g := range groups {
		spec, _ := tree.Get(g, "template", "spec").(map[string]any)
		annotations, _ := tree.Get(g, "template", "metadata", "annotations").(map[string]any)
		ctrs := maps(spec["containers"])
		if len(ctrs) == 0 {
			continue
		}
		c := ctrs[0]
		u := newUnit(at, "RayJob", spec, c, progs)
		u.guard = false // KubeRay writes the command
		params := map[string]string{"block": "true"}
		for k, v := range maps1(g["rayStartParams"]) {
			params[k] = fmt.Sprint(v)
		}
		start := "ray start --head"
		if i > 0 {
			start = "ray start"
			params["address"] = "llm-head-svc:6379"
		}
		cmd := ""
		for _, w := range append(strs(c["command"]), strs(c["args"])...) {
			cmd += " " + w + " "
		}
		u.argv = append(strs(c["command"]), strs(c["args"])...)
		if annotations["ray.io/overwrite-container-cmd"] != "true" && !strings.Contains(cmd, "ray start") {
			generated := "ulimit -n 65536; " + start + " " + paramString(params)
			if cmd != "" {
				generated = cmd + " && " + generated
			}
			u.argv = []string{"/bin/bash", "-c", "--", generated}
		}
		u.resolve()
		if i == 0 {
			head = u
		}
		out = append(out, u)
	}
	if ep, ok := tree.Get(doc, "spec", "entrypoint").(string); ok && head != nil {
		u := *head
		u.where = at + ": entrypoint"
		u.kind = "RayJob/entrypoint"
		u.argv = []string{"/bin/sh", "-c", ep}
		// The entrypoint changes to workload.workingDir, which the image
		// (or the claim) has.
		if workingDir != "" {
			u.dirs = append(append([]string{}, u.dirs...), workingDir)
		}
		out = append(out, &u)
	}
	return out
}

// paramString is KubeRay's convertParamMap: --key=value in key order, a
// bare --key for "true", nothing for "false".
func paramString(params map[string]string) string {
	keys := make([]string, 0, len(params))
	for k := range params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b bytes.Buffer
	for _, k := range keys {
		switch v := params[k]; strings.ToLower(v) {
		case "true":
			fmt.Fprintf(&b, " --%s ", k)
		case "false":
		default:
			fmt.Fprintf(&b, " --%s=%s ", k, v)
		}
	}
	return b.String()
}

// kindName groups container names: the wait for a step is one kind
// whichever step it waits for.
func kindName(name string) string {
	if strings.HasPrefix(name, "wait-for-") {
		return "wait-for-*"
	}
	return name
}

func walkPodSpecs(v any, fn func(map[string]any)) {
	switch x := v.(type) {
	case map[string]any:
		if _, ok := x["containers"].([]any); ok {
			fn(x)
			return
		}
		for _, e := range x {
			walkPodSpecs(e, fn)
		}
	case []any:
		for _, e := range x {
			walkPodSpecs(e, fn)
		}
	}
}

func maps(v any) []map[string]any {
	var out []map[string]any
	l, _ := v.([]any)
	for _, e := range l {
		if m, ok := e.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

func maps1(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func strs(v any) []string {
	l, _ := v.([]any)
	out := []string{}
	for _, e := range l {
		out = append(out, fmt.Sprint(e))
	}
	return out
}
