package plan

import (
	"fmt"
	"io"
	"strings"

	"github.com/llmrender/llmrender/internal/lazy"
	"github.com/llmrender/llmrender/rules"
	"github.com/llmrender/llmrender/workload"
)

// Text writes the plan for a terminal.
func Text(w io.Writer, p *Plan) {
	fmt.Fprintf(w, "Plan for release %s in namespace %s\n", p.Release, p.Namespace)
	fmt.Fprintf(w, "  %s %s on %s, mode %s\n", p.Type, p.Model, p.Accelerator, p.Mode)
	fmt.Fprintf(w, "  Compute:  %s\n", computeOrServe(p))
	if p.ModelFacts != nil {
		fmt.Fprintf(w, "  Model:    %s\n", modelLine(p.ModelFacts))
	}
	if p.Serve != nil {
		for _, l := range serverLines(p.Serve) {
			fmt.Fprintf(w, "  %-9s %s\n", l[0]+":", l[1])
		}
	}
	if p.Fit != nil {
		fmt.Fprintf(w, "  Memory:   %s\n", fitLine(p.Fit, p.Compute.Resource != ""))
	}
	if p.Fabric != nil {
		fmt.Fprintf(w, "  Fabric:   %s\n", fabricLine(p.Fabric, p.Compute.Nodes))
	}
	if p.Queue != nil {
		fmt.Fprintf(w, "  Queue:    %s\n", queueLine(p.Queue, p.Namespace))
	}
	for _, c := range p.Storage {
		fmt.Fprintf(w, "  Storage:  %s\n", claimLine(c))
	}
	fmt.Fprintln(w, "\nSteps, in order:")
	for i, s := range p.Steps {
		fmt.Fprintf(w, "  %d. %s (wave %d)", i+1, s.Name, s.Wave)
		if len(s.After) > 0 {
			fmt.Fprintf(w, ", after %s", strings.Join(s.After, ", "))
		}
		fmt.Fprintln(w)
		fmt.Fprintf(w, "     %s\n", stepWhere(s))
		for _, pc := range s.Pods {
			fmt.Fprintf(w, "     %s\n", podLine(pc))
		}
		if h := heldLine(s); h != "" {
			fmt.Fprintf(w, "     %s\n", h)
		}
	}
	fmt.Fprintf(w, "\n%s\n", peakLine(p))
	if len(p.Findings) > 0 {
		fmt.Fprintln(w, "\nFindings:")
		for _, f := range p.Findings {
			fmt.Fprintf(w, "  %s\n", findingLine(f))
		}
	} else {
		fmt.Fprintln(w, "\nNo rule warnings.")
	}
}

// Markdown writes the plan as a pull-request comment, with a Mermaid
// diagram of the steps that GitHub renders as a picture.
func Markdown(w io.Writer, p *Plan) {
	fmt.Fprintf(w, "### llmrender plan: `%s` (%s %s on %s, %s)\n\n", p.Release, p.Type, p.Model, p.Accelerator, p.Mode)
	fmt.Fprintln(w, "| | |")
	fmt.Fprintln(w, "|---|---|")
	fmt.Fprintf(w, "| Compute | %s |\n", mdEscape(computeOrServe(p)))
	if p.ModelFacts != nil {
		fmt.Fprintf(w, "| Model | %s |\n", mdEscape(modelLine(p.ModelFacts)))
	}
	if p.Serve != nil {
		for _, l := range serverLines(p.Serve) {
			fmt.Fprintf(w, "| %s | %s |\n", l[0], mdEscape(l[1]))
		}
	}
	if p.Fit != nil {
		fmt.Fprintf(w, "| Memory fit | %s |\n", mdEscape(fitLine(p.Fit, p.Compute.Resource != "")))
	}
	if p.Fabric != nil {
		fmt.Fprintf(w, "| Fabric | %s |\n", mdEscape(fabricLine(p.Fabric, p.Compute.Nodes)))
	}
	if p.Queue != nil {
		fmt.Fprintf(w, "| Queue | %s |\n", mdEscape(queueLine(p.Queue, p.Namespace)))
	}
	for _, c := range p.Storage {
		fmt.Fprintf(w, "| Storage | %s |\n", mdEscape(claimLine(c)))
	}
	fmt.Fprintf(w, "| Namespace | `%s` |\n\n", p.Namespace)
	fmt.Fprintln(w, "```mermaid")
	fmt.Fprintln(w, "flowchart LR")
	for _, s := range p.Steps {
		label := []string{s.Name, stepWhere(s)}
		for _, pc := range s.Pods {
			label = append(label, fmt.Sprintf("%d x %d %s", pc.Replicas, pc.Devices, pc.Resource))
		}
		fmt.Fprintf(w, "  %s[\"%s\"]\n", mermaidID(s.Name), mermaidText(strings.Join(label, "<br/>")))
	}
	for _, s := range p.Steps {
		for _, a := range s.After {
			fmt.Fprintf(w, "  %s --> %s\n", mermaidID(a), mermaidID(s.Name))
		}
	}
	fmt.Fprintln(w, "```")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| step | wave | after | runs in | accelerators |")
	fmt.Fprintln(w, "|---|---|---|---|---|")
	for _, s := range p.Steps {
		var pods []string
		for _, pc := range s.Pods {
			pods = append(pods, podLine(pc))
		}
		if h := heldLine(s); h != "" {
			pods = append(pods, h)
		}
		fmt.Fprintf(w, "| %s | %d | %s | %s | %s |\n", s.Name, s.Wave, orDash(strings.Join(s.After, ", ")),
			mdEscape(stepWhere(s)), mdEscape(orDash(strings.Join(pods, "; "))))
	}
	fmt.Fprintf(w, "\n%s\n\n", mdEscape(peakLine(p)))
	if len(p.Findings) == 0 {
		fmt.Fprintln(w, "No rule warnings.")
		return
	}
	fmt.Fprintln(w, "**Findings**")
	fmt.Fprintln(w)
	for _, f := range p.Findings {
		fmt.Fprintf(w, "- %s\n", mdEscape(findingLine(f)))
	}
}

