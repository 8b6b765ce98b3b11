package renderer

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// small limits keep these tests fast; TestDefaultLimits checks the defaults
// apply.
var small = Options{Limits: Limits{Steps: 20_000, Bytes: 4 << 20, Output: 4 << 20}}

// Templates that would run until killed or exhaust memory: each must stop
// quickly with an error naming the template's line and the limit.
func TestBudgetStopsRunawayTemplates(t *testing.T) {
	cases := []struct {
		name, tpl string
		vals      map[string]any
		want      string
	}{
		{"nested range until", `{{ range until 100000 }}{{ range until 100000 }}{{ end }}{{ end }}`, nil, "x.yaml:1:33: the render takes more than 20000 template steps"},
		{"range over an integer", `{{ range 2000000000 }}{{ end }}`, nil, "more than 20000 template steps"},
		{"include fanning out", `{{ define "f" }}{{ if lt . 40 }}{{ include "f" (add1 .) }}{{ include "f" (add1 .) }}{{ end }}{{ end }}{{ include "f" 0 }}`, nil, "more than 20000 template steps"},
		{"include nesting", `{{ define "f" }}{{ include "f" . }}{{ end }}{{ include "f" . }}`, nil, `include "f" is nested more than 1000 times`},
		{"template recursing", `{{ define "r" }}x{{ template "r" . }}{{ end }}{{ template "r" . }}`, nil, "more than 20000 template steps"},
		{"tpl rendering itself", `{{ tpl .Values.x . }}`, map[string]any{"x": "{{ tpl .Values.x . }}"}, "x.yaml:1:3: in the text given to tpl, at 1:3: tpl is nested more than 50 levels deep"},
		{"tpl fanning out", `{{ tpl .Values.x . }}`, map[string]any{"x": "{{ tpl .Values.x . }}{{ tpl .Values.x . }}"}, "tpl is nested more than 50 levels deep"},
		{"tpl in a loop", `{{ range 100000000 }}{{ tpl "{{ 1 }}" $ }}{{ end }}`, nil, "tpl would take the bytes"},
		{"repeat", `{{ repeat 1000000000000 "abc" }}`, nil, "x.yaml:1:3: repeat would take the bytes produced by functions past the render's limit of 4 MiB"},
		{"until", `{{ until 10000000000 }}`, nil, "until would take the bytes"},
		{"untilStep", `{{ untilStep 0 10000000000 1 }}`, nil, "untilStep would take the bytes"},
		{"negative untilStep", `{{ untilStep 0 -10000000000 -1 }}`, nil, "untilStep would take the bytes"},
		{"seq", `{{ seq 1000000000 }}`, nil, "seq would take the bytes"},
		{"indent", `{{ indent 1000000000 "a\nb" }}`, nil, "indent would take the bytes"},
		{"nindent", `{{ "x" | nindent 2000000000 }}`, nil, "nindent would take the bytes"},
		{"replace of nothing", `{{ $s := repeat 100000 "a" }}{{ replace "" (repeat 10000 "b") $s }}`, nil, "replace would take the bytes"},
		{"regexReplaceAll", `{{ $s := repeat 100000 "a" }}{{ regexReplaceAll "" $s (repeat 10000 "b") }}`, nil, "regexReplaceAll would take the bytes"},
		{"wrapWith", `{{ $s := repeat 100000 "a" }}{{ wrapWith 1 (repeat 1000 "-") $s }}`, nil, "wrapWith would take the bytes"},
		{"printf widths", `{{ printf (repeat 1000 "%1000000d") }}`, nil, "printf would take the bytes"},
		{"printf star width", `{{ range until 1000 }}{{ $_ := printf "%*d" 1000000 1 }}{{ end }}`, nil, "printf would take the bytes"},
		{"output", `{{ range until 19000 }}` + strings.Repeat("x", 300) + `{{ end }}`, nil, "the output is larger than the 4 MiB limit"},
		{"cat doubling", `{{ $s := "xx" }}{{ range until 100 }}{{ $s = cat $s $s }}{{ end }}`, nil, "cat would take the bytes"},
		{"printf doubling", `{{ $s := "xx" }}{{ range until 100 }}{{ $s = printf "%s%s" $s $s }}{{ end }}`, nil, "printf would take the bytes"},
		{"b64enc growing", `{{ $s := "xxxxxxxxxxxxxxxxxxxxx" }}{{ range until 100 }}{{ $s = print $s $s | b64enc }}{{ end }}`, nil, "print would take the bytes"},
		{"append in a loop", `{{ $l := list }}{{ range until 10000 }}{{ $l = append $l 1 }}{{ end }}`, nil, "append would take the bytes"},
		{"split of a large string", `{{ $s := repeat 200000 "," }}{{ range until 100 }}{{ $_ := splitList "," $s }}{{ end }}`, nil, "splitList would take the bytes"},
		{"dict doubling, printed", `{{ $d := dict }}{{ range until 64 }}{{ $d = dict "a" $d "b" $d }}{{ end }}{{ $d }}`, nil, "printing would take the bytes"},
		{"dict doubling, toJson", `{{ $d := dict }}{{ range until 64 }}{{ $d = dict "a" $d "b" $d }}{{ end }}{{ toJson $d }}`, nil, "toJson would take the bytes"},
		{"list doubling, toYaml", `{{ $l := list 1 }}{{ range until 64 }}{{ $l = list $l $l }}{{ end }}{{ toYaml $l }}`, nil, "toYaml would take the bytes"},
		{"dict doubling, deepCopy", `{{ $d := dict }}{{ range until 64 }}{{ $d = dict "a" $d "b" $d }}{{ end }}{{ $_ := deepCopy $d }}`, nil, "deepCopy would take the bytes"},
		{"dict containing itself, printed", `{{ $d := dict }}{{ $_ := set $d "x" $d }}{{ $d }}`, nil, "printing: the value nests more than 1000 levels deep"},
		{"dict containing itself, printf", `{{ $d := dict }}{{ $_ := set $d "x" $d }}{{ printf "%v" $d }}`, nil, "printf: the value nests more than 1000 levels deep"},
		{"dict containing itself, toYaml", `{{ $d := dict }}{{ $_ := set $d "x" $d }}{{ toYaml $d }}`, nil, "toYaml: the value nests"},
		{"dict containing itself, merge", `{{ $d := dict "x" (dict) }}{{ $_ := set $d "y" $d }}{{ $_ := mergeOverwrite (dict "y" (dict)) $d }}`, nil, "mergeOverwrite: the value nests"},
		{"dict containing itself, quote", `{{ $d := dict }}{{ $_ := set $d "x" $d }}{{ quote $d }}`, nil, "quote: the value nests"},
		{"derivePassword in a loop", `{{ range until 100 }}{{ derivePassword 1 "long" "p" "u" "s" }}{{ end }}`, nil, "derivePassword would take the bytes"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			_, err := execOne(t, c.tpl, c.vals, small, nil)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error = %v\nwant %q", err, c.want)
			}
			if !strings.HasPrefix(err.Error(), "t/templates/x.yaml:") && !strings.Contains(err.Error(), "output") {
				t.Errorf("error does not name the template: %v", err)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("took %v", d)
			}
		})
	}
}

