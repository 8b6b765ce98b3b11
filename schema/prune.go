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
	refs, ok := dollarKeys(doc)
	if !ok {
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
	excluded := slices.Clone(p.replaced)
	for _, d := range defs {
		for _, m := range d {
			excluded = append(excluded, span{m.start, m.end})
		}
	}
	outside := complement(excluded, len(doc))
	needed := map[string]bool{}
	queue := outside
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		for _, r := range refs {
			if r.at < s.start || r.at >= s.end {
				continue
			}
			if r.ref == "#" {
				continue
			}
			key, name, ok := definitionRef(r.ref)
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
	keyStart   int // where its key's opening quote is
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
		keyStart := i
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
		members = append(members, member{string(key), keyStart, start, valueEnd})
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
	for j := i + 1; ; {
		q := bytes.IndexByte(doc[j:], '"')
		if q < 0 {
			return 0, false
		}
		j += q
		// The quote ends the string unless an odd number of backslashes
		// escapes it.
		escapes := 0
		for k := j - 1; k > i && doc[k] == '\\'; k-- {
			escapes++
		}
		if escapes%2 == 0 {
			return j + 1, true
		}
		j++
	}
}

func skipSpace(doc []byte, i int) int {
	for i < len(doc) && (doc[i] == ' ' || doc[i] == '\t' || doc[i] == '\r' || doc[i] == '\n') {
		i++
	}
	return i
}

// complement is what of [0, size) the spans, which do not overlap, leave.
func complement(spans []span, size int) []span {
	slices.SortFunc(spans, func(a, b span) int { return a.start - b.start })
	var out []span
	at := 0
	for _, s := range spans {
		if s.start > at {
			out = append(out, span{at, s.start})
		}
		at = max(at, s.end)
	}
	if at < size {
		out = append(out, span{at, size})
	}
	return out
}

// ref is a "$ref" of the document: where its key starts, and its value.
type ref struct {
	at  int
	ref string
}

// dollarKeys finds every "$ref" of doc, with its value. ok is false when
// doc has what would let one part of the schema reach into another other
// than through a $ref to a definition: an anchor, a dynamic or recursive
// reference, or an $id below the root; or a "$ref" that is not followed by
// a plain string. It looks at every "$", which JSON keywords alone start
// with, and is wrong only towards caution: "$anchor" as a value refuses.
func dollarKeys(doc []byte) (refs []ref, ok bool) {
	ids := 0
	for i := 0; ; {
		j := bytes.IndexByte(doc[i:], '$')
		if j < 0 {
			return refs, true
		}
		i += j
		if i == 0 || doc[i-1] != '"' {
			i++
			continue
		}
		end := bytes.IndexByte(doc[i:], '"')
		if end < 0 {
			return nil, false
		}
		word := string(doc[i : i+end])
		next := i + end + 1
		switch word {
		case "$anchor", "$dynamicAnchor", "$recursiveAnchor", "$dynamicRef", "$recursiveRef":
			return nil, false
		case "$id":
			if ids++; ids > 1 {
				return nil, false
			}
		case "$ref":
			k := skipSpace(doc, next)
			if k >= len(doc) || doc[k] != ':' {
				return nil, false
			}
			k = skipSpace(doc, k+1)
			if k >= len(doc) || doc[k] != '"' {
				return nil, false
			}
			v := bytes.IndexAny(doc[k+1:], `"\`)
			if v < 0 || doc[k+1+v] != '"' {
				return nil, false
			}
			refs = append(refs, ref{at: i - 1, ref: string(doc[k+1 : k+1+v])})
			next = k + 2 + v
		}
		i = next
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