// computeOrServe is the compute line, a server's in mode serve.
func computeOrServe(p *Plan) string {
	if p.Serve != nil {
		return serveLine(p.Serve, p.Compute)
	}
	return computeLine(p.Compute)
}

func computeLine(c Compute) string {
	if c.Resource == "" {
		return fmt.Sprintf("%s, no accelerator; %s", plural(c.Nodes, "node"), plural(c.WorldSize, "process"))
	}
	return fmt.Sprintf("%d node(s) x %d %s = %d device(s); world size %d (%s)", c.Nodes, c.DevicesPerNode, c.Resource, c.Devices, c.WorldSize, c.Launch)
}

// fitLine is the memory fit; accelerator tells whether the memory is the
// accelerators' (a server on CPU counts its pod's memory).
func fitLine(f *Fit, accelerator bool) string {
	verdict := "fits"
	switch {
	case !f.Fits:
		verdict = "DOES NOT FIT"
	case f.UsedPercent > 90:
		verdict = "fits, with less than 10% headroom"
	}
	memory := "accelerator memory"
	if !accelerator {
		memory = "memory"
	}
	s := fmt.Sprintf("needs ~%s of %s %s (%.0f%%): %s. Basis: %s", bytesText(f.NeedBytes), bytesText(f.HaveBytes), memory, f.UsedPercent, verdict, f.Basis)
	if f.HaveBasis != "" {
		s += "; of " + f.HaveBasis
	}
	return s
}

// modelLine says what the math knows of the model and where from.
func modelLine(m *ModelFacts) string {
	s := fmt.Sprintf("%s parameters", paramsText(m.Params))
	if m.MoE() {
		s += fmt.Sprintf(" (%s active: %d of %d experts a token)", paramsText(m.ActiveParams), m.ExpertsPerToken, m.Experts)
	}
	s += fmt.Sprintf(", %d layers, %d heads", m.Layers, m.Heads)
	switch m.Attention {
	case "mla":
		s += fmt.Sprintf(", MLA (latent %d + rotary %d)", m.KVLoraRank, m.QKRopeHeadDim)
	default:
		s += fmt.Sprintf(", %d KV heads (%s) of %d", m.KVHeads, m.Attention, m.HeadDim)
	}
	if m.SlidingLayers > 0 {
		s += fmt.Sprintf(", %d sliding-window layers of %d tokens", m.SlidingLayers, m.SlidingWindow)
	}
	weights := "bf16"
	if m.Quantization != "" {
		weights = m.Quantization
	}
	s += fmt.Sprintf("; %s weights %s, KV cache %s a token (%s); context %d; from %s",
		weights, bytesText(float64(m.WeightsBytes)), kilobytes(m.KVBytesPerToken), m.KVCacheDtype, m.ContextLength, m.Source)
	return s
}

// kilobytes is a token's KV cache, a few hundred kB at most.
func kilobytes(b int64) string { return fmt.Sprintf("%.1f kB", float64(b)/1e3) }

// paramsText is a parameter count in billions or millions.
func paramsText(n int64) string {
	if n >= 1e9 {
		return fmt.Sprintf("%.1fB", float64(n)/1e9)
	}
	return fmt.Sprintf("%.1fM", float64(n)/1e6)
}

func claimLine(c Claim) string {
	if c.Existing {
		return fmt.Sprintf("existing claim %s (not created here)", c.Name)
	}
	s := fmt.Sprintf("PersistentVolumeClaim %s %s %s", c.Name, c.Size, strings.Join(c.AccessModes, ","))
	if c.StorageClass != "" {
		s += " (class " + c.StorageClass + ")"
	}
	if c.SizedFor != "" {
		s += "; sized for " + c.SizedFor
	}
	return s
}

