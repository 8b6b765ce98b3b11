package values

import "testing"

// Positions over a base: what is recorded on top wins, the base answers the
// rest, FillAt yields to both, and nothing is written into the base.
func TestPositionsOverBase(t *testing.T) {
	at := func(line int) Location { return Location{File: "f", Line: line, Column: 1} }
	base := NewPositions()
	base.Values["/a"], base.Values["/a/b"], base.Keys["/a/b"] = at(1), at(2), at(2)
	p := NewPositionsOver(base)
	p.Values["/a/b"] = at(10)
	p.FillAt("/a", &Positions{Values: map[string]Location{"/b": at(20), "/c": at(21)}, Keys: map[string]Location{"/b": at(20)}})

	for ptr, want := range map[string]int{"/a": 1, "/a/b": 10, "/a/c": 21, "/a/b/x/y": 10, "/a/z": 1} {
		if loc, ok := p.Lookup(ptr); !ok || loc.Line != want {
			t.Errorf("Lookup(%s) = %v, %v; want line %d", ptr, loc, ok, want)
		}
	}
	if loc, ok := p.LookupKey("/a/b"); !ok || loc.Line != 2 {
		t.Errorf("LookupKey(/a/b) = %v; want the base's key, line 2", loc)
	}
	sub := p.Sub("/a")
	if loc, ok := sub.ValueAt("/b"); !ok || loc.Line != 10 {
		t.Errorf("Sub(/a) /b = %v; want line 10", loc)
	}
	if loc, ok := sub.ValueAt(""); !ok || loc.Line != 1 {
		t.Errorf("Sub(/a) top = %v; want the base's line 1", loc)
	}
	flat := NewPositions()
	flat.Overlay(p)
	if len(flat.Values) != 3 || flat.Values["/a/b"].Line != 10 {
		t.Errorf("Overlay of layered positions = %v; want 3 values with the top's /a/b", flat.Values)
	}
	if len(base.Values) != 2 || base.Values["/a/b"].Line != 2 {
		t.Errorf("the base was written: %v", base.Values)
	}
}
