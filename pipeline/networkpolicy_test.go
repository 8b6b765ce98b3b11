package pipeline

import (
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"

	"github.com/llmrender/llmrender/internal/examples"
	"github.com/llmrender/llmrender/rules"
	"github.com/llmrender/llmrender/values"
)

// With networkPolicy.enabled, every flow a workload needs is allowed and
// the ones it does not are refused, by NetworkPolicy's own rules (the
// simulated cluster runs no CNI to enforce them): the release's pods to
// each other on any port, to the cluster's DNS, the downloaders to the hub
// on 443, clients of the namespace to the server, Prometheus to a
// PodMonitor's servers, the KubeRay operator to the Ray dashboard; and
// nothing else in or out.
func TestNetworkPoliciesAllowWhatTheWorkloadNeeds(t *testing.T) {
	c, err := BuiltinChart()
	if err != nil {
		t.Fatal(err)
	}
	list, err := examples.List("..")
	if err != nil {
		t.Fatal(err)
	}
	hub := peer{ip: "140.82.114.4"}
	dns := peer{ns: "kube-system", labels: map[string]string{"k8s-app": "kube-dns"}}
	neighbour := peer{ns: "default", labels: map[string]string{"app": "client"}}
	stranger := peer{ns: "elsewhere", labels: map[string]string{"app": "client"}}
	flows := 0
	for _, ex := range list {
		res, err := Render(Request{Chart: c, Sources: values.Sources{Files: []string{ex.Path}, Set: []string{"networkPolicy.enabled=true"}}})
		if err != nil {
			t.Fatalf("%s: %v", ex.Name, err)
		}
		var pols []map[string]any
		var pods []peer
		objs := decoded(t, res)
		for _, o := range objs {
			if o.Doc["kind"] == "NetworkPolicy" {
				pols = append(pols, o.Doc)
			}
			pods = append(pods, podsOf(o)...)
		}
		if len(pols) == 0 || len(pods) == 0 {
			t.Fatalf("%s: %d policies, %d pods", ex.Name, len(pols), len(pods))
		}
		serve := res.Values["orchestration"].(map[string]any)["mode"] == "serve"
		serving, _ := res.Values["serving"].(map[string]any)
		scraped := serve && serving["metrics"].(map[string]any)["podMonitor"] == true
		pooled := serve && serving["inferencePool"].(map[string]any)["enabled"] == true
		if pooled != slices.ContainsFunc(pods, func(p peer) bool { return p.labels["app.kubernetes.io/component"] == "endpoint-picker" }) {
			t.Fatalf("%s: an endpoint picker where no InferencePool asks for one, or none where one does", ex.Name)
		}
		check := func(from, to peer, port int, proto string, want bool, why string) {
			flows++
			if got := allowed(pols, from, to, port, proto); got != want {
				t.Errorf("%s: %s -> %s:%d/%s allowed %v, want %v (%s)", ex.Name, from, to, port, proto, got, want, why)
			}
		}
		for _, p := range pods {
			for _, q := range pods {
				check(p, q, 29500, "TCP", true, "the release's pods to each other")
			}
			check(p, dns, 53, "UDP", true, "DNS")
			check(p, peer{ip: "1.1.1.1"}, 80, "TCP", false, "nothing else out")
			check(stranger, p, 29500, "TCP", false, "nothing else in")
			downloads := p.labels["app.kubernetes.io/component"] == "download"
			if serve && p.labels["app.kubernetes.io/component"] == "run" {
				check(neighbour, p, 8000, "TCP", true, "the namespace's clients to the server")
				check(stranger, p, 8000, "TCP", scraped, "another namespace: only Prometheus, where a PodMonitor asks")
			}
			if !downloads && !serve {
				check(p, hub, 443, "TCP", false, "only downloaders reach the hub")
			}
			if downloads {
				check(p, hub, 443, "TCP", true, "the download to the hub")
			}
			if p.labels["app.kubernetes.io/component"] == "endpoint-picker" {
				check(neighbour, p, 9002, "TCP", true, "the gateway to the endpoint picker")
				check(stranger, p, 9002, "TCP", false, "only the clients' gateway asks the picker")
				check(p, peer{ip: "10.0.0.1"}, 443, "TCP", true, "the picker to the Kubernetes API")
				check(stranger, p, 9090, "TCP", scraped, "Prometheus to the picker's metrics, where a PodMonitor asks")
			}
			if p.labels["ray.io/node-type"] == "head" {
				check(peer{ns: "ray-system", labels: map[string]string{"app": "kuberay-operator"}}, p, 8265, "TCP", true, "KubeRay to the dashboard")
			}
		}
	}
	t.Logf("%d flows checked over %d examples", flows, len(list))
}

// peer is a pod (namespace and labels) or, with ip, an address outside
// the cluster.
type peer struct {
	ns     string
	labels map[string]string
	ip     string
}

