package pipeline

import (
	"slices"
	"strings"

	"github.com/llmrender/llmrender/manifest"
	"github.com/llmrender/llmrender/rules"
)

// WaivedRulesAnnotation is where a rendered object records the rules its
// values waived; lint honours it on any object, so a team can waive a rule
// for one object in an overlay.
const WaivedRulesAnnotation = "llmrender.dev/waived-rules"

// Lint runs the manifest rules over objects read from files (any manifests,
// not only llmrender's). Findings name the file and line of each object.
func Lint(objs []*manifest.Object, opts LintOptions) (kept, waived []rules.Finding, err error) {
	l := newLinter(opts)
	for _, o := range objs {
		if err := l.add(o); err != nil {
			return nil, nil, err
		}
	}
	kept, waived = l.findings()
	return kept, waived, nil
}

// LintOptions are the checks lint adds to the manifest rules.
type LintOptions struct {
	// RequireDigests: every image must name its digest (LR010), as
	// global.imageDigests: require asks of a render.
	RequireDigests bool
}

// LintFiles is Lint over manifest files, streamed: each object is read,
// checked and dropped, and only findings (and what the rules relating
// objects need of them) are kept, so linting a dump of a cluster costs
// memory for its findings, not for its objects. It returns how many
// objects there were. The same object twice (in two files of a directory,
// say) is a warning (LR022), and both are linted. Findings about a field
// name the field's own line.
func LintFiles(files []manifest.Rendered, opts LintOptions) (kept, waived []rules.Finding, objects int, err error) {
	l := newLinter(opts)
	var repeats []rules.Finding
	err = manifest.EachManifestKeepingRepeats(files, func(o *manifest.Object, first string) {
		if d, err := decode(o); err == nil {
			repeats = append(repeats, rules.Repeated(d, first))
		}
	}, func(o *manifest.Object) error {
		objects++
		return l.add(o)
	})
	if err != nil {
		return nil, nil, 0, err
	}
	kept, waived = l.findings()
	kept = append(kept, repeats...)
	kept, waived = atFieldLines(files, kept), atFieldLines(files, waived)
	return kept, waived, objects, nil
}

// linter checks objects one at a time, remembering which rules each
// object waives.
type linter struct {
	checker *rules.ObjectChecker
	waivers map[string][]string // Where of an object -> the rule IDs it waives
}

func newLinter(opts LintOptions) *linter {
	facts := builtinFacts()
	facts.RequireDigests = opts.RequireDigests
	return &linter{checker: rules.NewObjectChecker(facts), waivers: map[string][]string{}}
}

func (l *linter) add(o *manifest.Object) error {
	d, err := decode(o)
	if err != nil {
		return err
	}
	meta, _ := d.Doc["metadata"].(map[string]any)
	ann, _ := meta["annotations"].(map[string]any)
	if list, _ := ann[WaivedRulesAnnotation].(string); list != "" {
		l.waivers[d.Where()] = strings.Split(strings.ReplaceAll(list, " ", ""), ",")
	}
	l.checker.Add(d)
	return nil
}

// findings are the findings of every object added, those an object
// waives apart.
func (l *linter) findings() (kept, waived []rules.Finding) {
	for _, f := range l.checker.Findings() {
		if ids, ok := l.waivers[f.Where]; ok && slices.Contains(ids, f.Rule) {
			waived = append(waived, f)
			continue
		}
		kept = append(kept, f)
	}
	return kept, waived
}

// decode is one object as the rules read it, at its line in its file.
func decode(o *manifest.Object) (rules.Object, error) {
	d, err := Decode([]*manifest.Object{o})
	if err != nil {
		return rules.Object{}, err
	}
	d[0].Line = o.Line
	return d[0], nil
}

// atFieldLines moves each finding about a field of an object read from a
// file to the field's own line.
func atFieldLines(files []manifest.Rendered, fs []rules.Finding) []rules.Finding {
	refs := make([]manifest.FieldRef, len(fs))
	for i, f := range fs {
		refs[i] = manifest.FieldRef{Source: f.Loc.File, Line: f.Loc.Line, Field: f.Field}
	}
	for i, line := range manifest.FieldLines(files, refs) {
		fs[i] = fs[i].AtLine(line)
	}
	rules.Sort(fs)
	return fs
}