// stepWhere says which objects run a step.
func stepWhere(s Step) string {
	if s.Inside != "" {
		return "inside " + s.Inside + ", before its own work"
	}
	return strings.Join(s.Objects, ", ")
}

// heldLine says what the accelerators do while a step before the run runs.
func heldLine(s Step) string {
	switch {
	case s.Held == 0:
		return ""
	case s.Busy:
		return fmt.Sprintf("runs on the run's %d accelerator pod(s)", s.Held)
	}
	line := fmt.Sprintf("%d accelerator pod(s) wait idle meanwhile", s.Held)
	if s.Inside == "" {
		line += " when every object is applied at once (with Argo CD sync waves the run starts after this step)"
	}
	if s.IdleEstimate != "" {
		line += ": " + s.IdleEstimate
	}
	return line
}

func peakLine(p *Plan) string {
	if p.Peak == 0 {
		return "Peak: no accelerator pods."
	}
	line := fmt.Sprintf("Peak: %d accelerator pod(s) at once", p.Peak)
	if s := p.Serve; s != nil && s.Prefill > 0 && s.PrefillNodesPerServer != s.NodesPerServer {
		return line + fmt.Sprintf(" for %s of %s and %s of %s.", plural(s.Prefill, "prefill server"), plural(s.PrefillNodesPerServer, "node"), plural(s.Decode, "decode server"), plural(s.NodesPerServer, "node"))
	}
	if p.Serve != nil {
		return line + fmt.Sprintf(" for %s of %s.", plural(p.Serve.Replicas, "server"), plural(p.Serve.NodesPerServer, "node"))
	}
	if p.Peak == p.Compute.Nodes {
		return line + ", one per node of the workload."
	}
	return line + fmt.Sprintf(" for a workload of %d node(s).", p.Compute.Nodes)
}

func podLine(pc rules.PodCompute) string {
	s := fmt.Sprintf("%s: %d pod(s) x %d %s", pc.Path, pc.Replicas, pc.Devices, pc.Resource)
	if pc.Fabric != "" {
		s += " [" + pc.Fabric + "]"
	}
	return s
}

// fabricLine is the fabric of a workload of nodes nodes.
func fabricLine(f *Fabric, nodes int64) string {
	var s string
	if f.Kind == "" {
		s = fmt.Sprintf("none: NCCL over the primary NIC, about %g Gbit/s per node; %s would give about %g (accelerator.fabric: auto)", f.TCPGbps, f.Native, f.Gbps)
	} else {
		s = fmt.Sprintf("%s, about %g Gbit/s per node (the primary NIC alone: about %g)", f.Kind, f.Gbps, f.TCPGbps)
	}
	if d := f.Domain; d != nil {
		s += fmt.Sprintf("; the pods keep to one NVLink domain of up to %d nodes (the same %s)", d.Nodes, d.Label)
	}
	switch {
	case f.KVTransfer:
		s += "; it carries the KV caches from the prefill servers to the decode servers (NIXL over UCX)"
	case nodes == 1 && f.Kind != "":
		s += "; wired on one node, where it carries nothing until the workload spans nodes"
	}
	if len(f.Missing) > 0 {
		s += "; without it: " + strings.Join(f.Missing, ", ")
	}
	return s
}

// queueLine says which Kueue queue admits the workload.
func queueLine(q *Queue, namespace string) string {
	s := "Kueue LocalQueue " + q.Name
	if q.Created {
		s += ", created by this release"
		if q.ClusterQueue != "" {
			s += " (ClusterQueue " + q.ClusterQueue + ")"
		}
	} else {
		s += ", not created by this release: it must exist in namespace " + namespace
	}
	if q.PriorityClass != "" {
		s += "; priority class " + q.PriorityClass
	}
	return s + "; Kueue admits " + strings.Join(q.Objects, ", ") + " from it"
}

func findingLine(f Finding) string {
	s := fmt.Sprintf("%s %s: %s: %s", f.Severity, f.Rule, f.Where, f.Message)
	if f.Waived {
		s = "waived " + s
	}
	return s
}

func bytesText(b float64) string {
	switch {
	case b >= 1e12:
		return fmt.Sprintf("%.1f TB", b/1e12)
	case b >= 1e9:
		return fmt.Sprintf("%.0f GB", b/1e9)
	}
	return fmt.Sprintf("%.0f MB", b/1e6)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// mdEscape keeps a table cell one cell.
func mdEscape(s string) string { return strings.ReplaceAll(s, "|", "\\|") }

var nonID = lazy.Regexp(`[^A-Za-z0-9_]`)

func mermaidID(s string) string { return "s_" + nonID().ReplaceAllString(s, "_") }

// mermaidText escapes what would end a quoted Mermaid label.
func mermaidText(s string) string { return strings.ReplaceAll(s, `"`, "#quot;") }

func plural(n int64, noun string) string { return workload.Plural(n, noun) }