func (p peer) String() string {
	if p.ip != "" {
		return p.ip
	}
	return fmt.Sprintf("%s/%s", p.ns, p.labels["app.kubernetes.io/component"]+p.labels["app"]+p.labels["k8s-app"])
}

// podsOf lists the pods an object makes: each pod template's labels, in
// the release's namespace; a Ray head gets the label KubeRay gives it.
func podsOf(o rules.Object) []peer {
	var out []peer
	var walk func(v any, path string)
	walk = func(v any, path string) {
		switch n := v.(type) {
		case map[string]any:
			if spec, ok := n["spec"].(map[string]any); ok && spec["containers"] != nil {
				labels := map[string]string{}
				meta, _ := n["metadata"].(map[string]any)
				if o.Doc["kind"] == "Pod" {
					meta, _ = o.Doc["metadata"].(map[string]any)
				}
				ls, _ := meta["labels"].(map[string]any)
				for k, v := range ls {
					labels[k] = fmt.Sprint(v)
				}
				if strings.Contains(path, "headGroupSpec") {
					labels["ray.io/node-type"] = "head"
				}
				out = append(out, peer{ns: "default", labels: labels})
				return
			}
			for k, v := range n {
				walk(v, path+"."+k)
			}
		case []any:
			for _, v := range n {
				walk(v, path)
			}
		}
	}
	walk(o.Doc, "")
	return out
}

// allowed is NetworkPolicy's verdict on a flow: a pod no policy selects
// for a direction is open in it; a selected pod allows what one of its
// policies' rules allows. An address outside the cluster has no policies.
func allowed(pols []map[string]any, from, to peer, port int, proto string) bool {
	return side(pols, from, to, port, proto, "Egress", "egress", "to") && side(pols, to, from, port, proto, "Ingress", "ingress", "from")
}

func side(pols []map[string]any, self, other peer, port int, proto, kind, field, peers string) bool {
	if self.ip != "" {
		return true
	}
	selected := false
	for _, p := range pols {
		spec := p["spec"].(map[string]any)
		if !hasType(spec, kind) || !matches(spec["podSelector"], self.labels) {
			continue
		}
		selected = true
		rulesOf, _ := spec[field].([]any)
		for _, r := range rulesOf {
			rule := r.(map[string]any)
			if portMatches(rule["ports"], port, proto) && peerMatches(rule[peers], other) {
				return true
			}
		}
	}
	return !selected
}

func hasType(spec map[string]any, kind string) bool {
	types, _ := spec["policyTypes"].([]any)
	for _, t := range types {
		if t == kind {
			return true
		}
	}
	return false
}

func portMatches(ports any, port int, proto string) bool {
	list, _ := ports.([]any)
	if len(list) == 0 {
		return true
	}
	for _, p := range list {
		m := p.(map[string]any)
		pr, _ := m["protocol"].(string)
		if pr == "" {
			pr = "TCP"
		}
		if pr == proto && fmt.Sprint(m["port"]) == fmt.Sprint(port) {
			return true
		}
	}
	return false
}

func peerMatches(peers any, other peer) bool {
	list, _ := peers.([]any)
	if peers == nil {
		return true // no from/to: every peer
	}
	for _, p := range list {
		m := p.(map[string]any)
		if b, ok := m["ipBlock"].(map[string]any); ok {
			if _, cidr, err := net.ParseCIDR(fmt.Sprint(b["cidr"])); err == nil && other.ip != "" && cidr.Contains(net.ParseIP(other.ip)) {
				return true
			}
			continue
		}
		if other.ip != "" {
			continue
		}
		if ns, ok := m["namespaceSelector"]; ok {
			if !matches(ns, map[string]string{"kubernetes.io/metadata.name": other.ns}) {
				continue
			}
		} else if other.ns != "default" {
			continue // a podSelector alone: the policy's namespace
		}
		if ps, ok := m["podSelector"]; ok && !matches(ps, other.labels) {
			continue
		}
		return true
	}
	return false
}

// matches is a label selector's verdict (matchLabels, matchExpressions
// In, NotIn, Exists, DoesNotExist); an empty selector selects everything.
func matches(sel any, labels map[string]string) bool {
	m, _ := sel.(map[string]any)
	ml, _ := m["matchLabels"].(map[string]any)
	for k, v := range ml {
		if labels[k] != fmt.Sprint(v) {
			return false
		}
	}
	exprs, _ := m["matchExpressions"].([]any)
	for _, e := range exprs {
		x := e.(map[string]any)
		key, op := fmt.Sprint(x["key"]), fmt.Sprint(x["operator"])
		val, has := labels[key]
		in := false
		vals, _ := x["values"].([]any)
		for _, v := range vals {
			in = in || fmt.Sprint(v) == val
		}
		switch op {
		case "In":
			if !has || !in {
				return false
			}
		case "NotIn":
			if has && in {
				return false
			}
		case "Exists":
			if !has {
				return false
			}
		case "DoesNotExist":
			if has {
				return false
			}
		}
	}
	return true
}
