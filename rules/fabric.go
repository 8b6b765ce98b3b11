package rules

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/llmrender/llmrender/modes"
)

// The fabric rules. A multi-node job whose NCCL falls back to TCP over the
// primary NIC runs, and finishes, at a fraction of the bandwidth: nothing
// fails, so these rules are the only place the mistake shows. LR019 checks
// the choice in values (the built-in chart), LR020 the wiring of any pod.

// ProfileFacts is what the manifest rules know of an accelerator profile:
// how its pods select its nodes, and its fabric.
type ProfileFacts struct {
	Name           string
	NodeSelector   map[string]string
	Resource       string // the device resource its nodes offer ("" for none)
	Fabric         string
	FabricDevices  int64   // devices of the fabric's resource a node has (EFA)
	FabricGbps     float64 // what the fabric gives a node
	TCPGbps        float64 // what the primary NIC alone gives a node
	CoresPerDevice int64   // physical NeuronCores per device (Trainium)
	DefaultLnc     int64   // logical NeuronCore config when the pod sets none
}

// FabricFacts is what the manifest rules know of a fabric.
type FabricFacts struct {
	Platform   string
	Interfaces int            // extra NICs a pod attaches (GKE)
	Resource   string         // the device resource pods request for it (EFA); "" for a fabric of NICs
	Releases   map[string]any // release name -> {daemon, plugin}
	// ComputeDomain: pods join the fabric with an IMEX channel claimed
	// from a ComputeDomain's template (multi-node NVLink).
	ComputeDomain bool
}

// profileOf is the profile whose node selector a pod spec carries (every
// label of the profile's selector, with its value), or nil.
func (f Facts) profileOf(spec map[string]any) *ProfileFacts {
	sel := mapAt(spec, "nodeSelector")
	var best *ProfileFacts
	for i, p := range f.Profiles {
		if len(p.NodeSelector) == 0 || best != nil && len(p.NodeSelector) <= len(best.NodeSelector) {
			continue
		}
		match := true
		for k, v := range p.NodeSelector {
			if s, _ := sel[k].(string); s != v {
				match = false
				break
			}
		}
		// The most specific profile whose selector the pod's holds (a
		// one-host TPU slice's, beside its generation's).
		if match {
			best = &f.Profiles[i]
		}
	}
	return best
}

// neuronCores is the NeuronCores a process count per Trainium device is
// for: the profile's physical cores grouped by the LNC the container sets
// (NEURON_LOGICAL_NC_CONFIG) or the profile's default; 2 (trn1) for pods
// of no known profile.
func (f Facts) neuronCores(spec, c map[string]any) int64 {
	p := f.profileOf(spec)
	if p == nil || p.CoresPerDevice == 0 {
		return 2
	}
	lnc := max(p.DefaultLnc, 1)
	for _, e := range list(c, "env") {
		if str(e, "name") == "NEURON_LOGICAL_NC_CONFIG" {
			if n, err := strconv.ParseInt(str(e, "value"), 10, 64); err == nil && n > 0 {
				lnc = n
			}
		}
	}
	return max(p.CoresPerDevice/lnc, 1)
}

// podsEnd tells whether the pods of a template run to completion, so that
// a container that never exits keeps them from ever completing.
func podsEnd(o Object, pt podTemplate) bool {
	switch k, _ := o.kindRow(); k.Ends {
	case modes.Always:
		return true
	case modes.ByRestartPolicy:
		return str(pt.spec, "restartPolicy") != "Always"
	}
	return false
}

// LR020: the fabric wiring of accelerator pods, in any manifests.
func fabricWiring(objs []Object, facts Facts) []Finding {
	var out []Finding
	for _, o := range objs {
		pts := podTemplates(o)
		pods := int64(0)
		for _, pt := range pts {
			if acceleratorPod(pt.spec) {
				pods += pt.replicas
			}
		}
		// The pods that talk to one another: a Deployment's replicas
		// serve alone, and a LeaderWorkerSet's groups do.
		switch k, _ := o.kindRow(); k.Peers {
		case modes.OnePeer:
			pods = min(pods, 1)
		case modes.GroupPeers:
			pods = min(pods, max(integer(mapAt(o.Doc, modes.Path(k.Pods.At)...), "size"), 1))
		}
		for _, pt := range pts {
			if !acceleratorPod(pt.spec) {
				continue
			}
			out = append(out, fabricMissing(o, pt, facts, pods)...)
			out = append(out, gkeInterfaces(o, pt, facts)...)
			out = append(out, daemonWiring(o, pt, facts)...)
			out = append(out, pluginVolume(o, pt)...)
			out = append(out, forcedSockets(o, pt, facts)...)
		}
		out = append(out, unevenDevices(o, pts, facts)...)
	}
	return out
}

