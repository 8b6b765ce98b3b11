package rules

import (
	"fmt"
	"slices"
	"strings"

	"github.com/llmrender/llmrender/schema"
	"github.com/llmrender/llmrender/values"
	"github.com/llmrender/llmrender/workload"
)

// LR019: the fabric the values ask for, against what the profile has and
// what the daemons and plugins of its fabric need.

// LR019: the fabric the values ask for is one the profile has, its options
// fit it, and its daemon and plugin images come from one release.
func fabricChoice(w *workload.Workload, pos *values.Positions) []Finding {
	want := str(w.V, "accelerator", "fabric")
	native := str(w.Acc, "fabric")
	if want != "" && want != "auto" && want != "tcp" && want != native {
		has := "it has none"
		if native != "" {
			has = "it has " + native
		}
		return []Finding{unwaivableAt(pos, "LR019", "/accelerator/fabric", fmt.Sprintf(
			"%s is not the fabric of %s (%s); use auto, tcp%s", want, w.Profile, has, orEmpty(native, " or "+native)))}
	}
	if want == "tcp" && native != "" && w.Nodes > 1 && mapAt(w.V, "catalog", "fabrics", native, "computeDomain") != nil && !setsEnv(w, "NCCL_MNNVL_ENABLE") {
		return []Finding{at(pos, "LR019", Error, "/accelerator/fabric", fmt.Sprintf(
			"%s's GPUs report an NVLink fabric, so NCCL between the %d nodes looks for an IMEX channel and stops at start without one (\"MNNVL ... is available but not working\"); use auto to wire %s, or set NCCL_MNNVL_ENABLE=0 in workload.env to run NCCL over the primary NIC",
			w.Profile, w.Nodes, native))}
	}
	if want == "tcp" && native != "" && w.Nodes > 1 {
		tcp, fast := num(w.Acc, "tcpGbps")
		fab, _ := num(w.Acc, "fabricGbps")
		msg := fmt.Sprintf("NCCL between the %d nodes runs over the primary NIC only", w.Nodes)
		if fast && tcp > 0 && fab > 0 {
			msg += fmt.Sprintf(": about %g Gbit/s per node instead of %g over %s (%.0fx less)", tcp, fab, native, fab/tcp)
		} else {
			msg += " instead of " + native
		}
		return []Finding{at(pos, "LR019", Warning, "/accelerator/fabric", msg+"; use auto to wire "+native)}
	}
	kind := w.FabricOf()
	if kind == "" {
		return nil
	}
	f := mapAt(w.V, "catalog", "fabrics", kind)
	if f == nil {
		return []Finding{unwaivableAt(pos, "LR019", "/accelerator/fabric", fmt.Sprintf(
			"%s uses fabric %s, which is not in catalog.fabrics", w.Profile, kind))}
	}
	var out []Finding
	if d := mapAt(w.Acc, "nvlinkDomain"); d != nil && w.Nodes > integer(d, "nodes") {
		out = append(out, at(pos, "LR019", Error, "/workload/nodes", fmt.Sprintf(
			"%d nodes, but one NVLink domain of %s holds %d, and the pods of a workload keep to one (NVLink reaches no further); use at most %d nodes",
			w.Nodes, w.Profile, integer(d, "nodes"), integer(d, "nodes"))))
	}
	gke := str(f, "platform") == "GKE"
	attach := str(w.V, "fabric", "attach")
	switch {
	case attach == "dra" && kind != "gpudirect-rdma":
		out = append(out, at(pos, "LR019", Error, "/fabric/attach", fmt.Sprintf(
			"attach: dra gives managed RDMA devices (gpudirect-rdma on A3 Ultra and A4); %s attaches its NICs with networks or host", kind)))
	case !gke && attach != "" && attach != "networks" && mapAt(f, "computeDomain") != nil:
		out = append(out, at(pos, "LR019", Warning, "/fabric/attach", fmt.Sprintf(
			"fabric.attach applies to GKE's NICs; %s pods get IMEX channels from a ComputeDomain, so %q changes nothing", kind, attach)))
	case !gke && attach != "" && attach != "networks":
		out = append(out, at(pos, "LR019", Warning, "/fabric/attach", fmt.Sprintf(
			"fabric.attach applies to GKE's fabrics; %s pods get their devices (%s) from its device plugin, so %q changes nothing", kind, str(f, "resource"), attach)))
	}
	if plugin := str(w.V, "fabric", "plugin"); plugin != "" && gke && !slices.Contains(stringList(f, "pluginModes"), plugin) {
		out = append(out, at(pos, "LR019", Error, "/fabric/plugin", fmt.Sprintf(
			"%s has no documented way to install its NCCL plugin per %s; use %s", kind, plugin, strings.Join(stringList(f, "pluginModes"), " or "))))
	}
	if nets := stringList(w.V, "fabric", "networks"); len(nets) > 0 && gke {
		if want := len(stringList(f, "interfaces")); len(nets) != want {
			out = append(out, unwaivableAt(pos, "LR019", "/fabric/networks", fmt.Sprintf(
				"%s attaches %d NICs (%s); %d networks are given, one per NIC in order",
				kind, want, strings.Join(stringList(f, "interfaces"), ", "), len(nets))))
		}
	}
	releases := mapAt(f, "releases")
	release := str(w.V, "fabric", "release")
	if release != "" && releases[release] == nil {
		names := values.SortedKeys(releases)
		msg := fmt.Sprintf("%s has no release %q (known: %s; add one under catalog.fabrics.%s.releases)", kind, release, strings.Join(names, ", "), kind)
		if hint := schema.Suggest(release, names); hint != "" {
			msg = fmt.Sprintf("%s has no release %q; did you mean %q? (known: %s)", kind, release, hint, strings.Join(names, ", "))
		}
		return append(out, at(pos, "LR019", Error, "/fabric/release", msg))
	}
	if release == "" {
		release = str(f, "release")
	}
	daemon, plugin := str(w.V, "fabric", "daemonImage"), str(w.V, "fabric", "pluginImage")
	if daemon == "" && plugin == "" {
		return out
	}
	if daemon == "" {
		daemon = str(releases, release, "daemon")
	}
	if plugin == "" {
		plugin = str(releases, release, "plugin")
	}
	if daemon == "" {
		return out // gIB: no daemon, nothing to pair
	}
	ptr := "/fabric/daemonImage"
	if str(w.V, "fabric", "daemonImage") == "" {
		ptr = "/fabric/pluginImage"
	}
	if f := pairFinding(kind, releases, daemon, plugin); strings.HasPrefix(f, "cannot") {
		out = append(out, at(pos, "LR019", Warning, ptr, f))
	} else if f != "" {
		out = append(out, at(pos, "LR019", Error, ptr, f+"; set fabric.release instead of one image"))
	}
	return out
}

