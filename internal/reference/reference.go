// Package reference writes the references made from what the code already
// says: the rules reference from the rules' registry, the values reference
// from the chart's values schema and defaults, and the chart's list of
// known rule IDs. hack/docs writes them into the repository; the tests
// here fail when a written copy is stale.
package reference

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/llmrender/llmrender/rules"
	"github.com/llmrender/llmrender/values"
)

// Rules is docs/rules.md.
func Rules() string {
	var b strings.Builder
	b.WriteString("# Rules\n\n")
	b.WriteString("<!-- Generated from the rules' registry (rules.All) by `make docs`; edit the registry, not this file. -->\n\n")
	b.WriteString("Each finding names its rule. Errors stop a render (exit 1); warnings are printed and never change the output. " +
		"`rules.waive: [LR0xx]` in the values turns a rule's findings off, except those the Waiver column names. " +
		"Values rules read the values and the catalog; object rules read rendered manifests, of any chart, and run in `llmrender lint`. " +
		"The Helm column says whether the exported chart (`llmrender chart export`) refuses the same values under plain Helm.\n\n")
	b.WriteString("| Rule | What it finds | Reads | Severity | Helm | Waiver |\n|---|---|---|---|---|---|\n")
	for _, r := range rules.All {
		helm := "no"
		if r.Chart {
			helm = "yes"
		}
		waiver := "yes"
		switch {
		case r.NeverWaived:
			waiver = "no: " + r.Unwaivable
		case r.Unwaivable != "":
			waiver = "yes, except " + r.Unwaivable
		}
		fmt.Fprintf(&b, "| %s | **%s**: %s | %s | %s | %s | %s |\n", r.ID, r.Title, cell(r.Summary), r.Scope, r.Severity, helm, cell(waiver))
	}
	return b.String()
}

// cell keeps a table cell on one row.
func cell(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "|", `\|`), "\n", " ")
}

// knownRE is the chart's list of the rule IDs rules.waive may name.
var knownRE = regexp.MustCompile(`\{\{- \$known := list( "LR\d+")* -\}\}`)

// KnownLine is the chart's line that lists every rule ID (rules.yaml), so
// that a waiver of a rule that does not exist is refused under plain Helm.
func KnownLine() string {
	var b strings.Builder
	b.WriteString("{{- $known := list")
	for _, r := range rules.All {
		fmt.Fprintf(&b, " %q", r.ID)
	}
	b.WriteString(" -}}")
	return b.String()
}

// WithKnownLine is the chart's rules.yaml with KnownLine in place of the
// list it holds; ok is false when it holds none.
func WithKnownLine(template string) (string, bool) {
	if !knownRE.MatchString(template) {
		return template, false
	}
	return knownRE.ReplaceAllLiteralString(template, KnownLine()), true
}

// Values is docs/values.md: every field of the values schema with its
// type, default (the chart's values.yaml), description and example.
func Values(schemaJSON []byte, defaults map[string]any) (string, error) {
	var root map[string]any
	if err := json.Unmarshal(schemaJSON, &root); err != nil {
		return "", fmt.Errorf("values.schema.json: %v", err)
	}
	defs, _ := root["definitions"].(map[string]any)
	var b strings.Builder
	b.WriteString("# Values reference\n\n")
	b.WriteString("<!-- Generated from charts/llm/values.schema.json and values.yaml by `make docs`; edit those, not this file. -->\n\n")
	b.WriteString("Every value the built-in chart reads, by section: its type, its default, what it does, and an example. " +
		"`llmrender schema` prints the JSON Schema itself (for editors); `catalog` holds data that values select by name " +
		"(`llmrender catalog` lists it).\n\n")
	props, _ := root["properties"].(map[string]any)
	for _, top := range values.SortedKeys(props) {
		if top == "catalog" || top == "global" {
			continue
		}
		node := resolve(props[top].(map[string]any), defs)
		fmt.Fprintf(&b, "## %s\n\n", top)
		if d, _ := node["description"].(string); d != "" {
			b.WriteString(d + "\n\n")
		}
		b.WriteString("| Value | Type | Default | Description |\n|---|---|---|---|\n")
		walkFields(&b, "/"+top, top, node, defs, defaults)
		b.WriteString("\n")
	}
	b.WriteString("## catalog and global\n\n" +
		"`catalog` holds the models, accelerator profiles, fabrics, storage classes, server builds and images values select by name; " +
		"add your own entries there (`llmrender catalog` lists them, `llmrender model import` prints a model's). " +
		"`global` holds Helm's conventional `imageRegistry` and image settings, which reach subcharts too.\n")
	return b.String(), nil
}

// walkFields writes a row for each leaf under node (a map of fields).
func walkFields(b *strings.Builder, ptr, dotted string, node map[string]any, defs, defaults map[string]any) {
	props, _ := node["properties"].(map[string]any)
	if len(props) == 0 {
		fmt.Fprintf(b, "| `%s` | %s | %s | %s |\n", dotted, typeOf(node), defaultOf(defaults, ptr), cell(describe(node)))
		return
	}
	for _, k := range values.SortedKeys(props) {
		child := resolve(props[k].(map[string]any), defs)
		walkFields(b, ptr+"/"+values.EscapePointer(k), dotted+"."+k, child, defs, defaults)
	}
}

// resolve merges a node's $ref (and the branches of anyOf) into it.
func resolve(n map[string]any, defs map[string]any) map[string]any {
	out := map[string]any{}
	if ref, ok := n["$ref"].(string); ok {
		if d, ok := defs[strings.TrimPrefix(ref, "#/definitions/")].(map[string]any); ok {
			for k, v := range resolve(d, defs) {
				out[k] = v
			}
		}
	}
	for k, v := range n {
		if k != "$ref" {
			out[k] = v
		}
	}
	return out
}

func typeOf(n map[string]any) string {
	if enum, ok := n["enum"].([]any); ok {
		var parts []string
		for _, e := range enum {
			parts = append(parts, "`"+short(e)+"`")
		}
		return strings.Join(parts, ", ")
	}
	switch t := n["type"].(type) {
	case string:
		return t
	case []any:
		var parts []string
		for _, x := range t {
			parts = append(parts, fmt.Sprint(x))
		}
		return strings.Join(parts, " or ")
	}
	if _, ok := n["anyOf"]; ok {
		return "one of several shapes"
	}
	return "any"
}

func defaultOf(defaults map[string]any, ptr string) string {
	v, ok := values.Lookup(defaults, ptr)
	if !ok {
		return ""
	}
	return "`" + cell(short(v)) + "`"
}

// short prints a value as compact JSON, cut to a table's width.
func short(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	s := string(data)
	if len(s) > 60 {
		s = s[:57] + "..."
	}
	return s
}

// describe is the description, and the first example that is not the
// default.
func describe(n map[string]any) string {
	d, _ := n["description"].(string)
	if ex, ok := n["examples"].([]any); ok && len(ex) > 0 {
		d += " Example: `" + cell(short(ex[len(ex)-1])) + "`."
	}
	return strings.TrimSpace(d)
}