// unevenDevices finds an object whose accelerator pods do not all request
// a fabric's devices (EFA, InfiniBand) when some do.
func unevenDevices(o Object, pts []podTemplate, facts Facts) []Finding {
	if len(pts) < 2 {
		return nil // one pod template cannot be uneven with itself
	}
	var out []Finding
	for _, name := range slices.Sorted(maps.Keys(facts.Fabrics)) {
		res := facts.Fabrics[name].Resource
		if res == "" {
			continue
		}
		var with, without []string
		for _, pt := range pts {
			switch {
			case !acceleratorPod(pt.spec):
			case resourceCount(pt.spec, res) > 0:
				with = append(with, pt.path)
			default:
				without = append(without, pt.path)
			}
		}
		if len(with) > 0 && len(without) > 0 {
			out = append(out, objFinding("LR020", Error, o, strings.Join(without, ", "),
				"requests no %s devices while %s does: every rank needs the fabric, or the collective runs at the speed of the slowest link (%s)", name, strings.Join(with, ", "), res))
		}
	}
	return out
}

// acceleratorPod tells whether a pod spec requests accelerator devices.
func acceleratorPod(spec map[string]any) bool {
	for _, c := range containers(spec) {
		if _, n := devicesOf(c); n > 0 {
			return true
		}
	}
	return false
}

func efaDevices(spec map[string]any) int64 { return resourceCount(spec, "vpc.amazonaws.com/efa") }

// resourceCount is the most of a resource one container of a pod asks for.
func resourceCount(spec map[string]any, resource string) int64 {
	n := int64(0)
	for _, c := range containers(spec) {
		n = max(n, integer(c, "resources", "limits", resource), integer(c, "resources", "requests", resource))
	}
	return n
}

// fabricOfPod is the fabric of the profile whose nodes a pod template
// selects, nil when the pod selects no profile with a fabric the facts
// know.
func (f Facts) fabricOfPod(spec map[string]any) (*ProfileFacts, *FabricFacts) {
	p := f.profileOf(spec)
	if p == nil || p.Fabric == "" {
		return p, nil
	}
	fab, ok := f.Fabrics[p.Fabric]
	if !ok {
		return p, nil
	}
	return p, &fab
}

// fabricAttached tells whether a pod template carries a fabric's wiring:
// for a fabric of devices (EFA) a request of its resource, for a fabric of
// NICs (GPUDirect on GKE) extra interfaces or the host's network; DRA
// claims either way (managed RDMA, the EFA DRA driver). With no fabric
// known, any of them but the host's network, which alone says nothing.
func fabricAttached(pt podTemplate, fab *FabricFacts) bool {
	claims := len(list(pt.spec, "resourceClaims")) > 0
	nics := str(pt.meta, "annotations", "networking.gke.io/interfaces") != ""
	switch {
	case fab == nil:
		return claims || nics || efaDevices(pt.spec) > 0
	case fab.Resource != "":
		return claims || resourceCount(pt.spec, fab.Resource) > 0
	case fab.ComputeDomain:
		return claims
	}
	return claims || nics || boolean(pt.spec, "hostNetwork")
}

