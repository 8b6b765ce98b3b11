package schema

import (
	"bytes"
	"slices"
	"strings"

	"github.com/llmrender/llmrender/values"
)

// Prune returns the schema document with the subschema of every property
// whose value keep says need not be checked replaced by true, and the
// definitions nothing left refers to replaced by true as well. It walks
// "properties" from the root down: a property that is kept has its own
// properties pruned in turn (keep is asked for each, by JSON pointer into
// the values, "/workload/nodes"). pruned lists the pointers it replaced.
//
// Compiling the result costs a fraction of the whole document (most of a
// compile is checking the document against its meta-schema, which grows
// with the document), and it validates values exactly as the whole does,
// provided the value under every pruned pointer is one the whole schema is
// known to accept there: a chart's own default, where a test holds the
// chart's defaults to its schema. A property's "properties" apply to its
// value unconditionally, so that holds for a default at any depth.
//
// ok is false when the document is not one this can prune safely: a
// reference other than to a definition (into a property, to another file,
// to an anchor), an anchor, a nested $id, or JSON it does not read. The
// caller then compiles the whole document.
func Prune(doc []byte, keep func(pointer string) bool) (out []byte, pruned []string, ok bool) {
	for _, unsafe := range []string{`"$anchor"`, `"$dynamicAnchor"`, `"$recursiveAnchor"`, `"$dynamicRef"`, `"$recursiveRef"`} {
		if bytes.Contains(doc, []byte(unsafe)) {
			return nil, nil, false
		}
	}
	if bytes.Count(doc, []byte(`"$id"`)) > 1 {
		return nil, nil, false
	}
	p := pruner{doc: doc}
	root, end, ok := p.object(skipSpace(doc, 0))
	if !ok || skipSpace(doc, end) != len(doc) {
		return nil, nil, false
	}
	defs := map[string][]member{}
	for _, m := range root {
		switch m.key {
		case "properties":
			if !p.prune(m, "", keep) {
				return nil, nil, false
			}
		case "definitions", "$defs":
			d, _, ok := p.object(m.start)
			if !ok {
				return nil, nil, false
			}
			defs[m.key] = d
		}
	}

	// What is left refers to definitions: keep those, and the ones they
	// refer to in turn.
	outside := []span{{0, len(doc)}}
	for _, d := range defs {
		for _, m := range d {
			outside = cut(outside, span{m.start, m.end})
		}
	}
	for _, r := range p.replaced {
		outside = cut(outside, r)
	}
	needed := map[string]bool{}
	queue := outside
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		refs, ok := refsIn(doc[s.start:s.end])
		if !ok {
			return nil, nil, false
		}
		for _, ref := range refs {
			if ref == "#" {
				continue
			}
			key, name, ok := definitionRef(ref)
			if !ok {
				return nil, nil, false
			}
			if needed[key+"/"+name] {
				continue
			}
			i := slices.IndexFunc(defs[key], func(m member) bool { return m.key == name })
			if i < 0 {
				return nil, nil, false
			}
			needed[key+"/"+name] = true
			queue = append(queue, span{defs[key][i].start, defs[key][i].end})
		}
	}
	for key, d := range defs {
		for _, m := range d {
			if !needed[key+"/"+m.key] {
				p.replaced = append(p.replaced, span{m.start, m.end})
			}
		}
	}

	slices.SortFunc(p.replaced, func(a, b span) int { return a.start - b.start })
	var buf bytes.Buffer
	buf.Grow(len(doc))
	at := 0
	for _, r := range p.replaced {
		buf.Write(doc[at:r.start])
		buf.WriteString("true")
		at = r.end
	}
	buf.Write(doc[at:])
	return buf.Bytes(), p.pointers, true
}

type pruner struct {
	doc      []byte
	replaced []span   // value ranges written as true
	pointers []string // the values' pointers whose schemas were replaced
}

type span struct{ start, end int }

// member is one key of a JSON object and the range of its value.
type member struct {
	key        string
	start, end int
}

// prune replaces the schemas under the "properties" member m whose values
// need no check, and descends into the others.
func (p *pruner) prune(m member, prefix string, keep func(string) bool) bool {
	props, _, ok := p.object(m.start)
	if !ok {
		return false
	}
	for _, prop := range props {
		ptr := prefix + values.Pointer(prop.key)
		if !keep(ptr) {
			p.replaced = append(p.replaced, span{prop.start, prop.end})
			p.pointers = append(p.pointers, ptr)
			continue
		}
		if p.doc[prop.start] != '{' {
			continue
		}
		sub, _, ok := p.object(prop.start)
		if !ok {
			return false
		}
		for _, s := range sub {
			if s.key == "properties" && !p.prune(s, ptr, keep) {
				return false
			}
		}
	}
	return true
}

