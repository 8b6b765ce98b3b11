package renderer

import (
	"encoding/json"
	"math"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	yaml2 "go.yaml.in/yaml/v2"
	yaml "go.yaml.in/yaml/v3"
)

// Deterministic key order for toYaml and toYamlPretty.
//
// Helm's toYaml (sigs.k8s.io/yaml: JSON, then yaml.v2) and toYamlPretty
// (yaml.v3) sort map keys with yaml's "natural" comparison, which is not an
// order: llama-2-7b < llama-2-13b < llama-2-70b < llama-2-7b. Go's sort then
// returns an order that depends on the order it was given, which is map
// iteration order, so Helm writes such a map differently from run to run.
// Here the keys are put in byte order first and then sorted with the same
// comparison: wherever the comparison is an order the result is Helm's,
// and otherwise it is at least the same on every run.

// toYAML is Helm's toYaml with that order.
func toYAML(v any) string {
	obj, ok := plainTree(v)
	if !ok {
		var err error
		if obj, err = throughJSON(v); err != nil {
			return ""
		}
	}
	data, err := yaml2.Marshal(orderedV2(obj))
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(string(data), "\n")
}

// throughJSON is the tree Helm's toYaml writes: the value as JSON, read
// back by yaml.v2.
func throughJSON(v any) (any, error) {
	j, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var obj any
	err = yaml2.Unmarshal(j, &obj)
	return obj, err
}

// plainTree is throughJSON's tree for what templates pass to toYaml (maps,
// lists, strings, booleans, integers and ordinary floats), built without
// writing and reading JSON, which took most of toYaml's time. ok is false
// for anything else, which goes through JSON. TestPlainTreeIsThroughJSON
// holds the two together.
func plainTree(v any) (any, bool) {
	switch x := v.(type) {
	case nil, bool:
		return x, true
	case string:
		return x, plainString(x)
	case int:
		return x, true
	case int64:
		return int(x), true
	case int32:
		return int(x), true
	case float64:
		// JSON writes an integral float without a point, which yaml.v2
		// reads as an integer; other floats in this range read back as
		// themselves.
		switch a := math.Abs(x); {
		case x == math.Trunc(x) && a <= 1<<53: // beyond, JSON writes the shortest digits, not the integer
			return int(x), true
		case x != math.Trunc(x) && a >= 1e-6 && a < 1e21:
			return x, true
		}
		return nil, false
	case map[string]any:
		out := make(map[any]any, len(x))
		for k, e := range x {
			t, ok := plainTree(e)
			if !ok || !plainString(k) {
				return nil, false
			}
			out[k] = t
		}
		return out, true
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			t, ok := plainTree(e)
			if !ok {
				return nil, false
			}
			out[i] = t
		}
		return out, true
	case []string:
		out := make([]any, len(x))
		for i, e := range x {
			if !plainString(e) {
				return nil, false
			}
			out[i] = e
		}
		return out, true
	}
	return nil, false
}

// plainString tells that JSON and yaml.v2 carry s through unchanged:
// valid UTF-8 without control characters other than tab and newline, and
// without the line and byte-order separators either may treat specially.
func plainString(s string) bool {
	for _, r := range s {
		switch {
		case r == utf8.RuneError, r < 0x20 && r != '\t' && r != '\n', r >= 0x7f && r <= 0x9f,
			r == 0x2028, r == 0x2029, r == 0xfeff:
			return false
		}
	}
	return true
}

// orderedV2 turns the maps of a yaml.v2 tree into MapSlices, which yaml.v2
// writes in the order given.
func orderedV2(v any) any {
	switch x := v.(type) {
	case map[any]any:
		keys := make([]string, 0, len(x))
		byKey := make(map[string]any, len(x))
		for k, e := range x {
			ks, _ := k.(string) // keys of a tree read from JSON are strings
			keys = append(keys, ks)
			byKey[ks] = e
		}
		out := make(yaml2.MapSlice, 0, len(keys))
		for _, k := range naturalOrder(keys) {
			out = append(out, yaml2.MapItem{Key: k, Value: orderedV2(byKey[k])})
		}
		return out
	case []any:
		for i, e := range x {
			x[i] = orderedV2(e)
		}
	}
	return v
}

// orderNode puts the keys of every mapping in n in the deterministic order.
func orderNode(n *yaml.Node) {
	if n.Kind == yaml.MappingNode {
		keys := make([]string, 0, len(n.Content)/2)
		pairs := make(map[string][2]*yaml.Node, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			keys = append(keys, n.Content[i].Value)
			pairs[n.Content[i].Value] = [2]*yaml.Node{n.Content[i], n.Content[i+1]}
		}
		if len(pairs) == len(keys) { // string keys, as in every map a template builds
			n.Content = n.Content[:0]
			for _, k := range naturalOrder(keys) {
				n.Content = append(n.Content, pairs[k][0], pairs[k][1])
			}
		}
	}
	for _, c := range n.Content {
		orderNode(c)
	}
}

// naturalOrder sorts keys in byte order and then with yaml's comparison.
func naturalOrder(keys []string) []string {
	sort.Strings(keys)
	sort.Sort(naturalKeys(keys))
	return keys
}

type naturalKeys []string

func (l naturalKeys) Len() int           { return len(l) }
func (l naturalKeys) Swap(i, j int)      { l[i], l[j] = l[j], l[i] }
func (l naturalKeys) Less(i, j int) bool { return naturalLess(l[i], l[j]) }

// naturalLess is keyList.Less of go.yaml.in/yaml/v2 (sorter.go; yaml.v3 has
// the same) for two string keys: runs of digits compare as numbers,
// letters before other characters.
func naturalLess(a, b string) bool {
	ar, br := []rune(a), []rune(b)
	for i := 0; i < len(ar) && i < len(br); i++ {
		if ar[i] == br[i] {
			continue
		}
		al := unicode.IsLetter(ar[i])
		bl := unicode.IsLetter(br[i])
		if al && bl {
			return ar[i] < br[i]
		}
		if al || bl {
			return bl
		}
		var ai, bi int
		var an, bn int64
		if ar[i] == '0' || br[i] == '0' {
			for j := i - 1; j >= 0 && unicode.IsDigit(ar[j]); j-- {
				if ar[j] != '0' {
					an = 1
					bn = 1
					break
				}
			}
		}
		for ai = i; ai < len(ar) && unicode.IsDigit(ar[ai]); ai++ {
			an = an*10 + int64(ar[ai]-'0')
		}
		for bi = i; bi < len(br) && unicode.IsDigit(br[bi]); bi++ {
			bn = bn*10 + int64(br[bi]-'0')
		}
		if an != bn {
			return an < bn
		}
		if ai != bi {
			return ai < bi
		}
		return ar[i] < br[i]
	}
	return len(ar) < len(br)
}
