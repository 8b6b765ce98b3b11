// Package values reads Helm-style values: YAML files with the position of every
// value remembered, --set style flags, and the merge order Helm uses. It knows
// nothing about charts or templates.
package values

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
)

// Location says where a value came from: a line and column in a file, or a
// command-line flag.
type Location struct {
	File   string // file name as the user gave it ("-" is stdin)
	Line   int    // 1-based; 0 when the value came from a flag
	Column int    // 1-based
	Flag   string // e.g. "--set replicas=2"; empty for files
}

func (l Location) String() string {
	switch {
	case l.Flag != "":
		return l.Flag
	case l.Line > 0:
		return fmt.Sprintf("%s:%d:%d", l.File, l.Line, l.Column)
	default:
		return l.File
	}
}

// Positions maps a JSON pointer ("/a/b/0") to where the value at that pointer
// was written. Keys holds where a map key was written, for errors about the key
// itself (unknown or misspelt keys).
//
// Positions may lie over a base (a chart's own defaults, shared by every
// render of it and never written through this): what Values and Keys hold
// wins, and anything they lack is looked up in the base. A chart's defaults
// hold thousands of positions; copying them for each render cost more than
// the rest of reading the values.
type Positions struct {
	Values map[string]Location
	Keys   map[string]Location
	base   *Positions

	lazy     func() *Positions // computes the base on first use (see ParseYAMLPositionsLater)
	lazyOnce sync.Once
}

// under is the base, computed first when it is lazy.
func (p *Positions) under() *Positions {
	if p.lazy != nil {
		p.lazyOnce.Do(func() { p.base = p.lazy() })
	}
	return p.base
}

// NewPositions returns empty positions.
func NewPositions() *Positions {
	return &Positions{Values: map[string]Location{}, Keys: map[string]Location{}}
}

// NewPositionsOver returns empty positions over base, which is only read.
func NewPositionsOver(base *Positions) *Positions {
	p := NewPositions()
	p.base = base
	return p
}

// Overlay records every position of other over p: a later source wins.
func (p *Positions) Overlay(other *Positions) { p.OverlayAt("", other) }

// OverlayAt records every position of other, whose pointers start at the
// top of other's own values, under prefix (a JSON pointer, "" for the top).
func (p *Positions) OverlayAt(prefix string, other *Positions) {
	if other == nil {
		return
	}
	p.OverlayAt(prefix, other.under())
	for k, v := range other.Values {
		p.Values[prefix+k] = v
	}
	for k, v := range other.Keys {
		p.Keys[prefix+k] = v
	}
}

// FillAt is OverlayAt for positions that yield to those p already holds:
// only pointers p knows nothing about are recorded.
func (p *Positions) FillAt(prefix string, other *Positions) {
	if other == nil {
		return
	}
	for k, v := range other.Values {
		if _, ok := p.ValueAt(prefix + k); !ok {
			p.Values[prefix+k] = v
		}
	}
	for k, v := range other.Keys {
		if _, ok := p.KeyAt(prefix + k); !ok {
			p.Keys[prefix+k] = v
		}
	}
	p.FillAt(prefix, other.under())
}

// ValueAt is where the value at exactly pointer was written.
func (p *Positions) ValueAt(pointer string) (Location, bool) {
	for q := p; q != nil; q = q.under() {
		if loc, ok := q.Values[pointer]; ok {
			return loc, true
		}
	}
	return Location{}, false
}

// Given tells whether the value at exactly pointer was written over the
// base (in a values file or a flag), not taken from the base (a chart's
// defaults).
func (p *Positions) Given(pointer string) bool {
	if p == nil {
		return false
	}
	_, ok := p.Values[pointer]
	return ok
}

// KeyAt is where the key naming exactly pointer was written.
func (p *Positions) KeyAt(pointer string) (Location, bool) {
	for q := p; q != nil; q = q.under() {
		if loc, ok := q.Keys[pointer]; ok {
			return loc, true
		}
	}
	return Location{}, false
}

// Lookup finds where the value at pointer came from. If the exact pointer was
// never recorded (a value filled in by a default, say) it walks up to the
// nearest recorded ancestor. ok is false when nothing on the path is known.
func (p *Positions) Lookup(pointer string) (Location, bool) {
	for ptr := pointer; ; {
		if loc, ok := p.ValueAt(ptr); ok {
			return loc, true
		}
		if ptr == "" {
			return Location{}, false
		}
		ptr = ptr[:strings.LastIndexByte(ptr, '/')]
	}
}

// LookupKey finds where the key that names pointer was written, falling back
// to where its value was.
func (p *Positions) LookupKey(pointer string) (Location, bool) {
	if loc, ok := p.KeyAt(pointer); ok {
		return loc, true
	}
	return p.Lookup(pointer)
}

// Pointer builds a JSON pointer (RFC 6901) from path segments.
func Pointer(segments ...string) string {
	var b strings.Builder
	for _, s := range segments {
		b.WriteByte('/')
		b.WriteString(EscapePointer(s))
	}
	return b.String()
}

// EscapePointer escapes one JSON pointer segment.
func EscapePointer(s string) string {
	if !strings.ContainsAny(s, "~/") {
		return s
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// At is the value at pointer in a values tree (maps and lists), nil when
// there is none.
func At(doc any, pointer string) any {
	v, _ := Lookup(doc, pointer)
	return v
}

// Lookup is the value at pointer in a values tree (maps and lists), and
// whether there is one.
func Lookup(doc any, pointer string) (any, bool) {
	if pointer == "" || pointer == "/" {
		return doc, true
	}
	for _, seg := range strings.Split(strings.TrimPrefix(pointer, "/"), "/") {
		seg = strings.ReplaceAll(strings.ReplaceAll(seg, "~1", "/"), "~0", "~")
		switch x := doc.(type) {
		case map[string]any:
			v, ok := x[seg]
			if !ok {
				return nil, false
			}
			doc = v
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(x) {
				return nil, false
			}
			doc = x[i]
		default:
			return nil, false
		}
	}
	return doc, true
}

func childPointer(parent, key string) string { return parent + "/" + EscapePointer(key) }

func indexPointer(parent string, i int) string { return parent + "/" + strconv.Itoa(i) }

// Sub returns the positions under prefix, with pointers relative to it.
func (p *Positions) Sub(prefix string) *Positions {
	if prefix == "" {
		return p
	}
	out := NewPositions()
	if base := p.under(); base != nil {
		out = base.Sub(prefix)
	}
	for k, v := range p.Values {
		if rest, ok := strings.CutPrefix(k, prefix); ok && (rest == "" || rest[0] == '/') {
			out.Values[rest] = v
		}
	}
	for k, v := range p.Keys {
		if rest, ok := strings.CutPrefix(k, prefix); ok && (rest == "" || rest[0] == '/') {
			out.Keys[rest] = v
		}
	}
	return out
}