// fabricMissing finds accelerator pods that talk to other nodes on a
// machine whose profile has a fabric, without that fabric's wiring: on
// every cloud the collectives then run over the primary NIC, at a fraction
// of the bandwidth, and nothing fails. A pod marked llmrender.dev/fabric:
// tcp opted out on purpose (LR019 warns about that in values).
func fabricMissing(o Object, pt podTemplate, facts Facts, pods int64) []Finding {
	p, fab := facts.fabricOfPod(pt.spec)
	if p == nil || p.Fabric == "" || pods < 2 || str(pt.meta, "annotations", "llmrender.dev/fabric") == "tcp" || fabricAttached(pt, fab) {
		return nil
	}
	field := strings.TrimSuffix(pt.path, "spec") + "metadata.annotations"
	missing := fmt.Sprintf("nothing attaches the fabric %s", p.Fabric)
	switch {
	case fab != nil && fab.Resource != "":
		field = pt.path + ".containers"
		for i, c := range list(pt.spec, "containers") {
			cm, _ := c.(map[string]any)
			if _, n := devicesOf(cm); n > 0 {
				field = fmt.Sprintf("%s.containers[%d].resources", pt.path, i)
				break
			}
		}
		devices := "its devices"
		if p.FabricDevices > 0 {
			devices = fmt.Sprintf("the %d devices a node has", p.FabricDevices)
		}
		missing = fmt.Sprintf("no request of %s attaches %s of %s", fab.Resource, devices, p.Fabric)
	case fab != nil && fab.ComputeDomain:
		return []Finding{objFinding("LR020", Warning, o, pt.path+".resourceClaims",
			"%d pods on %s nodes claim no IMEX channel (from a ComputeDomain's ResourceClaimTemplate): NCCL on GPUs with an NVLink fabric stops at start without one (\"MNNVL ... is available but not working\") unless NCCL_MNNVL_ENABLE=0; annotate the pod template with llmrender.dev/fabric: tcp if that is intended",
			pods, p.Name)}
	case fab != nil:
		missing = fmt.Sprintf("no networking.gke.io/interfaces, host network or RDMA claim attaches the %d NICs of %s", fab.Interfaces, p.Fabric)
	}
	bandwidth := ""
	if p.TCPGbps > 0 && p.FabricGbps > 0 {
		bandwidth = fmt.Sprintf(" (about %g Gbit/s per node instead of %g)", p.TCPGbps, p.FabricGbps)
	}
	return []Finding{objFinding("LR020", Warning, o, field,
		"%d pods on %s nodes talk over the primary NIC only: %s, so the collectives fall back to TCP%s; annotate the pod template with llmrender.dev/fabric: tcp if that is intended",
		pods, p.Name, missing, bandwidth)}
}

// gkeInterfaces checks GKE multi-networking where a pod has it: the
// interface annotation parses and names as many NICs as the profile's
// fabric attaches.
func gkeInterfaces(o Object, pt podTemplate, facts Facts) []Finding {
	p, fab := facts.fabricOfPod(pt.spec)
	if fab == nil || fab.Platform != "GKE" {
		return nil
	}
	meta := strings.TrimSuffix(pt.path, "spec") + "metadata.annotations"
	raw := str(pt.meta, "annotations", "networking.gke.io/interfaces")
	if raw == "" {
		return nil
	}
	var ifaces []map[string]any
	if err := decodeJSON(raw, &ifaces); err != nil {
		return []Finding{objFinding("LR020", Error, o, meta+".networking.gke.io/interfaces", "is not a JSON list of interfaces (%v); GKE rejects the pod", err)}
	}
	extra := 0
	for _, i := range ifaces {
		if str(i, "interfaceName") != "eth0" {
			extra++
		}
	}
	if extra != fab.Interfaces {
		return []Finding{objFinding("LR020", Error, o, meta+".networking.gke.io/interfaces",
			"attaches %d extra NICs, but %s machines have %d for %s: NCCL uses only the NICs it gets", extra, p.Name, fab.Interfaces, p.Fabric)}
	}
	return nil
}

// daemonWiring checks a GPUDirect-TCPX/TCPXO receive daemon: a native
// sidecar in batch workloads (a plain container never exits, so the Job
// never completes), its device files, and TCPXO's aperture devices.
func daemonWiring(o Object, pt podTemplate, facts Facts) []Finding {
	var out []Finding
	daemon := ""
	for _, key := range []string{"initContainers", "containers"} {
		for i, c := range list(pt.spec, key) {
			if !strings.Contains(str(c, "image"), "tcpgpudmarxd") {
				continue
			}
			daemon = str(c, "name")
			field := fmt.Sprintf("%s.%s[%d]", pt.path, key, i)
			sidecar := str(c, "restartPolicy") == "Always"
			switch {
			case key == "containers" && podsEnd(o, pt):
				out = append(out, objFinding("LR020", Error, o, field,
					"the receive daemon %s runs as a container, so the pod never completes when the program exits; make it a native sidecar: an init container with restartPolicy: Always", daemon))
			case key == "initContainers" && !sidecar:
				out = append(out, objFinding("LR020", Error, o, field,
					"the receive daemon %s is an init container without restartPolicy: Always: it never exits, so the program never starts", daemon))
			}
			if !boolean(pt.spec, "hostNetwork") && str(pt.meta, "annotations", "devices.gke.io/container."+daemon) == "" {
				out = append(out, objFinding("LR020", Error, o, field,
					"the receive daemon %s gets no GPU device files: the pod template needs the devices.gke.io/container.%s annotation", daemon, daemon))
			}
			if strings.Contains(str(c, "image"), "tcpxo") {
				for j, nc := range list(pt.spec, "containers") {
					if _, n := devicesOf(nc.(map[string]any)); n > 0 && !mountsPath(nc, "/dev/aperture_devices") {
						out = append(out, objFinding("LR020", Error, o, fmt.Sprintf("%s.containers[%d]", pt.path, j),
							"GPUDirect-TCPXO needs /dev/aperture_devices (a hostPath volume mounted at the same path) in the containers that run NCCL"))
					}
				}
			}
		}
	}
	out = append(out, pluginPair(o, pt, facts)...)
	return out
}

