package schema

import (
	"reflect"
	"strings"
	"sync"
	"unsafe"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// CompileTrusted compiles a document that is known to be a valid schema of
// the draft its $schema names: the built-in chart's, or a pruned copy of it
// (see Prune); pipeline's TestBuiltinDefaultsPassTheirWholeSchema compiles
// the whole with Compile, so against its meta-schema. It compiles as Compile does, without checking the document
// against the meta-schema again: that check allocates about a megabyte for
// the built-in chart's pruned schema, a fifth of a whole render, in every
// process. A document it cannot read that way (no $schema, or one that names
// no draft the library knows) is compiled by Compile.
func CompileTrusted(data []byte) (*Schema, error) {
	draft, doc, ok := withoutDraft(data)
	if !ok {
		return Compile(data, nil)
	}
	return compile(doc, nil, draft)
}

// withoutDraft returns the document without its top-level $schema member
// and a copy of the draft that member named which checks no document
// against its meta-schema. The library takes a document's draft from its
// $schema, and the compiler's own Draft only for a document without one.
func withoutDraft(data []byte) (*jsonschema.Draft, []byte, bool) {
	p := pruner{doc: data}
	root, end, ok := p.object(skipSpace(data, 0))
	if !ok || skipSpace(data, end) != len(data) {
		return nil, nil, false
	}
	for i, m := range root {
		if m.key != "$schema" {
			continue
		}
		url, ok := stringValue(data[m.start:m.end])
		if !ok {
			return nil, nil, false
		}
		draft := uncheckedDrafts()[draftURL(url)]
		if draft == nil {
			return nil, nil, false
		}
		// Cut the member with the comma that separates it from the next
		// one, or from the one before when it is the last.
		from, to := m.keyStart, m.end
		switch {
		case i+1 < len(root):
			to = root[i+1].keyStart
		case i > 0:
			from = root[i-1].end
		}
		out := make([]byte, 0, len(data)-(to-from))
		out = append(append(out, data[:from]...), data[to:]...)
		return draft, out, true
	}
	return nil, nil, false
}

// stringValue reads a JSON string without escapes.
func stringValue(v []byte) (string, bool) {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' || strings.ContainsRune(string(v), '\\') {
		return "", false
	}
	return string(v[1 : len(v)-1]), true
}

// draftURL is a draft's URL as the library compares it: https, without an
// empty fragment.
func draftURL(url string) string {
	if rest, ok := strings.CutPrefix(url, "http://"); ok {
		url = "https://" + rest
	}
	url = strings.TrimSuffix(url, "#/")
	return strings.TrimSuffix(url, "#")
}

// uncheckedDrafts are copies of the library's drafts, by URL, whose
// meta-schema is unset. The library has no option to skip the check, and it
// makes the check only when a draft has a meta-schema; the field is not
// exported, so it is cleared by reflection. If a version of the library
// names the field otherwise, the map is empty and every document is checked
// (TestCompileTrustedSkipsTheMetaSchema fails then).
var uncheckedDrafts = sync.OnceValue(func() map[string]*jsonschema.Draft {
	out := map[string]*jsonschema.Draft{}
	for _, d := range []*jsonschema.Draft{jsonschema.Draft4, jsonschema.Draft6, jsonschema.Draft7, jsonschema.Draft2019, jsonschema.Draft2020} {
		c := *d
		meta := reflect.ValueOf(&c).Elem().FieldByName("meta")
		if !meta.IsValid() || meta.Type() != reflect.TypeFor[*jsonschema.Schema]() {
			return nil
		}
		reflect.NewAt(meta.Type(), unsafe.Pointer(meta.UnsafeAddr())).Elem().SetZero()
		out[d.URL()] = &c
	}
	return out
})
