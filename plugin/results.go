package plugin

import (
	"errors"
	"os"
	"strings"

	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/llmrender/llmrender/model"
	"github.com/llmrender/llmrender/rules"
	"github.com/llmrender/llmrender/schema"
	"github.com/llmrender/llmrender/values"
)

// result is one entry of a ResourceList's results, as the KRM Functions
// Specification defines it: field for field kyaml's framework.Result, which
// kpt decodes them into (a test holds the two together). The framework
// package itself is not linked: its dependencies would add about a
// millisecond of start-up to every llmrender command.
type result struct {
	Message     string                    `yaml:"message"`
	Severity    string                    `yaml:"severity"`
	ResourceRef *kyaml.ResourceIdentifier `yaml:"resourceRef,omitempty"`
	Field       *field                    `yaml:"field,omitempty"`
	File        *file                     `yaml:"file,omitempty"`
	Tags        map[string]string         `yaml:"tags,omitempty"`
}

type field struct {
	Path string `yaml:"path"`
}

type file struct {
	Path string `yaml:"path"`
}

// reporter turns findings and errors into results that point where the
// client can show them: the object (resourceRef), the field in it, and the
// file that holds it.
type reporter struct {
	config      kyaml.ResourceIdentifier   // the function config as written
	file        string                     // its file as the client or user names it, "" when unknown
	valuesFiles map[string]string          // values files as read -> as the client names them
	objects     map[rules.ObjectRef]string // generated objects -> their files
}

// configRef is the resourceRef for the config; nil when it lacks a field
// the specification requires.
func (r reporter) configRef() *kyaml.ResourceIdentifier {
	if r.config.APIVersion == "" || r.config.Kind == "" || r.config.Name == "" {
		return nil
	}
	ref := r.config
	return &ref
}

// at fills in what a position in the values says: the config and the spec
// field, the file the value was written in, and (as the specification has
// no place for them) its line and column before the message.
func (r reporter) at(res *result, pointer string, loc values.Location) {
	res.ResourceRef = r.configRef()
	// A ConfigMap's settings are key=value lines, not fields: the message
	// names the setting instead.
	if res.ResourceRef != nil && pointer != "" && r.config.Kind == Kind {
		res.Field = &field{Path: specPath(pointer)}
	}
	if p := r.fileOf(loc.File); p != "" {
		res.File = &file{Path: p}
		loc.File = p
	}
	switch {
	case loc.Flag != "":
		res.Message = loc.Flag + ": " + res.Message
	case loc.Line > 0:
		res.Message = loc.String() + ": " + res.Message
	}
}

// fileOf names a file a value came from as the client would: the config's
// file, or a values file inside the client's root.
func (r reporter) fileOf(f string) string {
	if f != "" && f == r.file {
		return f
	}
	return r.valuesFiles[f]
}

func (r reporter) findings(fs []rules.Finding) []result {
	var rs []result
	for _, f := range fs {
		rs = append(rs, r.finding(f))
	}
	return rs
}

func (r reporter) finding(f rules.Finding) result {
	res := result{Message: f.Message, Severity: string(f.Severity), Tags: map[string]string{"rule": f.Rule}}
	if o := f.Object; o != nil {
		res.ResourceRef = &kyaml.ResourceIdentifier{
			TypeMeta: kyaml.TypeMeta{APIVersion: o.APIVersion, Kind: o.Kind},
			NameMeta: kyaml.NameMeta{Name: o.Name, Namespace: o.Namespace},
		}
		if f.Field != "" {
			res.Field = &field{Path: f.Field}
		}
		if p := r.objects[*o]; p != "" {
			res.File = &file{Path: p}
		}
		return res
	}
	r.at(&res, f.Field, f.Loc)
	return res
}

// errors turns an error into results, one per problem.
func (r reporter) errors(err error) []result {
	var vs schema.Violations
	var failed *rules.Failed
	var ce *ConfigError
	var ve *values.Error
	var me *model.FileError
	// Schema violations and rule findings can come together (a
	// *pipeline.Problems unwraps to both): report each.
	var rs []result
	if errors.As(err, &vs) {
		for _, v := range vs {
			res := result{Message: v.Message, Severity: "error"}
			var loc values.Location
			if v.Known {
				loc = v.Where
			}
			r.at(&res, v.Pointer, loc)
			if res.Field == nil && v.Pointer != "" {
				res.Message = v.Pointer + ": " + res.Message
			}
			rs = append(rs, res)
		}
	}
	if errors.As(err, &failed) {
		rs = append(rs, r.findings(failed.Findings)...)
	}
	switch {
	case rs != nil:
		return rs
	case errors.As(err, &ce):
		res := result{Message: ce.Msg, Severity: "error", ResourceRef: r.configRef()}
		if ce.Where != r.file && strings.HasPrefix(ce.Where, r.file+":") {
			res.Message = ce.Where + ": " + res.Message // the line
		}
		if ce.Field != "" {
			if res.ResourceRef != nil {
				res.Field = &field{Path: ce.Field}
			} else {
				res.Message = ce.Field + ": " + res.Message
			}
		}
		if r.file != "" {
			res.File = &file{Path: r.file}
		}
		return []result{res}
	case errors.As(err, &me):
		res := result{Message: me.Msg, Severity: "error"}
		r.at(&res, me.Pointer, me.Loc)
		if res.Field == nil && me.Loc.Line == 0 && me.Loc.Flag == "" && me.Loc.File != "" {
			res.Message = me.Loc.File + ": " + res.Message
		}
		return []result{res}
	case errors.As(err, &ve):
		res := result{Message: ve.Msg, Severity: "error"}
		r.at(&res, "", ve.Loc)
		if ve.Loc.Line == 0 && ve.Loc.Flag == "" && ve.Loc.File != "" {
			res.Message = ve.Loc.File + ": " + res.Message
		}
		return []result{res}
	}
	res := result{Message: err.Error(), Severity: "error", ResourceRef: r.configRef()}
	if r.file != "" {
		res.File = &file{Path: r.file}
	}
	return []result{res}
}

// specPath turns a values pointer ("/model/name", "/steps/0") into the
// config's field path ("spec.model.name", "spec.steps[0]").
func specPath(pointer string) string {
	var b strings.Builder
	b.WriteString("spec")
	if pointer == "" {
		return b.String()
	}
	for _, seg := range strings.Split(pointer[1:], "/") {
		seg = strings.NewReplacer("~1", "/", "~0", "~").Replace(seg)
		if seg != "" && strings.Trim(seg, "0123456789") == "" {
			b.WriteString("[" + seg + "]")
		} else {
			b.WriteString("." + seg)
		}
	}
	return b.String()
}

func isFile(p string) bool {
	info, err := os.Stat(p)
	return err == nil && info.Mode().IsRegular()
}