// pluginPair checks that a TCPX/TCPXO daemon and the plugin installed in
// the same pod come from one release (tags as Google publishes them).
func pluginPair(o Object, pt podTemplate, facts Facts) []Finding {
	daemon, plugin := "", ""
	for _, c := range containers(pt.spec) {
		img := str(c, "image")
		switch {
		case strings.Contains(img, "tcpgpudmarxd"):
			daemon = img
		case strings.Contains(img, "nccl-plugin-gpudirecttcpx"):
			plugin = img
		}
	}
	if daemon == "" || plugin == "" || strings.Contains(daemon, "/gpudirect-tcpxo/") != strings.Contains(plugin, "/gpudirect-tcpxo/") {
		return nil
	}
	kind := "gpudirect-tcpx"
	if strings.Contains(daemon, "/gpudirect-tcpxo/") {
		kind = "gpudirect-tcpxo"
	}
	if msg := pairFinding(kind, facts.Fabrics[kind].Releases, daemon, plugin); msg != "" && !strings.HasPrefix(msg, "cannot") {
		return []Finding{objFinding("LR020", Error, o, pt.path, "%s", msg)}
	}
	return nil
}

// forcedSockets finds settings that send the data of a pod wired for its
// fabric over sockets on the primary NIC: NCCL_NET=Socket, a provider other
// than efa, RDMA disabled, eth0 among the GPUDirect data NICs, or a
// hostPath of /dev/infiniband on EFA (the EFA device plugin mounts the
// devices it allocates; a hostPath of all of them breaks that).
func forcedSockets(o Object, pt podTemplate, facts Facts) []Finding {
	_, fab := facts.fabricOfPod(pt.spec)
	if !fabricAttached(pt, fab) {
		return nil
	}
	efa := efaDevices(pt.spec) > 0
	var out []Finding
	for i, c := range list(pt.spec, "containers") {
		field := fmt.Sprintf("%s.containers[%d].env", pt.path, i)
		env := map[string]string{}
		for _, e := range list(c, "env") {
			env[str(e, "name")] = str(e, "value")
		}
		bad := ""
		switch {
		case strings.EqualFold(env["NCCL_NET"], "socket"):
			bad = "NCCL_NET=" + env["NCCL_NET"] + " makes NCCL use sockets on the primary NIC"
		case efa && env["FI_PROVIDER"] != "" && env["FI_PROVIDER"] != "efa":
			bad = "FI_PROVIDER=" + env["FI_PROVIDER"] + " keeps libfabric off the EFA devices"
		case env["NCCL_IB_DISABLE"] == "1" && len(list(pt.spec, "resourceClaims")) > 0:
			bad = "NCCL_IB_DISABLE=1 turns off the RDMA NICs"
		case slices.Contains(strings.Split(env["NCCL_GPUDIRECTTCPX_SOCKET_IFNAME"]+","+env["NCCL_FASTRAK_IFNAME"], ","), "eth0"):
			bad = "eth0 is among the GPUDirect data NICs: it is the primary NIC, for control traffic"
		}
		if bad != "" {
			out = append(out, objFinding("LR020", Error, o, field, "%s, though the pod has the fabric's devices", bad))
		}
	}
	if efa {
		for i, v := range list(pt.spec, "volumes") {
			if strings.HasPrefix(str(v, "hostPath", "path"), "/dev/infiniband") {
				out = append(out, objFinding("LR020", Error, o, fmt.Sprintf("%s.volumes[%d]", pt.path, i),
					"a hostPath of /dev/infiniband on an EFA pod exposes every EFA device of the node and bypasses the device plugin's allocation; request vpc.amazonaws.com/efa instead"))
			}
		}
	}
	return out
}

// mountsPath tells whether a container mounts a volume at path.
func mountsPath(c any, path string) bool {
	for _, m := range list(c, "volumeMounts") {
		if str(m, "mountPath") == path {
			return true
		}
	}
	return false
}

