package renderer

import (
	"fmt"

	"github.com/llmrender/llmrender/internal/redact"
	"github.com/llmrender/llmrender/values"
)

// Coalescing a chart's values with its subcharts' and the globals, as
// Helm's chartutil does: the user's values win, then the parent's, then the
// chart's own defaults; null deletes a default.

// coalesceValues is Helm's CoalesceValues: a copy of vals with the chart's
// defaults and, under each subchart's name, the subchart's defaults and
// the globals filled in.
func (p *processor) coalesceValues(n *node, vals map[string]any) (map[string]any, error) {
	cp, err := p.copy(vals)
	if err != nil {
		return nil, err
	}
	dest, _ := cp.(map[string]any)
	if dest == nil {
		dest = map[string]any{}
	}
	return p.coalesce(n, dest, false)
}

// coalesce is Helm's coalesce: the chart's own defaults, then each
// subchart's part. With merge, nulls stay (import processing); without,
// a null deletes a default.
func (p *processor) coalesce(n *node, dest map[string]any, merge bool) (map[string]any, error) {
	if err := p.coalesceOwn(n, dest, merge); err != nil {
		return nil, err
	}
	for _, sub := range n.deps {
		name := sub.name()
		dv, ok := dest[name]
		if !ok {
			dv = map[string]any{}
			dest[name] = dv
		}
		dvmap, ok := dv.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("chart %s: the values for subchart %s must be a map, not %s", n.chart.Where, redact.Quote(name), values.KindOf(dv))
		}
		coalesceGlobals(dvmap, dest)
		out, err := p.coalesce(sub, dvmap, merge)
		if err != nil {
			return nil, err
		}
		dest[name] = out
	}
	return dest, nil
}

// coalesceGlobals is Helm's coalesceGlobals: the parent's global values
// win over the subchart's. Like Helm it copies the parent's global tables
// one level deep only.
func coalesceGlobals(dest, src map[string]any) {
	var dg, sg map[string]any
	if g, ok := dest["global"]; !ok {
		dg = map[string]any{}
	} else if dg, ok = g.(map[string]any); !ok {
		return
	}
	if g, ok := src["global"]; !ok {
		sg = map[string]any{}
	} else if sg, ok = g.(map[string]any); !ok {
		return
	}
	for _, key := range values.SortedKeys(sg) {
		val := sg[key]
		if t, ok := val.(map[string]any); ok {
			vv := make(map[string]any, len(t))
			for k, e := range t {
				vv[k] = e
			}
			if destv, ok := dg[key]; !ok {
				dg[key] = vv
			} else if destvmap, ok := destv.(map[string]any); ok {
				coalesceTables(vv, destvmap, true)
				dg[key] = vv
			}
		} else if dv, ok := dg[key]; !ok || !isTable(dv) {
			dg[key] = val
		}
	}
	dest["global"] = dg
}

// coalesceOwn is Helm's coalesceValues: the chart's defaults (copied) fill
// in v; a user null deletes a default. With ShareDefaults, a chart
// without subcharts lends v its defaults' subtrees instead: nothing else
// reads them, and an unmarked fill leaves them as they are.
func (p *processor) coalesceOwn(n *node, v map[string]any, merge bool) error {
	defaults, mark := n.chart.Values, true
	if p.share && n.parent == nil && len(n.deps) == 0 {
		mark = false
	} else {
		cp, err := p.copy(defaults)
		if err != nil {
			return err
		}
		defaults, _ = cp.(map[string]any)
	}
	for _, key := range values.SortedKeys(defaults) {
		val := defaults[key]
		value, ok := v[key]
		if !ok {
			v[key] = val
			continue
		}
		if value == nil && !merge {
			delete(v, key)
			continue
		}
		dest, ok := value.(map[string]any)
		if !ok {
			continue
		}
		src, ok := val.(map[string]any)
		if !ok {
			continue
		}
		m := merge
		for _, sub := range n.deps {
			if sub.name() == key {
				m = true
			}
		}
		fillTables(dest, src, m, mark)
	}
	return nil
}

// coalesceTables is Helm's coalesceTablesFullKey: src fills in dst. Without
// merge, a null in dst deletes what src has; with it, the null stays.
// Like Helm, it marks those keys null in src too.
func coalesceTables(dst, src map[string]any, merge bool) map[string]any {
	return fillTables(dst, src, merge, true)
}

// fillTables is coalesceTables; without mark it leaves src as it is, so
// that what dst takes from src can be shared instead of copied.
func fillTables(dst, src map[string]any, merge, mark bool) map[string]any {
	if src == nil {
		return dst
	}
	if dst == nil {
		return src
	}
	nonNil := map[string]bool{}
	for key, val := range src {
		if val != nil {
			nonNil[key] = true
		}
	}
	for key, val := range dst {
		if val == nil && mark {
			src[key] = nil
		}
	}
	for _, key := range values.SortedKeys(src) {
		val := src[key]
		dv, ok := dst[key]
		switch {
		case ok && !merge && dv == nil && nonNil[key]:
			delete(dst, key)
		case !ok:
			dst[key] = val
		case isTable(val):
			if dt, ok := dv.(map[string]any); ok {
				fillTables(dt, val.(map[string]any), merge, mark)
			}
		}
	}
	return dst
}