// Wall time is the last resort, for work no other limit counts.
func TestBudgetWallTime(t *testing.T) {
	start := time.Now()
	_, err := execOne(t, `{{ $s := repeat 100000 "x" }}{{ range until 1000000 }}{{ $_ := sha256sum $s }}{{ end }}`, nil,
		Options{Limits: Limits{Time: 200 * time.Millisecond}}, nil)
	var le *LimitError
	if !errors.As(err, &le) || !strings.Contains(err.Error(), "the render takes longer than 200ms") {
		t.Fatalf("error = %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("stopped after %v", d)
	}
}

// The guards change nothing a chart can see: printing, Helm's quirks and
// the functions they wrap behave as before.
func TestBudgetGuardsAreTransparent(t *testing.T) {
	cases := []struct{ tpl, want string }{
		{`{{ .Capabilities.KubeVersion }} {{ .Capabilities.KubeVersion | quote }}`, `v1.36.0 "{v1.36.0 1 36}"`},
		{`{{ .Values.missing }}|{{ $x := dict "a" 1 }}{{ $x }}|{{ list 1 "a" }}`, "|map[a:1]|[1 a]"},
		{`{{ repeat 3 "ab" }} {{ until 3 }} {{ untilStep 1 7 2 }} {{ seq 3 }} {{ seq 5 -2 1 }}`, "ababab [0 1 2] [1 3 5] 1 2 3 5 3 1"},
		{`{{ indent 2 "a\nb" }}|{{ nindent 1 "c" }}|{{ replace "a" "bb" "aXa" }}|{{ wrapWith 2 "-" "abcd" }}`, "  a\n  b|\n c|bbXbb|ab-cd"},
		{`{{ printf "%05d|%-4s|%.2f|%[1]d" 42 "x" 3.14159 }}`, "00042|x   |3.14|42"},
		{`{{ cat "a" 1 nil "b" }} {{ print "a" 1 }} {{ quote "q" 2 }} {{ squote "s" }} {{ join "," (list 1 2) }}`, `a 1 b a1 "q" "2" 's' 1,2`},
		{`{{ $l := list }}{{ range until 3 }}{{ $l = append $l . }}{{ end }}{{ $l = prepend $l 9 }}{{ toJson $l }} {{ concat (list 1) (list 2 3) }}`, "[9,0,1,2] [1 2 3]"},
		{`{{ splitList "," "a,b" }} {{ (split "/" "x/y")._1 }} {{ regexReplaceAll "a(x*)b" "-ab-axxb-" "${1}W" }}`, "[a b] y -W-xxW-"},
		{`{{ toYaml (dict "a" (list 1 2)) }}|{{ deepCopy (dict "b" 2) }}|{{ html "<a>" }}|{{ toString 5 }}`, "a:\n- 1\n- 2|map[b:2]|&lt;a&gt;|5"},
		{`{{ $d := dict "x" 1 }}{{ $_ := merge $d (dict "y" 2) }}{{ $d }} {{ sortAlpha (list "b" "a") }}`, "map[x:1 y:2] [a b]"},
		{`{{ range $i, $e := until 3 }}{{ $i }}{{ else }}none{{ end }}{{ range list }}x{{ else }}-{{ end }}`, "012-"},
		// sprig's untilStep loops forever (and allocates) when a step
		// overflows; these end with the numbers that lie in the range.
		{`{{ untilStep 9223372036854775800 9223372036854775807 10 }} {{ untilStep -9223372036854775800 -9223372036854775808 -10 }}`, "[9223372036854775800] [-9223372036854775800]"},
		{`{{ seq 9223372036854775806 9223372036854775807 }}|{{ until -2 }}|{{ untilStep 1 5 0 }}`, "|[0 -1]|[]"},
	}
	for _, c := range cases {
		got, err := execOne(t, c.tpl, map[string]any{}, small, nil)
		if err != nil || got != c.want {
			t.Errorf("%s\n got %q, %v\nwant %q", c.tpl, got, err, c.want)
		}
	}
}

func TestDefaultLimits(t *testing.T) {
	if got := (Limits{}).withDefaults(); got != DefaultLimits {
		t.Errorf("zero limits = %+v, want the defaults %+v", got, DefaultLimits)
	}
	if got := (Limits{Steps: 7}).withDefaults(); got.Steps != 7 || got.Bytes != DefaultLimits.Bytes {
		t.Errorf("one limit set: %+v", got)
	}
	// A render with no limits set gets them (hostile/ runs the defaults).
	_, err := execOne(t, `{{ repeat 300000000 "x" }}`, nil, Options{}, nil)
	if err == nil || !strings.Contains(err.Error(), "past the render's limit of 256 MiB") {
		t.Errorf("default bytes: %v", err)
	}
}

// yaml's key comparison is not an order (llama-2-7b < llama-2-13b <
// llama-2-70b < llama-2-7b), so Helm's toYaml of such a map changes from
// run to run; llmrender's is the same every time, and where the comparison
// is an order (a9 before a10) it is Helm's.
func TestToYamlKeyOrderIsDeterministic(t *testing.T) {
	tpl := `{{ $m := dict "llama-2-7b" 1 "llama-2-13b" 2 "llama-2-70b" 3 "a10" 4 "a9" 5 "b" (dict "x-7b" 1 "x-13b" 2 "x-70b" 3) }}{{ toYaml $m }}
{{ toYamlPretty $m }}`
	first, err := execOne(t, tpl, map[string]any{}, Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(first, "a9: 5\na10: 4\n") {
		t.Errorf("natural order lost:\n%s", first)
	}
	for range 40 {
		if again, _ := execOne(t, tpl, map[string]any{}, Options{}, nil); again != first {
			t.Fatalf("two renders differ:\n%s\n---\n%s", first, again)
		}
	}
}

// One long function call cannot be interrupted; Execute stops waiting for
// it at the time limit, and the abandoned render ends at its next step.
func TestBudgetWallTimeInsideOneCall(t *testing.T) {
	var l []any
	for i := range 30000 {
		l = append(l, map[string]any{"i": int64(i)})
	}
	start := time.Now()
	_, err := execOne(t, `{{ $u := uniq .Values.l }}{{ range until 10 }}{{ end }}`, map[string]any{"l": l},
		Options{Limits: Limits{Time: 300 * time.Millisecond}}, nil)
	if err == nil || !strings.Contains(err.Error(), "the render takes longer than 300ms") {
		t.Fatalf("error = %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("returned after %v", d)
	}
}

// uniq keeps sprig's results, in linear time for plain values.
func TestUniq(t *testing.T) {
	got, err := execOne(t, `{{ uniq (list 1 "1" 1 2.5 2.5 true "a" "a" (dict "k" 1) (dict "k" 1) (list 1) nil nil) }} {{ len (uniq (until 200000)) }}`, map[string]any{}, small, nil)
	if want := "[1 1 2.5 true a map[k:1] [1] <nil>] 200000"; err != nil || got != want {
		t.Errorf("got %q, %v; want %q", got, err, want)
	}
	if _, err := execOne(t, `{{ uniq 5 }}`, map[string]any{}, small, nil); err == nil || !strings.Contains(err.Error(), "Cannot find uniq on type int") {
		t.Errorf("uniq of a number: %v", err)
	}
}
