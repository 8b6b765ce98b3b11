package values

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestApplySetGrammar(t *testing.T) {
	cases := []struct {
		expr string
		kind SetKind
		want map[string]any
	}{
		{"a=1", SetTyped, map[string]any{"a": int64(1)}},
		{"a=1,b=x", SetTyped, map[string]any{"a": int64(1), "b": "x"}},
		{"a.b.c=true", SetTyped, map[string]any{"a": map[string]any{"b": map[string]any{"c": true}}}},
		{"a=TRUE,b=False,c=NULL", SetTyped, map[string]any{"a": true, "b": false, "c": nil}},
		{"a=0,b=007,c=1.5,d=-3", SetTyped, map[string]any{"a": int64(0), "b": "007", "c": "1.5", "d": int64(-3)}},
		{"a=", SetTyped, map[string]any{"a": ""}},
		{"a[0]=x,a[2]=z", SetTyped, map[string]any{"a": []any{"x", nil, "z"}}},
		{"a[0].b=1", SetTyped, map[string]any{"a": []any{map[string]any{"b": int64(1)}}}},
		{"a[0][1]=x", SetTyped, map[string]any{"a": []any{[]any{nil, "x"}}}},
		{"a={x,y,3}", SetTyped, map[string]any{"a": []any{"x", "y", int64(3)}}},
		{`a=x\,y`, SetTyped, map[string]any{"a": "x,y"}},
		{`a\.b=1`, SetTyped, map[string]any{"a.b": int64(1)}},
		{`nodeSelector.kubernetes\.io/os=linux`, SetTyped, map[string]any{"nodeSelector": map[string]any{"kubernetes.io/os": "linux"}}},
		{"a=1,b=true", SetString, map[string]any{"a": "1", "b": "true"}},
		{`a={"b":[1,2.5,"c"]}`, SetJSON, map[string]any{"a": map[string]any{"b": []any{int64(1), 2.5, "c"}}}},
		{`a=null`, SetJSON, map[string]any{"a": nil}},
		{`a=1,b="x"`, SetJSON, map[string]any{"a": int64(1), "b": "x"}},
		{`a[1]={"x":1}`, SetJSON, map[string]any{"a": []any{nil, map[string]any{"x": int64(1)}}}},
	}
	for _, c := range cases {
		got := map[string]any{}
		if err := ApplySet(got, c.expr, c.kind, nil, NewPositions()); err != nil {
			t.Errorf("%s %q: %v", c.kind.FlagName(), c.expr, err)
			continue
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s %q = %#v, want %#v", c.kind.FlagName(), c.expr, got, c.want)
		}
	}
}

func TestApplySetErrors(t *testing.T) {
	cases := []struct {
		expr, want string
		start      map[string]any
	}{
		{"a", `--set a: key "a" has no value`, nil},
		{"a,b=1", "cannot end with ,", nil},
		{"a[x]=1", `list index "x" is not a number`, nil},
		{"a[-1]=1", "negative list index", nil},
		{"a[70000]=1", "greater than the maximum", nil},
		{"a[0=1", "closing ]", nil},
		{"a={x,y", "must end with '}'", nil},
		{"a.b=1", "a is a string, cannot set a key inside it", map[string]any{"a": "s"}},
		{"a[0]=1", "a is a map, not a list", map[string]any{"a": map[string]any{}}},
		{"a." + strings.Repeat("b.", 31) + "c=1", "nested more than 30", nil},
		{"a.=1", `key map "a" has no value`, nil},
	}
	for _, c := range cases {
		dst := c.start
		if dst == nil {
			dst = map[string]any{}
		}
		err := ApplySet(dst, c.expr, SetTyped, nil, NewPositions())
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("--set %q: error = %v, want %q", c.expr, err, c.want)
		}
	}
	if err := ApplySet(map[string]any{}, `a={"b":`, SetJSON, nil, NewPositions()); err == nil || !strings.Contains(err.Error(), "invalid JSON") {
		t.Errorf("--set-json with broken JSON: %v", err)
	}
}

func TestApplySetModifiesListFromFiles(t *testing.T) {
	// As in Helm: --set on an index edits a list that came from a values file.
	dst := map[string]any{"l": []any{"a", "b"}}
	if err := ApplySet(dst, "l[1]=c", SetTyped, nil, NewPositions()); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(dst["l"], []any{"a", "c"}) {
		t.Fatalf("l = %v", dst["l"])
	}
}

func TestSourcesLoadOrderAndPositions(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	f1 := write("a.yaml", "x: 1\nq: 1\nz: 1\nw: 1\nv: 1\n")
	f2 := write("b.yaml", "q: 2\n")
	content := write("prompt.txt", "hello\nworld\n")
	s := Sources{
		Files:     []string{f1, f2},
		SetJSON:   []string{"z=3", "w=3"},
		Set:       []string{"w=4", "v=4"},
		SetString: []string{"v=5"},
		SetFile:   []string{"p=" + content},
	}
	got, pos, err := s.Load(nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"x": int64(1), "q": int64(2), "z": int64(3), "w": int64(4), "v": "5", "p": "hello\nworld\n"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Load = %#v, want %#v", got, want)
	}
	for ptr, want := range map[string]string{"/x": f1 + ":1:4", "/q": f2 + ":1:4", "/w": "--set w=4", "/v": "--set-string v=5"} {
		if loc, _ := pos.Lookup(ptr); loc.String() != want {
			t.Errorf("position of %s = %s, want %s", ptr, loc, want)
		}
	}
}

func TestSourcesLoadFileErrors(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		s    Sources
		want string
	}{
		{Sources{Files: []string{filepath.Join(dir, "missing.yaml")}}, "missing.yaml: no such file"},
		{Sources{Files: []string{dir}}, "is a directory"},
		{Sources{Files: []string{"-"}}, "standard input is not available"},
		{Sources{SetFile: []string{"a=" + filepath.Join(dir, "nope")}}, "--set-file a=" + filepath.Join(dir, "nope") + ": no such file"},
	}
	for _, c := range cases {
		_, _, err := c.s.Load(nil)
		var e *Error
		if err == nil || !strings.Contains(err.Error(), c.want) || !errors.As(err, &e) {
			t.Errorf("%+v: error = %v, want %q", c.s, err, c.want)
		}
	}
	// Standard input is read once for "-".
	got, _, err := Sources{Files: []string{"-"}}.Load(strings.NewReader("a: 1\n"))
	if err != nil || got["a"] != int64(1) {
		t.Errorf("stdin: %v %v", got, err)
	}
}
