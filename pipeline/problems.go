package pipeline

import (
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/llmrender/llmrender/rules"
	"github.com/llmrender/llmrender/schema"
	"github.com/llmrender/llmrender/values"
)

// Problems is everything wrong with a render's values that one run can
// know: the schema's violations and the errors of the values rules that do
// not read a value the schema refused. Reporting them together saves a
// round of fix and rerun per kind of mistake.
type Problems struct {
	Schema schema.Violations
	Rules  []rules.Finding
}

// Error lists every problem, ordered by file and line.
func (p *Problems) Error() string {
	lines := p.Lines()
	return strings.Join(lines, "\n")
}

// Lines are the problems one per line, ordered by file, line and column;
// problems without a position (a flag, an object) come last.
func (p *Problems) Lines() []string {
	type item struct {
		file      string
		line, col int
		text      string
	}
	var items []item
	for _, v := range p.Schema {
		items = append(items, item{v.Where.File, v.Where.Line, v.Where.Column, v.Error()})
	}
	for _, f := range p.Rules {
		it := item{text: f.String()}
		if m := whereRE.FindStringSubmatch(f.Where); m != nil {
			it.file = m[1]
			it.line, _ = strconv.Atoi(m[2])
			it.col, _ = strconv.Atoi(m[3])
		}
		items = append(items, it)
	}
	sort.SliceStable(items, func(i, j int) bool {
		a, b := items[i], items[j]
		if (a.line == 0) != (b.line == 0) {
			return b.line == 0
		}
		if a.file != b.file {
			return a.file < b.file
		}
		if a.line != b.line {
			return a.line < b.line
		}
		return a.col < b.col
	})
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.text
	}
	return out
}

// Unwrap exposes the parts, so that errors.As finds the schema's
// violations or the rules' findings.
func (p *Problems) Unwrap() []error {
	var errs []error
	if len(p.Schema) > 0 {
		errs = append(errs, p.Schema)
	}
	if len(p.Rules) > 0 {
		errs = append(errs, &rules.Failed{Findings: p.Rules})
	}
	return errs
}

var whereRE = regexp.MustCompile(`^(.*):(\d+):(\d+)$`)

// withoutRefused returns values in which every value the schema refused is
// replaced by the chart's default, or removed where the chart has none, so
// the rules can read the rest.
func withoutRefused(merged, defaults map[string]any, vs schema.Violations) map[string]any {
	out := values.DeepCopy(merged).(map[string]any)
	for _, v := range vs {
		if v.Pointer == "" {
			continue
		}
		parts := strings.Split(strings.TrimPrefix(v.Pointer, "/"), "/")
		for i, p := range parts {
			parts[i] = strings.NewReplacer("~1", "/", "~0", "~").Replace(p)
		}
		replace(out, defaults, parts)
	}
	return out
}

// replace sets the value at path in dst to the one at path in defaults, or
// removes it. Lists are replaced whole: the chart's default list stands for
// a refused item.
func replace(dst, defaults map[string]any, path []string) {
	key := path[0]
	def, hasDef := defaults[key]
	if len(path) == 1 {
		if hasDef {
			dst[key] = values.DeepCopy(def)
		} else {
			delete(dst, key)
		}
		return
	}
	child, ok := dst[key].(map[string]any)
	defChild, _ := def.(map[string]any)
	if !ok {
		if hasDef {
			dst[key] = values.DeepCopy(def)
		} else {
			delete(dst, key)
		}
		return
	}
	if defChild == nil {
		defChild = map[string]any{}
	}
	replace(child, defChild, path[1:])
}

// refusedUnder tells whether a rule's field lies in a value the schema
// refused: its finding would be about the chart's default, not the user's.
func refusedUnder(field string, vs schema.Violations) bool {
	for _, v := range vs {
		if v.Pointer == "" || field == v.Pointer || strings.HasPrefix(field, v.Pointer+"/") || strings.HasPrefix(v.Pointer, field+"/") {
			return true
		}
	}
	return false
}
