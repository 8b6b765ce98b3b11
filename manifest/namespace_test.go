package manifest

import (
	"strings"
	"testing"
)

// --write-namespace: namespaced objects without a namespace get the
// release's, after their name; cluster-scoped ones and objects that name a
// namespace keep theirs.
func TestSetNamespaces(t *testing.T) {
	objs, err := Manifests([]Rendered{{Name: "t/x.yaml", Text: "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: j\n  labels: {a: b}\n---\n" +
		"apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata:\n  name: q\n---\n" +
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  namespace: other\n"}})
	if err != nil {
		t.Fatal(err)
	}
	SetNamespaces(objs, "ml")
	var b strings.Builder
	if err := WriteStream(&b, objs); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if strings.Contains(out, "name: q\n  namespace") {
		t.Errorf("a cluster-scoped Queue got a namespace:\n%s", out)
	}
	for _, want := range []string{"kind: Job\nmetadata:\n  name: j\n  namespace: ml\n  labels:", "kind: Queue\nmetadata:\n  name: q\n", "name: c\n  namespace: other\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
