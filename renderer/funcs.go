package renderer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/template"
	"time"
	"unicode/utf8"

	"github.com/BurntSushi/toml"
	"github.com/Masterminds/sprig/v3"
	yaml2 "go.yaml.in/yaml/v2"
	yamlv3 "go.yaml.in/yaml/v3"
	"sigs.k8s.io/yaml"

	"github.com/llmrender/llmrender/internal/redact"
)

// NonDeterministic lists the sprig functions that would make two renders of
// the same input differ (clock, randomness, random salts and IVs). Calling one
// is an error that names the function; the chart must take such values from
// its inputs instead.
var NonDeterministic = map[string]string{
	"now":                      "reads the clock",
	"ago":                      "reads the clock",
	"randAlpha":                "is random",
	"randAlphaNum":             "is random",
	"randAscii":                "is random",
	"randNumeric":              "is random",
	"randBytes":                "is random",
	"randInt":                  "is random",
	"uuidv4":                   "is random",
	"shuffle":                  "is random",
	"genPrivateKey":            "generates a random key",
	"genCA":                    "generates a random key",
	"genCAWithKey":             "generates a random certificate serial",
	"genSelfSignedCert":        "generates a random key",
	"genSelfSignedCertWithKey": "generates a random certificate serial",
	"genSignedCert":            "generates a random key",
	"genSignedCertWithKey":     "generates a random certificate serial",
	"bcrypt":                   "uses a random salt",
	"htpasswd":                 "uses a random salt",
	"encryptAES":               "uses a random IV",
}

// baseFuncs is Helm's function map minus the functions that are bound per
// render (include, tpl, required, fail, and fromYaml, which remembers its
// results per render). It is built once per process, on first use.
func baseFuncs() template.FuncMap {
	f := sprig.TxtFuncMap()
	// Hermetic: nothing from the environment or network reaches a template.
	delete(f, "env")
	delete(f, "expandenv")
	f["getHostByName"] = func(string) string { return "" } // as Helm without --enable-dns

	for name, why := range NonDeterministic {
		f[name] = forbidden(name, why)
	}
	// Map iteration order is random in Go; these return lists built from maps,
	// so sort them to keep output stable.
	f["keys"] = sortedKeys
	f["values"] = valuesByKey
	// Time functions use UTC instead of the machine's local zone.
	f["date"] = func(format string, d any) string { return formatDate(format, d) }
	f["htmlDate"] = func(d any) string { return formatDate("2006-01-02", d) }
	f["toDate"] = func(layout, s string) time.Time { t, _ := time.ParseInLocation(layout, s, time.UTC); return t }
	f["mustToDate"] = func(layout, s string) (time.Time, error) { return time.ParseInLocation(layout, s, time.UTC) }
	f["dateInZone"] = dateInZone
	f["date_in_zone"] = dateInZone
	f["htmlDateInZone"] = func(d any, zone string) (string, error) { return dateInZone("2006-01-02", d, zone) }
	durationRound := f["durationRound"].(func(any) string)
	f["durationRound"] = func(d any) (string, error) {
		switch d.(type) {
		case time.Time, *time.Time:
			return "", errors.New("durationRound of a time is the time since then, which reads the clock, so two renders of the same input would differ; pass a duration instead")
		}
		return durationRound(d), nil
	}

	f["regexMatch"] = regexMatch
	f["mustRegexMatch"] = mustRegexMatch
	sprigToString := f["toString"].(func(any) string)
	f["toString"] = func(v any) string {
		if text, ok := printTree(v); ok {
			return text
		}
		return sprigToString(v)
	}

	extras := template.FuncMap{
		"toToml":        toTOML,
		"fromToml":      fromTOML,
		"toYaml":        toYAML,
		"toYamlPretty":  toYAMLPretty,
		"fromYamlArray": fromYAMLArray,
		"toJson":        toJSON,
		"fromJson":      fromJSON,
		"fromJsonArray": fromJSONArray,
		// No cluster is ever contacted: lookup finds nothing, as in helm template.
		"lookup": func(string, string, string, string) (map[string]any, error) { return map[string]any{}, nil },
		// Placeholders so templates parse; bound per render in engine.go.
		"include":  func(string, any) (string, error) { return "", nil },
		"tpl":      func(string, any) (string, error) { return "", nil },
		"required": func(string, any) (any, error) { return nil, nil },
		"fail":     func(string) (string, error) { return "", nil },
	}
	for name, fn := range extras {
		f[name] = fn
	}
	return f
}