// pairFinding says what is wrong with a daemon and plugin image pair: ""
// when both tags belong to one release, an error when each belongs to a
// different one, and "cannot ..." when a tag belongs to none. Registries
// are ignored (people mirror the images).
func pairFinding(kind string, releases map[string]any, daemon, plugin string) string {
	of := func(role, image string) []string {
		var in []string
		for _, r := range values.SortedKeys(releases) {
			if tagOf(str(releases, r, role)) == tagOf(image) {
				in = append(in, r)
			}
		}
		return in
	}
	d, p := of("daemon", daemon), of("plugin", plugin)
	switch {
	case len(d) == 0 || len(p) == 0:
		return fmt.Sprintf("cannot check that daemon %s and plugin %s work together: a tag is in no release of catalog.fabrics.%s.releases", tagOf(daemon), tagOf(plugin), kind)
	case slices.ContainsFunc(d, func(r string) bool { return slices.Contains(p, r) }):
		return ""
	}
	return fmt.Sprintf("daemon %s is from release %s and plugin %s from release %s: %s's daemon and NCCL plugin must come from one release, or NCCL fails or falls back to sockets",
		tagOf(daemon), strings.Join(d, ", "), tagOf(plugin), strings.Join(p, ", "), kind)
}

// tagOf is an image reference's tag ("" without one).
func tagOf(image string) string {
	_, tag, _ := imageParts(image)
	return tag
}

func orEmpty(cond, s string) string {
	if cond == "" {
		return ""
	}
	return s
}

// setsEnv tells whether workload.env sets a variable.
func setsEnv(w *workload.Workload, name string) bool {
	for _, e := range list(w.V, "workload", "env") {
		if str(e, "name") == name {
			return true
		}
	}
	return false
}
