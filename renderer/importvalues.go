package renderer

import (
	"fmt"
	"strings"

	"github.com/llmrender/llmrender/internal/redact"
	"github.com/llmrender/llmrender/values"
)

// import-values: a dependency's values copied into its parent's, and the
// dotted paths they name.

// table follows a dotted path of tables, as Helm's Values.Table.
func table(v map[string]any, dotted string) (map[string]any, bool) {
	for _, k := range strings.Split(dotted, ".") {
		next, ok := v[k].(map[string]any)
		if !ok {
			return nil, false
		}
		v = next
	}
	return v, true
}

// pathValue reads the value at a dotted path that is not a table, as
// Helm's Values.PathValue.
func pathValue(v map[string]any, dotted string) (any, bool) {
	parts := strings.Split(dotted, ".")
	t := v
	if len(parts) > 1 {
		var ok bool
		if t, ok = table(v, strings.Join(parts[:len(parts)-1], ".")); !ok {
			return nil, false
		}
	}
	x, ok := t[parts[len(parts)-1]]
	if !ok || isTable(x) {
		return nil, false
	}
	return x, true
}

// importValues is Helm's processDependencyImportValues, as `helm install`
// and `helm template` run it (merging, so nulls stay): children first,
// then each chart lifts the values its dependencies' import-values name.
// The parent's own values win over imported ones.
//
// Like Helm, it rewrites each record's import-values into the child and
// parent paths it used ({child: exports.x, parent: .} for the short
// form), which .Chart.Dependencies then shows, and which an entry of no
// form it knows is: the records are shared by every copy of a chart, so
// only the first copy to be processed imports, and the others find the
// rewritten entries and import nothing.
func (p *processor) importValues(n *node) error {
	for _, d := range n.deps {
		if err := p.importValues(d); err != nil {
			return err
		}
	}
	if n.noReqs {
		return nil
	}
	cvals, err := p.coalesce(n, map[string]any{}, true)
	if err != nil {
		return err
	}
	b := map[string]any{}
	for _, r := range n.reqs {
		var used []any
		for _, riv := range r.ImportValues {
			switch iv := riv.(type) {
			case map[string]any:
				child, parent := fmt.Sprintf("%v", iv["child"]), fmt.Sprintf("%v", iv["parent"])
				used = append(used, map[string]string{"child": child, "parent": parent})
				vv, ok := table(cvals, r.Name+"."+child)
				if !ok {
					p.warnf("chart %s: import-values: dependency %s has no table %s", n.chart.Where, redact.Quote(r.Name), redact.Quote(child))
					continue
				}
				cp, err := p.copy(vv)
				if err != nil {
					return err
				}
				b = coalesceTables(b, pathToMap(parent, cp.(map[string]any)), true)
			case string:
				used = append(used, map[string]string{"child": "exports." + iv, "parent": "."})
				vm, ok := table(cvals, r.Name+".exports."+iv)
				if !ok {
					p.warnf("chart %s: import-values: dependency %s exports no table %s", n.chart.Where, redact.Quote(r.Name), redact.Quote(iv))
					continue
				}
				cp, err := p.copy(vm)
				if err != nil {
					return err
				}
				b = coalesceTables(b, cp.(map[string]any), true)
			case map[string]string:
				p.warnf("chart %s: import-values of dependency %s import nothing: another copy of %s processed them first, and Helm processes them once",
					n.chart.Where, redact.Quote(r.Name), redact.Quote(n.chart.Where))
			}
		}
		r.ImportValues = used
	}
	base, err := p.copy(cvals)
	if err != nil {
		return err
	}
	n.chart.Values = coalesceTables(base.(map[string]any), b, true)
	return nil
}

// pathToMap nests data under a dotted path ("." is the top).
func pathToMap(dotted string, data map[string]any) map[string]any {
	if dotted == "." {
		return data
	}
	parts := strings.Split(dotted, ".")
	cur := data
	for i := len(parts) - 1; i >= 0; i-- {
		cur = map[string]any{parts[i]: cur}
	}
	return cur
}

// copy deep-copies a values tree, counting what it copies.
func (p *processor) copy(v any) (any, error) {
	p.copied += countNodes(v)
	if p.copied > maxCopiedValues {
		return nil, fmt.Errorf("dependency processing copies more than %d values; do aliases copy a chart with large values many times?", maxCopiedValues)
	}
	return values.DeepCopy(v), nil
}

func countNodes(v any) int {
	n := 1
	switch x := v.(type) {
	case map[string]any:
		for _, e := range x {
			n += countNodes(e)
		}
	case []any:
		for _, e := range x {
			n += countNodes(e)
		}
	}
	return n
}

func isTable(v any) bool { _, ok := v.(map[string]any); return ok }
