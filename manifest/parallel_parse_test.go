package manifest

import (
	"fmt"
	"strings"
	"testing"
)

// A large file's documents are parsed on every core, and fn sees exactly
// what the one-by-one parse gives it: the same objects in the same order,
// and the same first error after the same objects.
func TestParallelParseIsInOrder(t *testing.T) {
	var b strings.Builder
	for i := 0; b.Len() < 2*parallelParseBytes; i++ {
		fmt.Fprintf(&b, "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c%d\ndata:\n  k: %q\n", i, strings.Repeat("x", i%50))
		if i%97 == 0 {
			fmt.Fprintf(&b, "---\napiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Pod\n  metadata:\n    name: p%d\n", i)
		}
	}
	good := b.String()
	bad := good + "---\napiVersion: v1\nkind: Pod\nmetadata: [\n---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: after\n"
	for name, text := range map[string]string{"good": good, "bad": bad} {
		t.Run(name, func(t *testing.T) {
			r := Rendered{Name: "big.yaml", Text: text}
			collect := func(each func(Rendered, bool, func(parsedDoc) error) error) ([]string, error) {
				var got []string
				add := objectAdder(true, nil, nil, func(o *Object) error {
					got = append(got, fmt.Sprintf("%d %s", o.Line, o.ID()))
					return nil
				})
				err := each(r, false, func(p parsedDoc) error { return add(r.Name, p) })
				return got, err
			}
			want, wantErr := collect(eachParsed)
			got, err := collect(eachParsedInParallel)
			if fmt.Sprint(err) != fmt.Sprint(wantErr) || strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("parallel: %d objects, error %v; one by one: %d objects, error %v", len(got), err, len(want), wantErr)
			}
			if len(want) < 1000 || (name == "bad") != (wantErr != nil) {
				t.Errorf("%d objects, error %v", len(want), wantErr)
			}
		})
	}
}