// pluginVolume checks that the directories NCCL loads its plugin from are
// in the container: a volume is mounted there, or it is GKE's driver
// directory, which the GPU device plugin mounts. NCCL_PLUGIN_PATH is a
// convention of some recipes, not a variable NCCL reads: NCCL opens
// libnccl-net.so (or NCCL_NET_PLUGIN's library) through LD_LIBRARY_PATH,
// so a plugin directory named there and not on LD_LIBRARY_PATH is not
// loaded.
func pluginVolume(o Object, pt podTemplate) []Finding {
	var out []Finding
	for i, c := range list(pt.spec, "containers") {
		at := fmt.Sprintf("%s.containers[%d].env", pt.path, i)
		libraryPath, setsLibraryPath := "", false
		for _, e := range list(c, "env") {
			if str(e, "name") == "LD_LIBRARY_PATH" {
				libraryPath, setsLibraryPath = str(e, "value"), true
			}
		}
		for _, e := range list(c, "env") {
			name := str(e, "name")
			if name != "NCCL_PLUGIN_PATH" && name != "NCCL_LIB_DIR" {
				continue
			}
			for _, dir := range strings.Split(str(e, "value"), ":") {
				if dir == "" || strings.Contains(dir, "$") {
					continue
				}
				if !strings.HasPrefix(dir, "/usr/local/nvidia") && !mountedUnder(c, dir) {
					out = append(out, objFinding("LR020", Error, o, at,
						"%s names %s, but no volume is mounted there: NCCL finds no plugin and falls back to sockets; mount the plugin's volume (the installer's emptyDir, or the host's directory)", name, dir))
					continue
				}
				// GKE's driver directory is on the GPU images' own path.
				if name != "NCCL_PLUGIN_PATH" || strings.HasPrefix(dir, "/usr/local/nvidia") || slices.Contains(strings.Split(libraryPath, ":"), dir) {
					continue
				}
				why := fmt.Sprintf("NCCL_PLUGIN_PATH names %s, which is not on LD_LIBRARY_PATH: NCCL reads no NCCL_PLUGIN_PATH; it loads its net plugin (libnccl-net.so, or NCCL_NET_PLUGIN's) through LD_LIBRARY_PATH, and falls back to sockets when it finds none; put %s first on LD_LIBRARY_PATH", dir, dir)
				if setsLibraryPath {
					out = append(out, objFinding("LR020", Error, o, at, "%s", why))
				} else {
					out = append(out, objFinding("LR020", Warning, o, at, "%s (unless the image's own LD_LIBRARY_PATH has it)", why))
				}
			}
		}
	}
	return out
}

// mountedUnder tells whether a container mounts a volume at dir or above it.
func mountedUnder(c any, dir string) bool {
	for _, m := range list(c, "volumeMounts") {
		mp := strings.TrimSuffix(str(m, "mountPath"), "/")
		if dir == mp || strings.HasPrefix(dir, mp+"/") {
			return true
		}
	}
	return false
}

func decodeJSON(s string, v any) error { return json.Unmarshal([]byte(s), v) }

// podFabric describes the fabric wiring of a pod template as a reviewer
// reads it, or "" when it has none.
func podFabric(pt podTemplate) string {
	var parts []string
	if raw := str(pt.meta, "annotations", "networking.gke.io/interfaces"); raw != "" {
		var ifaces []map[string]any
		if decodeJSON(raw, &ifaces) == nil {
			parts = append(parts, fmt.Sprintf("%d extra NICs", max(len(ifaces)-1, 0)))
		}
	}
	if boolean(pt.spec, "hostNetwork") {
		parts = append(parts, "host network")
	}
	if n := len(list(pt.spec, "resourceClaims")); n > 0 {
		parts = append(parts, fmt.Sprintf("%d DRA claim(s)", n))
	}
	for _, c := range list(pt.spec, "initContainers") {
		if strings.Contains(str(c, "image"), "tcpgpudmarxd") {
			parts = append(parts, "daemon "+str(c, "name"))
		}
		if strings.Contains(str(c, "image"), "nccl-plugin") {
			parts = append(parts, "plugin "+tagOf(str(c, "image")))
		}
	}
	if n := efaDevices(pt.spec); n > 0 {
		parts = append(parts, fmt.Sprintf("%d EFA", n))
	}
	if n := resourceCount(pt.spec, "rdma/ib"); n > 0 {
		parts = append(parts, fmt.Sprintf("%d InfiniBand", n))
	}
	if str(pt.meta, "annotations", "llmrender.dev/fabric") == "tcp" {
		parts = append(parts, "tcp by choice")
	}
	return strings.Join(parts, ", ")
}
