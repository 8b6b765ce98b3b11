package renderer

import (
	"bytes"
	"strings"
	"testing"

	"github.com/llmrender/llmrender/chart"
	"github.com/llmrender/llmrender/internal/testkit"
	"github.com/llmrender/llmrender/internal/yamlnode"
	"github.com/llmrender/llmrender/manifest"
)

// Values can never add keys or documents: a string with a newline, "---" or
// "{{" stays one scalar.
func TestValuesCannotInject(t *testing.T) {
	hostile := "x\n---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: evil\n{{ .Release.Name }}\nextra: key"
	tpl := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  a: {{ .Values.s | quote }}\n  b: {{ toYaml .Values.s | nindent 4 }}\n  c: {{ toJson .Values.s }}\n"
	got, err := execOne(t, tpl, map[string]any{"s": hostile}, Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := manifest.Manifests([]manifest.Rendered{{Name: "t/templates/x.yaml", Text: got}})
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 1 {
		t.Fatalf("got %d objects", len(objs))
	}
	data := yamlnode.Map(objs[0].Node, "data")
	if len(data.Content) != 6 {
		t.Fatalf("data has %d keys", len(data.Content)/2)
	}
	for i := 1; i < 6; i += 2 {
		if v := data.Content[i].Value; v != hostile {
			t.Errorf("data.%s = %q", data.Content[i-1].Value, v)
		}
	}
}

func TestRenderIsDeterministic(t *testing.T) {
	files := map[string]string{
		"templates/a.yaml": `{{ range $k, $v := .Values.m }}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ $k }}
data:
  keys: {{ keys $.Values.m | join "," | quote }}
  vals: {{ values $.Values.m | toJson | quote }}
  dict: {{ $.Values.m | toYaml | quote }}
{{ end }}`,
		"values.yaml": "m:\n" + func() string {
			var b strings.Builder
			for _, k := range []string{"q", "w", "e", "r", "t", "z", "u", "i", "o", "p"} {
				b.WriteString("  " + k + ": " + k + k + "\n")
			}
			return b.String()
		}(),
	}
	c, err := chart.Load(testkit.ChartFS(files))
	if err != nil {
		t.Fatal(err)
	}
	render := func() string {
		out, err := Execute(unprocessed(c), c.Values, Options{})
		if err != nil {
			t.Fatal(err)
		}
		objs, err := manifest.Manifests(out)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := manifest.WriteStream(&buf, objs); err != nil {
			t.Fatal(err)
		}
		return buf.String()
	}
	first := render()
	for i := 0; i < 20; i++ {
		if got := render(); got != first {
			t.Fatalf("render %d differs:\n%s\nvs\n%s", i, got, first)
		}
	}
	if !strings.Contains(first, `keys: e,i,o,p,q,r,t,u,w,z`) {
		t.Errorf("keys not sorted:\n%s", first)
	}
}