func forbidden(name, why string) func(...any) (string, error) {
	return func(...any) (string, error) {
		return "", fmt.Errorf("%s %s, so two renders of the same input would differ; pass the value in from values instead", name, why)
	}
}

func sortedKeys(dicts ...map[string]any) []string {
	var out []string
	for _, d := range dicts {
		for k := range d {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

func valuesByKey(dict map[string]any) []any {
	keys := sortedKeys(dict)
	out := make([]any, len(keys))
	for i, k := range keys {
		out[i] = dict[k]
	}
	return out
}

// dateInZone is sprig's dateInZone for the zones that are the same on
// every machine: UTC, and "Local", which is UTC here as for date. Any other
// zone would come from the machine's time zone database ($ZONEINFO,
// /usr/share/zoneinfo), whose contents differ between machines. A value
// that is not a time is "" as for date, where sprig would take the clock.
func dateInZone(format string, d any, zone string) (string, error) {
	switch zone {
	case "UTC", "Local", "":
		return formatDate(format, d), nil
	}
	return "", fmt.Errorf("time zone %s would be read from this machine's time zone database, so renders on different machines could differ; use \"UTC\"", redact.Quote(zone))
}

func formatDate(format string, d any) string {
	var t time.Time
	switch x := d.(type) {
	case time.Time:
		t = x
	case *time.Time:
		t = *x
	case int64:
		t = time.Unix(x, 0)
	case int:
		t = time.Unix(int64(x), 0)
	case int32:
		t = time.Unix(int64(x), 0)
	default:
		return ""
	}
	return t.UTC().Format(format)
}

// The YAML, JSON and TOML helpers behave exactly as Helm's: errors are
// swallowed (to "" or an "Error" key), as templates expect.

// toYAMLPretty is Helm's toYamlPretty (yaml.v3, two-space indent) with the
// deterministic key order of toYAML.
func toYAMLPretty(v any) string {
	var n yamlv3.Node
	if err := n.Encode(v); err != nil {
		return ""
	}
	orderNode(&n)
	var buf bytes.Buffer
	enc := yamlv3.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&n); err != nil {
		return ""
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

// fromYAML is Helm's fromYaml: sigs.k8s.io/yaml, which reads the text with
// yaml.v2, writes JSON and reads that back.
func fromYAML(s string) map[string]any {
	if m, ok := fromYAMLDirect(s); ok {
		return m
	}
	m := map[string]any{}
	if err := yaml.Unmarshal([]byte(s), &m); err != nil {
		m["Error"] = err.Error()
	}
	return m
}

// fromYAMLDirect is fromYAML's map for the text templates hand it (a map
// with string keys of strings, booleans, numbers, lists and maps), read
// once with yaml.v2 and converted as the JSON round trip would convert it:
// every number a float64. ok is false for anything else (errors, a text
// that is no map, keys that are not strings, numbers JSON would round or
// refuse, bytes that are not UTF-8), which takes the round trip.
// TestFromYAMLDirectIsTheRoundTrip holds the two together.
func fromYAMLDirect(s string) (map[string]any, bool) {
	var obj any
	if err := yaml2.Unmarshal([]byte(s), &obj); err != nil {
		return nil, false
	}
	if _, isMap := obj.(map[any]any); !isMap {
		return nil, false
	}
	v, ok := jsonLike(obj)
	if !ok {
		return nil, false
	}
	return v.(map[string]any), true
}

func jsonLike(v any) (any, bool) {
	switch x := v.(type) {
	case nil, bool:
		return x, true
	case string:
		return x, utf8.ValidString(x)
	case int:
		return exactFloat(float64(x), int64(x))
	case int64:
		return exactFloat(float64(x), x)
	case float64:
		return x, !math.IsInf(x, 0) && !math.IsNaN(x)
	case map[any]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			ks, ok := k.(string)
			if !ok || !utf8.ValidString(ks) {
				return nil, false
			}
			if m[ks], ok = jsonLike(e); !ok {
				return nil, false
			}
		}
		return m, true
	case []any:
		l := make([]any, len(x))
		for i, e := range x {
			var ok bool
			if l[i], ok = jsonLike(e); !ok {
				return nil, false
			}
		}
		return l, true
	}
	return nil, false
}

// exactFloat is an integer as JSON reads it back, when a float64 holds it
// exactly.
func exactFloat(f float64, i int64) (any, bool) {
	return f, i >= -1<<53 && i <= 1<<53
}

func fromYAMLArray(s string) []any {
	a := []any{}
	if err := yaml.Unmarshal([]byte(s), &a); err != nil {
		a = []any{err.Error()}
	}
	return a
}

func toTOML(v any) string {
	var buf bytes.Buffer
	if err := toml.NewEncoder(&buf).Encode(v); err != nil {
		return err.Error()
	}
	return buf.String()
}

func fromTOML(s string) map[string]any {
	m := map[string]any{}
	if err := toml.Unmarshal([]byte(s), &m); err != nil {
		m["Error"] = err.Error()
	}
	return m
}

func toJSON(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(data)
}

func fromJSON(s string) map[string]any {
	m := map[string]any{}
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		m["Error"] = err.Error()
	}
	return m
}

func fromJSONArray(s string) []any {
	a := []any{}
	if err := json.Unmarshal([]byte(s), &a); err != nil {
		a = []any{err.Error()}
	}
	return a
}

// checkPrintf refuses formats that would print a memory address, which
// differs between runs: %p, and the integer verbs (%d, %x, ...) applied to
// an argument that holds a pointer (fmt prints a pointer as its address
// under those verbs, even one with a String method).
func checkPrintf(format string, args []any) error {
	integer := false
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			continue
		}
		j := i + 1
		for j < len(format) && strings.IndexByte("+-# 0123456789.*[]", format[j]) >= 0 {
			j++
		}
		if j >= len(format) {
			break
		}
		switch format[j] {
		case 'p':
			return fmt.Errorf("printf %%p prints a memory address, which differs between renders")
		case 'b', 'o', 'O', 'd', 'x', 'X', 'c', 'U':
			integer = true
		}
		i = j
	}
	if integer {
		for _, a := range args {
			if holdsPointer(reflect.ValueOf(a), 0) {
				return fmt.Errorf("printf of %T with an integer verb would print a memory address, which differs between renders; use %%v or %%s", a)
			}
		}
	}
	return nil
}

