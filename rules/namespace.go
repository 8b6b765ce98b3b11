package rules

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// LR024: output is rendered for one namespace and applied, often, in
// another: kustomize's namespace transformer, `kubectl apply -n`, Argo CD's
// destination and kpt's set-namespace move each object's metadata.namespace,
// and nothing else. A string that names the namespace (a PromQL matcher,
// a depends-on reference, a Service's DNS name, a flag) or a reference to an
// object of the output with its namespace spelt out stays behind, and the
// moved workload looks for things that are not there. Each such place is a
// warning that names what is bound and how to render for another
// namespace. The namespace an object is bound to is its own
// metadata.namespace (a kustomize base's, which overlays move) or, where it
// has none, the one it was rendered for when nobody chose it (a render
// with --namespace is meant for that namespace, and says nothing).
//
// namespaceHits are the ways one object names its namespace, by field. A
// reference to an object by name and namespace counts only when the name
// is an object of the output, known once every object has been seen.
type namespaceHits struct {
	ns     string
	fields []string           // sorted
	found  map[string][]nsHit // field -> what names the namespace there
	at     map[string]Finding // field -> the finding, without its message
}

type nsHit struct{ what, ifObject string }

// namespaceHits finds the ways o names the namespace it is bound to.
func (c *ObjectChecker) namespaceHits(o Object) namespaceHits {
	ns := o.namespace()
	if ns == "" {
		ns = c.facts.Namespace
	}
	if ns == "" {
		return namespaceHits{}
	}
	m := c.matchers[ns]
	if m == nil {
		m = newNamespaceMatcher(ns)
		c.matchers[ns] = m
	}
	h := namespaceHits{ns: ns}
	// Every way a string names the namespace spells it out (see in).
	walkStrings(o.Doc, func(s string) bool { return strings.Contains(s, ns) }, func(field string, parent map[string]any, key, s, prev string) {
		if field == "metadata.namespace" {
			return
		}
		if what, ifObject := m.in(field, parent, key, s, prev); what != "" {
			if h.found == nil {
				h.found, h.at = map[string][]nsHit{}, map[string]Finding{}
			}
			if _, ok := h.found[field]; !ok {
				h.fields = append(h.fields, field)
				h.at[field] = objFinding("LR024", Warning, o, field, "")
			}
			h.found[field] = append(h.found[field], nsHit{what, ifObject})
		}
	})
	sort.Strings(h.fields)
	return h
}

// findings are the warnings of h, given the names of the output's objects.
func (h namespaceHits) findings(names map[string]bool) []Finding {
	var out []Finding
	for _, field := range h.fields {
		var whats []string
		for _, hit := range h.found[field] {
			if hit.ifObject == "" || names[hit.ifObject] {
				whats = append(whats, hit.what)
			}
		}
		if len(whats) == 0 {
			continue
		}
		f := h.at[field]
		f.Message = fmt.Sprintf("%s names namespace %q, which does not follow the output when it is applied in another namespace (kustomize's namespace transformer, kubectl apply -n, Argo CD's destination namespace); apply it in %s, or render it for the namespace it runs in (--namespace; the KRM function: its config's metadata.namespace)",
			strings.Join(whats, "; "), h.ns, h.ns)
		out = append(out, f)
	}
	return out
}

// namespaceMatcher finds the ways a string names one namespace.
type namespaceMatcher struct {
	ns                string
	promQL, dns, flag *regexp.Regexp
}

func newNamespaceMatcher(ns string) *namespaceMatcher {
	q := regexp.QuoteMeta(ns)
	return &namespaceMatcher{ns: ns,
		promQL: regexp.MustCompile(`\bnamespace\s*=~?\s*"` + q + `"`),
		dns:    regexp.MustCompile(`\b[a-z0-9]([-a-z0-9]*[a-z0-9])?\.` + q + `\.svc(\.cluster\.local)?\b`),
		flag:   regexp.MustCompile(`(^|\s)--?[a-z-]*namespace[= ]` + q + `(\s|$)`)}
}

// in says how s, at field (key of parent, after prev in a list), names
// the namespace ("" when it does not), and the object it refers to when it
// counts only if that object is in the output.
func (m *namespaceMatcher) in(field string, parent map[string]any, key, s, prev string) (what, ifObject string) {
	ns := m.ns
	if !strings.Contains(s, ns) {
		return "", "" // every way below spells the namespace out in s
	}
	switch {
	case key == "config.kubernetes.io/depends-on":
		var refs []string
		for _, ref := range strings.Split(s, ",") {
			if strings.Contains(ref, "/namespaces/"+ns+"/") {
				refs = append(refs, strings.TrimSpace(ref))
			}
		}
		if len(refs) > 0 {
			return fmt.Sprintf("the apply order (depends-on %s)", strings.Join(refs, ", ")), ""
		}
		return "", ""
	case key == "namespace" && s == ns:
		if name, _ := parent["name"].(string); name != "" {
			return fmt.Sprintf("the reference to %s with its namespace", name), name
		}
	case key == "value" && s == ns && strings.Contains(strings.ToUpper(str(parent, "name")), "NAMESPACE"):
		return fmt.Sprintf("the variable %s, a literal (the downward API's metadata.namespace follows the pod)", str(parent, "name")), ""
	case s == ns && strings.HasPrefix(prev, "-") && strings.HasSuffix(prev, "namespace"):
		return fmt.Sprintf("the flag %s %s", prev, ns), ""
	}
	switch {
	case m.promQL.MatchString(s):
		return "a PromQL matcher on its namespace label", ""
	case m.dns.MatchString(s):
		return fmt.Sprintf("the DNS name %s", m.dns.FindString(s)), ""
	case m.flag.MatchString(s):
		return fmt.Sprintf("the flag %s", strings.TrimSpace(m.flag.FindString(s))), ""
	}
	return "", ""
}

// walkStrings calls fn with every string in v that keep accepts, with its
// field path (a.b[0].c), the map holding it (or the list's), its key, and
// the string before it in the same list ("" otherwise). Paths are spelt
// out only for the strings kept: most strings of a manifest are not.
func walkStrings(v any, keep func(string) bool, fn func(field string, parent map[string]any, key, s, prev string)) {
	type segment struct {
		key   string
		index int // a list item's, or -1 for a map key
	}
	path := make([]segment, 0, 16)
	field := func() string {
		out := ""
		for _, s := range path {
			switch {
			case s.index >= 0:
				out += "[" + strconv.Itoa(s.index) + "]"
			case out != "":
				out += "." + s.key
			default:
				out = s.key
			}
		}
		return out
	}
	var walk func(v any, parent map[string]any, key, prev string)
	walk = func(v any, parent map[string]any, key, prev string) {
		switch x := v.(type) {
		case map[string]any:
			for k, c := range x {
				path = append(path, segment{k, -1})
				walk(c, x, k, "")
				path = path[:len(path)-1]
			}
		case []any:
			prev := ""
			for i, c := range x {
				path = append(path, segment{index: i})
				walk(c, parent, key, prev)
				path = path[:len(path)-1]
				prev, _ = c.(string)
			}
		case string:
			if keep(x) {
				fn(field(), parent, key, x, prev)
			}
		}
	}
	walk(v, nil, "", "")
}