// object reads the JSON object starting at i: its members, in order, and
// where it ends. Keys with escapes are not read (ok is false).
func (p *pruner) object(i int) (members []member, end int, ok bool) {
	doc := p.doc
	if i >= len(doc) || doc[i] != '{' {
		return nil, 0, false
	}
	i = skipSpace(doc, i+1)
	if i < len(doc) && doc[i] == '}' {
		return nil, i + 1, true
	}
	for i < len(doc) {
		if doc[i] != '"' {
			return nil, 0, false
		}
		keyEnd := bytes.IndexByte(doc[i+1:], '"')
		if keyEnd < 0 {
			return nil, 0, false
		}
		key := doc[i+1 : i+1+keyEnd]
		if bytes.IndexByte(key, '\\') >= 0 {
			return nil, 0, false
		}
		i = skipSpace(doc, i+keyEnd+2)
		if i >= len(doc) || doc[i] != ':' {
			return nil, 0, false
		}
		start := skipSpace(doc, i+1)
		valueEnd, ok := skipValue(doc, start)
		if !ok {
			return nil, 0, false
		}
		members = append(members, member{string(key), start, valueEnd})
		i = skipSpace(doc, valueEnd)
		if i >= len(doc) {
			break
		}
		switch doc[i] {
		case ',':
			i = skipSpace(doc, i+1)
		case '}':
			return members, i + 1, true
		default:
			return nil, 0, false
		}
	}
	return nil, 0, false
}

// skipValue returns where the JSON value starting at i ends.
func skipValue(doc []byte, i int) (int, bool) {
	if i >= len(doc) {
		return 0, false
	}
	switch doc[i] {
	case '"':
		return skipString(doc, i)
	case '{', '[':
		depth := 0
		for i < len(doc) {
			switch doc[i] {
			case '"':
				end, ok := skipString(doc, i)
				if !ok {
					return 0, false
				}
				i = end
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1, true
				}
			}
			i++
		}
		return 0, false
	default: // a number, true, false or null
		start := i
		for i < len(doc) && !strings.ContainsRune(",}] \t\r\n", rune(doc[i])) {
			i++
		}
		return i, i > start
	}
}

func skipString(doc []byte, i int) (int, bool) {
	for j := i + 1; j < len(doc); j++ {
		switch doc[j] {
		case '\\':
			j++
		case '"':
			return j + 1, true
		}
	}
	return 0, false
}

func skipSpace(doc []byte, i int) int {
	for i < len(doc) && (doc[i] == ' ' || doc[i] == '\t' || doc[i] == '\r' || doc[i] == '\n') {
		i++
	}
	return i
}

// cut removes r from the spans.
func cut(spans []span, r span) []span {
	var out []span
	for _, s := range spans {
		if r.end <= s.start || r.start >= s.end {
			out = append(out, s)
			continue
		}
		if s.start < r.start {
			out = append(out, span{s.start, r.start})
		}
		if r.end < s.end {
			out = append(out, span{r.end, s.end})
		}
	}
	return out
}

// refsIn lists the $ref values in text; ok is false when a "$ref" is not
// followed by a plain string.
func refsIn(text []byte) (refs []string, ok bool) {
	key := []byte(`"$ref"`)
	for {
		i := bytes.Index(text, key)
		if i < 0 {
			return refs, true
		}
		text = text[i+len(key):]
		j := skipSpace(text, 0)
		if j >= len(text) || text[j] != ':' {
			return nil, false
		}
		j = skipSpace(text, j+1)
		if j >= len(text) || text[j] != '"' {
			return nil, false
		}
		end := bytes.IndexAny(text[j+1:], `"\`)
		if end < 0 || text[j+1+end] != '"' {
			return nil, false
		}
		refs = append(refs, string(text[j+1:j+1+end]))
		text = text[j+2+end:]
	}
}

// definitionRef reads "#/definitions/NAME" or "#/$defs/NAME", or a pointer
// below one of them.
func definitionRef(ref string) (key, name string, ok bool) {
	for _, key := range []string{"definitions", "$defs"} {
		if rest, found := strings.CutPrefix(ref, "#/"+key+"/"); found {
			name, _, _ := strings.Cut(rest, "/")
			if name == "" || strings.ContainsAny(name, "~%") {
				return "", "", false
			}
			return key, name, true
		}
	}
	return "", "", false
}