// holdsPointer tells whether v holds a non-nil pointer, a function or a
// channel, which fmt can print as an address.
func holdsPointer(v reflect.Value, depth int) bool {
	if depth > MaxValueDepth {
		return true
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.UnsafePointer, reflect.Func, reflect.Chan:
		return !v.IsNil()
	case reflect.Interface:
		return !v.IsNil() && holdsPointer(v.Elem(), depth+1)
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			if holdsPointer(it.Value(), depth+1) {
				return true
			}
		}
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return false
		}
		for i := range v.Len() {
			if holdsPointer(v.Index(i), depth+1) {
				return true
			}
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if holdsPointer(v.Field(i), depth+1) {
				return true
			}
		}
	}
	return false
}

// printTree is fmt's %v (sprig's toString) of a map or list of plain
// values, written without fmt's reflection and its sorting of every map's
// keys through reflect values: a chart that prints its values to search
// them (the built-in chart's LR009 copy) spent half a millisecond there.
// ok is false for anything else, which fmt prints. TestPrintTreeIsSprint
// holds the two together.
func printTree(v any) (string, bool) {
	switch v.(type) {
	case map[string]any, []any:
		var b strings.Builder
		if !appendTree(&b, v) {
			return "", false
		}
		return b.String(), true
	}
	return "", false
}

func appendTree(b *strings.Builder, v any) bool {
	switch x := v.(type) {
	case nil:
		b.WriteString("<nil>")
	case string:
		b.WriteString(x)
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case int:
		b.WriteString(strconv.Itoa(x))
	case int64:
		b.WriteString(strconv.FormatInt(x, 10))
	case float64:
		b.WriteString(strconv.FormatFloat(x, 'g', -1, 64))
	case map[string]any:
		b.WriteString("map[")
		for i, k := range slices.Sorted(maps.Keys(x)) {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(k)
			b.WriteByte(':')
			if !appendTree(b, x[k]) {
				return false
			}
		}
		b.WriteByte(']')
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(' ')
			}
			if !appendTree(b, e) {
				return false
			}
		}
		b.WriteByte(']')
	default:
		return false
	}
	return true
}
