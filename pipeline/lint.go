package pipeline

import (
	"slices"
	"strings"

	"github.com/llmrender/llmrender/renderer"
	"github.com/llmrender/llmrender/rules"
)

// WaivedRulesAnnotation is where a rendered object records the rules its
// values waived; lint honours it on any object, so a team can waive a rule
// for one object in an overlay.
const WaivedRulesAnnotation = "llmrender.dev/waived-rules"

// Lint runs the manifest rules over objects read from files (any manifests,
// not only llmrender's). Findings name the file and line of each object.
func Lint(objs []*renderer.Object, opts LintOptions) (kept, waived []rules.Finding, err error) {
	decoded, err := Decode(objs)
	if err != nil {
		return nil, nil, err
	}
	for i := range decoded {
		decoded[i].Line = objs[i].Line
	}
	kept, waived = lint(decoded, opts)
	return kept, waived, nil
}

// LintOptions are the checks lint adds to the manifest rules.
type LintOptions struct {
	// RequireDigests: every image must name its digest (LR010), as
	// global.imageDigests: require asks of a render.
	RequireDigests bool
}

// LintFiles is Lint over manifest files, read one object at a time: only
// each object's decoded tree is kept, so linting costs about what the
// objects hold, not the parser's copies of them. It returns how many
// objects there were. The same object twice (in two files of a directory,
// say) is a warning (LR022), and both are linted. Findings about a field
// name the field's own line.
func LintFiles(files []renderer.Rendered, opts LintOptions) (kept, waived []rules.Finding, objects int, err error) {
	var decoded []rules.Object
	var repeats []rules.Finding
	decode := func(o *renderer.Object) (rules.Object, error) {
		d, err := Decode([]*renderer.Object{o})
		if err != nil {
			return rules.Object{}, err
		}
		d[0].Line = o.Line
		return d[0], nil
	}
	err = renderer.EachManifestKeepingRepeats(files, func(o *renderer.Object, first string) {
		if d, err := decode(o); err == nil {
			repeats = append(repeats, rules.Repeated(d, first))
		}
	}, func(o *renderer.Object) error {
		d, err := decode(o)
		decoded = append(decoded, d)
		return err
	})
	if err != nil {
		return nil, nil, 0, err
	}
	kept, waived = lint(decoded, opts)
	kept = append(kept, repeats...)
	kept, waived = atFieldLines(files, kept), atFieldLines(files, waived)
	return kept, waived, len(decoded), nil
}

// atFieldLines moves each finding about a field of an object read from a
// file to the field's own line.
func atFieldLines(files []renderer.Rendered, fs []rules.Finding) []rules.Finding {
	refs := make([]renderer.FieldRef, len(fs))
	for i, f := range fs {
		refs[i] = renderer.FieldRef{Source: f.Loc.File, Line: f.Loc.Line, Field: f.Field}
	}
	for i, line := range renderer.FieldLines(files, refs) {
		fs[i] = fs[i].AtLine(line)
	}
	rules.Sort(fs)
	return fs
}

func lint(decoded []rules.Object, opts LintOptions) (kept, waived []rules.Finding) {
	waivers := map[string][]string{} // Where prefix of an object -> rule IDs
	for i := range decoded {
		meta, _ := decoded[i].Doc["metadata"].(map[string]any)
		ann, _ := meta["annotations"].(map[string]any)
		if list, _ := ann[WaivedRulesAnnotation].(string); list != "" {
			waivers[decoded[i].Where()] = strings.Split(strings.ReplaceAll(list, " ", ""), ",")
		}
	}
	facts := rules.FactsFrom(builtinValues())
	facts.RequireDigests = opts.RequireDigests
	for _, f := range rules.CheckObjects(decoded, facts) {
		if ids, ok := waivers[f.Where]; ok && slices.Contains(ids, f.Rule) {
			waived = append(waived, f)
			continue
		}
		kept = append(kept, f)
	}
	return kept, waived
}
