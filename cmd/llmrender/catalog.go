package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	sigsyaml "sigs.k8s.io/yaml"

	"github.com/llmrender/llmrender/model"
	"github.com/llmrender/llmrender/modes"
	"github.com/llmrender/llmrender/pipeline"
	"github.com/llmrender/llmrender/values"
)

// runCatalog lists what values can select, with the facts the chart uses
// for defaults and the memory fit estimate.
func runCatalog(env *environment, args []string) error {
	fs := newFlagSet(env, "catalog", "catalog [models|accelerators|modes] [-o table|json|yaml] [--chart DIR]")
	format := fs.StringP("output", "o", "table", "table, json or yaml")
	chartDir := fs.String("chart", "", "chart directory (default: the built-in chart)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	sections := []string{"models", "accelerators", "modes"}
	if fs.NArg() > 1 {
		return usagef("unexpected argument %q", fs.Arg(1))
	}
	if fs.NArg() == 1 {
		if !slices.Contains(sections, fs.Arg(0)) {
			return usagef("no catalog %q (models, accelerators or modes)", fs.Arg(0))
		}
		sections = []string{fs.Arg(0)}
	}
	if *format != "table" && *format != "json" && *format != "yaml" {
		return usagef("--output must be table, json or yaml, not %q", *format)
	}
	c, err := pipeline.LoadChart(*chartDir)
	if err != nil {
		return err
	}
	catalog, _ := c.Values["catalog"].(map[string]any)
	if catalog == nil {
		return fmt.Errorf("chart %s has no catalog", c.Metadata.Name)
	}
	table, _, err := modes.Of(c.Chart)
	if err != nil {
		return err
	}
	data := map[string][]map[string]any{}
	for _, s := range sections {
		data[s] = catalogEntries(catalog, table, s)
	}
	switch *format {
	case "json":
		out, err := json.MarshalIndent(data, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(env.stdout, "%s\n", out)
		return err
	case "yaml":
		out, err := sigsyaml.Marshal(data)
		if err != nil {
			return err
		}
		_, err = env.stdout.Write(out)
		return err
	}
	for i, s := range sections {
		if i > 0 {
			fmt.Fprintln(env.stdout)
		}
		if len(sections) > 1 {
			fmt.Fprintf(env.stdout, "%s:\n", strings.ToUpper(s[:1])+s[1:])
		}
		writeCatalogTable(env.stdout, s, data[s])
	}
	return nil
}

// catalogEntries lists one section, each entry with its name: models and
// accelerators sorted, modes in the chart's order (modes.yaml).
func catalogEntries(catalog map[string]any, table modes.Table, section string) []map[string]any {
	var out []map[string]any
	if section == "modes" {
		for _, m := range table {
			nodes := "1"
			if m.Several() {
				nodes = "1+"
			}
			out = append(out, map[string]any{"name": m.Name, "runs": m.Run, "renders": m.Renders, "needs": m.Needs, "nodes": nodes})
		}
		return out
	}
	entries, _ := catalog[section].(map[string]any)
	for _, name := range values.SortedKeys(entries) {
		e := map[string]any{"name": name}
		if m, ok := entries[name].(map[string]any); ok {
			for k, v := range m {
				e[k] = v
			}
		}
		out = append(out, e)
	}
	return out
}

func writeCatalogTable(w io.Writer, section string, entries []map[string]any) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	var cols []string
	var row func(e map[string]any) []any
	switch section {
	case "models":
		cols = []string{"NAME", "PARAMS", "ACTIVE", "LAYERS", "ATTENTION", "CONTEXT", "CHECKPOINT", "QUANT", "MP", "FORMATS", "GATED", "SOURCE"}
		row = func(e map[string]any) []any {
			f := model.FromEntry(e)
			return []any{e["name"], billions(e["params"]), billions(f.ActiveParams), e["layers"], orDash(f.Attention), e["contextLength"], gigabytes(e["checkpointBytes"]),
				orDash(f.Quantization), e["modelParallel"], joinList(e["formats"]), e["gated"], e["hfRepo"]}
		}
	case "accelerators":
		cols = []string{"NAME", "RESOURCE", "DEVICES/NODE", "MEMORY/DEVICE", "CPU/NODE", "MEMORY/NODE", "SHM", "DESCRIPTION"}
		row = func(e map[string]any) []any {
			res := e["resource"]
			if res == "" || res == nil {
				res = "-"
			}
			return []any{e["name"], res, e["devicesPerNode"], fmt.Sprintf("%vGB", e["memoryPerDeviceGB"]), e["cpuPerNode"],
				fmt.Sprintf("%vGi", e["memoryPerNodeGi"]), e["shmSize"], e["description"]}
		}
	default:
		cols = []string{"NAME", "NODES", "RUNS", "NEEDS", "RENDERS"}
		row = func(e map[string]any) []any {
			runs, _ := e["runs"].(modes.Object)
			return []any{e["name"], e["nodes"], strings.Join(runs.Kinds(), " / "), e["needs"], e["renders"]}
		}
	}
	fmt.Fprintln(tw, strings.Join(cols, "\t"))
	for _, e := range entries {
		cells := row(e)
		parts := make([]string, len(cells))
		for i, c := range cells {
			if c == nil {
				c = "-"
			}
			parts[i] = fmt.Sprint(c)
		}
		fmt.Fprintln(tw, strings.Join(parts, "\t"))
	}
	tw.Flush()
}

func billions(v any) string {
	if f, ok := toFloat(v); ok {
		return fmt.Sprintf("%.1fB", f/1e9)
	}
	return "-"
}

func gigabytes(v any) string {
	if f, ok := toFloat(v); ok {
		return fmt.Sprintf("%.0fGB", f/1e9)
	}
	return "-"
}

func toFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case int64:
		return float64(x), true
	case float64:
		return x, true
	case int:
		return float64(x), true
	}
	return 0, false
}

func joinList(v any) string {
	l, _ := v.([]any)
	parts := make([]string, len(l))
	for i, x := range l {
		parts[i] = fmt.Sprint(x)
	}
	return strings.Join(parts, ",")
}

// orDash shows an empty fact as a dash, as the table shows other absent
// columns.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
