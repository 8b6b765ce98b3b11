//go:build e2e

package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/llmrender/llmrender/e2e/cluster/engine"
	"github.com/llmrender/llmrender/e2e/cluster/gateway"
	"github.com/llmrender/llmrender/e2e/cluster/promeval"
)

// The request path, end to end. A server has run when a client's OpenAI
// request reaches it and comes back: straight to each ready server of a
// release without an InferencePool, and through the gateway's path with
// one. There the gateway is a stand-in that speaks Envoy's
// external-processing protocol to the release's endpoint picker (the
// extension's, or llm-d's for prefill and decode apart), built from the
// release the chart names and run as rendered (its arguments, its
// configuration, its ServiceAccount's token under the API server's RBAC,
// its namespace from the downward API), and forwards where the picker
// says. The servers are stand-ins that answer on their pod's own address
// as the engine's HTTP API and metrics (package engine) and record what
// they get; llm-d's routing sidecar in front of a decode server is the
// real one.

// asked is what a check of a scenario's servers has to hand.
type asked struct {
	t       *testing.T
	ns      string
	files   []string // the values files the objects were rendered from
	objs    []*unstructured.Unstructured
	want    Expected
	servers []*corev1.Pod // the ready server pods that answer HTTP
	// endpoints are the pool's ready pods (prefill servers too), and port
	// its target port; none without an InferencePool.
	endpoints []*corev1.Pod
	port      int
	picker    *pickerRun // nil without an InferencePool
	gw        *gateway.Gateway
}

// askServers checks that a networked scenario's servers answer: through
// the picker when the release has an InferencePool (and then the picker
// tracks exactly the ready servers), else each ready server directly;
// then whatever more the case asks.
func askServers(t *testing.T, ns string, files []string, objs []*unstructured.Unstructured, more func(context.Context, *asked) error) func(context.Context, string) error {
	return func(ctx context.Context, _ string) error {
		a := &asked{t: t, ns: ns, files: files, objs: objs, want: sim.Runtime.expected(ns)}
		if a.want.Model == "" {
			return fmt.Errorf("the plan names no model for clients to ask for")
		}
		var err error
		if a.servers, err = readyServerPods(ctx, ns); err != nil {
			return err
		}
		if hasKind(objs, "InferencePool") {
			if a.endpoints, a.port, err = poolEndpoints(ctx, ns, objs); err != nil {
				return err
			}
			if a.picker, err = startPicker(ctx, t, ns, objs); err != nil {
				return err
			}
			defer a.picker.stop(t)
			if err := a.picker.tracks(ctx, a.endpoints); err != nil {
				return err
			}
			a.gw = &gateway.Gateway{Picker: a.picker.grpc}
			defer a.gw.Close()
			var to []string
			for i := range 4 {
				endpoint, _, err := a.viaGateway(ctx, a.want.Model, fmt.Sprintf("request %d: why is the sky blue?", i), nil)
				if err != nil {
					return err
				}
				to = append(to, endpoint)
			}
			t.Logf("4 requests for %s answered through the endpoint picker, by %s", a.want.Model, strings.Join(to, ", "))
		} else {
			for _, p := range a.servers {
				if api := apiPort(p); api > 0 {
					if _, err := a.direct(ctx, p, api, a.want.Model); err != nil {
						return err
					}
				}
			}
			t.Logf("each of %d server(s) answered a request for %s", len(a.servers), a.want.Model)
		}
		if more != nil {
			return more(ctx, a)
		}
		return nil
	}
}

// completion is an OpenAI completions request's body.
func completion(model, prompt string) []byte {
	b, _ := json.Marshal(map[string]any{"model": model, "prompt": prompt, "max_tokens": 8})
	return b
}

// viaGateway sends a completion through the gateway stand-in and checks
// that it came back from a server of the release, whose address it
// returns with the response's body.
func (a *asked) viaGateway(ctx context.Context, model, prompt string, header http.Header) (string, []byte, error) {
	endpoint, body, err := a.send(ctx, model, prompt, header)
	if err != nil {
		return endpoint, body, err
	}
	return endpoint, body, a.cameBack(endpoint, body, model)
}

// send sends a completion through the gateway stand-in and returns where
// the picker sent it and the response's body, an error unless 200.
func (a *asked) send(ctx context.Context, model, prompt string, header http.Header) (string, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://gateway.test/v1/completions", bytes.NewReader(completion(model, prompt)))
	if err != nil {
		return "", nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	for k, vs := range header {
		req.Header[k] = vs
	}
	resp, tr, err := a.gw.Do(ctx, req)
	if err != nil {
		return "", nil, fmt.Errorf("model %q through the picker: %v\n%s", model, err, a.picker.logs.tail(20))
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return tr.Endpoint, body, fmt.Errorf("model %q through the picker: %d %s (endpoint %q)\n%s", model, resp.StatusCode, body, tr.Endpoint, a.picker.logs.tail(20))
	}
	return tr.Endpoint, body, nil
}

// cameBack checks that a completion came back from a ready server of the
// release.
func (a *asked) cameBack(endpoint string, body []byte, model string) error {
	if !a.isServer(endpoint) {
		return fmt.Errorf("the picker sent model %q to %s, which is no ready server of the release", model, endpoint)
	}
	return answered(body, model)
}

// direct sends a completion to one server's API port.
func (a *asked) direct(ctx context.Context, p *corev1.Pod, port int, model string) ([]byte, error) {
	url := fmt.Sprintf("http://%s/v1/completions", net.JoinHostPort(p.Status.PodIP, strconv.Itoa(port)))
	var body []byte
	var last error
	// The pod is ready when its containers run; its server may still be
	// binding its port.
	if !poll(ctx, 60*time.Second, func() bool {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(completion(model, "hello")))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			last = err
			return false
		}
		defer resp.Body.Close()
		body, _ = io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			last = fmt.Errorf("%d %s", resp.StatusCode, body)
			return true // an answer: no point asking again
		}
		last = nil
		return true
	}) || last != nil {
		return nil, fmt.Errorf("server %s (%s): model %q: %v", p.Name, url, model, last)
	}
	return body, answered(body, model)
}

// answered checks a completion's body: the model asked for, a choice.
func answered(body []byte, model string) error {
	var r struct {
		Model   string `json:"model"`
		Choices []any  `json:"choices"`
	}
	if err := json.Unmarshal(body, &r); err != nil || r.Model != model || len(r.Choices) == 0 {
		return fmt.Errorf("not a completion of model %q: %s", model, body)
	}
	return nil
}

// isServer tells whether host:port is one of the pool's ready endpoints.
func (a *asked) isServer(endpoint string) bool {
	host, port, err := net.SplitHostPort(endpoint)
	if err != nil || port != strconv.Itoa(a.port) {
		return false
	}
	return slices.ContainsFunc(a.endpoints, func(p *corev1.Pod) bool { return p.Status.PodIP == host })
}

// poolEndpoints are the ready pods the release's InferencePool selects,
// and its target port.
func poolEndpoints(ctx context.Context, ns string, objs []*unstructured.Unstructured) ([]*corev1.Pod, int, error) {
	for _, o := range objs {
		if o.GetKind() != "InferencePool" {
			continue
		}
		labels, _, _ := unstructured.NestedStringMap(o.Object, "spec", "selector", "matchLabels")
		ports, _, _ := unstructured.NestedSlice(o.Object, "spec", "targetPorts")
		port := 0
		if len(ports) > 0 {
			n, _, _ := unstructured.NestedInt64(ports[0].(map[string]any), "number")
			port = int(n)
		}
		var sel []string
		for k, v := range labels {
			sel = append(sel, k+"="+v)
		}
		slices.Sort(sel)
		pods, err := sim.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: strings.Join(sel, ",")})
		if err != nil {
			return nil, 0, err
		}
		var out []*corev1.Pod
		for i := range pods.Items {
			if p := &pods.Items[i]; podReady(p) && p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
				out = append(out, p)
			}
		}
		slices.SortFunc(out, func(a, b *corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
		if len(out) == 0 || port == 0 {
			return nil, 0, fmt.Errorf("the InferencePool selects no ready pod, or has no target port")
		}
		return out, port, nil
	}
	return nil, 0, fmt.Errorf("no InferencePool in the render")
}

// served are the requests the server at host:port received, as it
// recorded them.
func served(ctx context.Context, endpoint string) ([]engine.Request, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+endpoint+"/llmrender-test/requests", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var out []engine.Request
	return out, json.NewDecoder(resp.Body).Decode(&out)
}

// apiPort is the port a server pod answers HTTP on: its container port
// named http (a decode server's is its routing sidecar's).
func apiPort(p *corev1.Pod) int {
	for _, cs := range [][]corev1.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for _, c := range cs {
			for _, port := range c.Ports {
				if port.Name == "http" {
					return int(port.ContainerPort)
				}
			}
		}
	}
	return 0
}

// readyServerPods are the namespace's ready server pods that answer HTTP
// (a LeaderWorkerSet's leaders, or every pod with data-parallel hybrid
// load balancing), by name.
func readyServerPods(ctx context.Context, ns string) ([]*corev1.Pod, error) {
	pods, err := sim.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/component=run"})
	if err != nil {
		return nil, err
	}
	var out []*corev1.Pod
	for i := range pods.Items {
		p := &pods.Items[i]
		if podReady(p) && p.Status.Phase == corev1.PodRunning && apiPort(p) > 0 {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b *corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	if len(out) == 0 {
		return nil, fmt.Errorf("no ready server pod answers HTTP in %s", ns)
	}
	return out, nil
}

func hasKind(objs []*unstructured.Unstructured, kind string) bool {
	return slices.ContainsFunc(objs, func(o *unstructured.Unstructured) bool { return o.GetKind() == kind })
}

// pickerRun is an endpoint picker running as its Deployment renders it.
type pickerRun struct {
	*started
	grpc, metrics string // host:port
}

// startPicker runs the release's endpoint picker as its Deployment is
// rendered: its arguments (its configuration where the ConfigMap would be
// mounted, its listeners on free local ports), its namespace from the
// downward API, and the token of its ServiceAccount, so that the API
// server's RBAC holds it to the rendered Role. It waits until the picker
// reports SERVING on the health service its probes ask for.
func startPicker(ctx context.Context, t *testing.T, ns string, objs []*unstructured.Unstructured) (*pickerRun, error) {
	var args []string
	var config, image, account string
	for _, o := range objs {
		switch {
		case o.GetKind() == "Deployment" && strings.HasSuffix(o.GetName(), "-epp"):
			spec, _, _ := unstructured.NestedMap(o.Object, "spec", "template", "spec")
			account, _ = spec["serviceAccountName"].(string)
			c := spec["containers"].([]any)[0].(map[string]any)
			image, _ = c["image"].(string)
			for _, a := range c["args"].([]any) {
				args = append(args, a.(string))
			}
		case o.GetKind() == "ConfigMap" && strings.HasSuffix(o.GetName(), "-epp"):
			config, _, _ = unstructured.NestedString(o.Object, "data", "config.yaml")
		}
	}
	if len(args) == 0 || config == "" || account == "" {
		return nil, fmt.Errorf("no endpoint picker Deployment with a ServiceAccount, or no ConfigMap, in the render (args %q)", args)
	}
	bin := os.Getenv("LLMRENDER_EPP")
	if strings.Contains(image, "llm-d-inference-scheduler") {
		bin = os.Getenv("LLMRENDER_LLMD_EPP")
	}
	// The picker built here is the release the chart runs.
	if tag := image[strings.LastIndex(image, ":")+1:]; bin == "" || !strings.Contains(bin, "-"+tag) {
		return nil, fmt.Errorf("the chart runs the picker %s, and the one built here is %q", image, bin)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(file, []byte(config), 0o644); err != nil {
		return nil, err
	}
	kubeconfig, err := tokenKubeconfig(ctx, dir, ns, account)
	if err != nil {
		return nil, err
	}
	var with []string
	for _, a := range args {
		if strings.HasPrefix(a, "--config-file=") {
			a = "--config-file=" + file
		}
		with = append(with, a)
	}
	ports, err := freePorts(3)
	if err != nil {
		return nil, err
	}
	with = append(with, fmt.Sprintf("--grpc-port=%d", ports[0]), fmt.Sprintf("--grpc-health-port=%d", ports[1]), fmt.Sprintf("--metrics-port=%d", ports[2]))
	p, err := start(bin, with, "KUBECONFIG="+kubeconfig, "NAMESPACE="+ns, "POD_NAME="+ns+"-epp-0")
	if err != nil {
		return nil, err
	}
	pk := &pickerRun{started: p, grpc: fmt.Sprintf("127.0.0.1:%d", ports[0]), metrics: fmt.Sprintf("http://127.0.0.1:%d/metrics", ports[2])}
	err = waitHealthy(ctx, fmt.Sprintf("127.0.0.1:%d", ports[1]), p)
	// Its external-processing server starts beside the health service; a
	// gateway connects once it listens.
	if err == nil && !poll(ctx, 60*time.Second, func() bool { return !p.running() || accepts(pk.grpc) }) {
		err = fmt.Errorf("its external-processing port %s does not accept connections", pk.grpc)
	}
	if err != nil {
		pk.stop(t)
		return nil, fmt.Errorf("endpoint picker %s: %v\n%s", filepath.Base(filepath.Dir(bin)), err, p.logs.tail(40))
	}
	return pk, nil
}

// stop stops the picker with SIGTERM, as the kubelet would.
func (pk *pickerRun) stop(t *testing.T) {
	if !pk.started.stop(30 * time.Second) {
		t.Errorf("the endpoint picker did not stop within 30 s of SIGTERM")
	}
}

// tracks waits until the picker's per-pod metric names exactly the ready
// servers.
func (pk *pickerRun) tracks(ctx context.Context, servers []*corev1.Pod) error {
	var want, got []string
	for _, p := range servers {
		want = append(want, p.Name)
	}
	if !poll(ctx, 60*time.Second, func() bool { got = podsInMetrics(pk.metrics); return slices.Equal(got, want) }) {
		return fmt.Errorf("the endpoint picker tracks pods %q, want the ready servers %q\n%s", got, want, pk.logs.tail(40))
	}
	return nil
}

// tokenKubeconfig writes a kubeconfig with a token of the ServiceAccount,
// as the kubelet mounts one into the pod.
func tokenKubeconfig(ctx context.Context, dir, ns, account string) (string, error) {
	tr, err := sim.Client.CoreV1().ServiceAccounts(ns).CreateToken(ctx, account, &authv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("a token of ServiceAccount %s/%s: %w", ns, account, err)
	}
	path := filepath.Join(dir, "kubeconfig")
	config := fmt.Sprintf("apiVersion: v1\nkind: Config\nclusters:\n- name: sim\n  cluster: {server: %q, insecure-skip-tls-verify: true}\nusers:\n- name: sa\n  user: {token: %q}\ncontexts:\n- name: sa\n  context: {cluster: sim, user: sa, namespace: %s}\ncurrent-context: sa\n",
		sim.Config.Host, tr.Status.Token, ns)
	return path, os.WriteFile(path, []byte(config), 0o600)
}

// waitHealthy waits until the picker reports SERVING on the gRPC health
// service its rendered probes ask for.
func waitHealthy(ctx context.Context, addr string, p *started) error {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	health := healthpb.NewHealthClient(conn)
	serving := func() bool {
		c, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		r, err := health.Check(c, &healthpb.HealthCheckRequest{Service: "inference-extension"})
		return err == nil && r.Status == healthpb.HealthCheckResponse_SERVING
	}
	if !poll(ctx, 90*time.Second, func() bool { return !p.running() || serving() }) || !p.running() {
		return fmt.Errorf("not SERVING on the health service the probes ask for (exited: %v)", !p.running())
	}
	return nil
}

// What some releases must also do, beyond answering.
var requestChecks = map[string]func(context.Context, *asked) error{
	"serving/serve-gke-h100-llama31-8b-inferencepool":      objectivesCount,
	"serving/serve-gke-h200-qwen3-235b-a22b-disaggregated": prefillThenDecode,
	"serving/serve-gke-h200-deepseek-r1-wide-ep":           prefillThenDecode,
	"serving/serve-gke-h100-llama31-8b-lora":               adaptersAnswer,
	"serving/serve-gke-h100-llama31-8b-scale-to-zero":      scalesFromZero,
}

// objectivesCount: a request that names an objective in the documented
// header is scheduled under its priority, which the picker counts by
// priority (inference_objective_request_total); one that names none is
// priority 0.
func objectivesCount(ctx context.Context, a *asked) error {
	// The names clients send are the values', as the example documents
	// them; the objects must be found under them.
	objectives := map[string]int64{}
	for _, f := range a.files {
		data, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		var v struct {
			Serving struct {
				InferencePool struct {
					Objectives []struct {
						Name     string `json:"name"`
						Priority int64  `json:"priority"`
					} `json:"objectives"`
				} `json:"inferencePool"`
			} `json:"serving"`
		}
		if err := yaml.Unmarshal(data, &v); err != nil {
			return err
		}
		for _, o := range v.Serving.InferencePool.Objectives {
			objectives[o.Name] = o.Priority
		}
	}
	if len(objectives) == 0 {
		return fmt.Errorf("the values name no objective")
	}
	for name, priority := range objectives {
		before := requestsAtPriority(a.picker.metrics, priority)
		h := http.Header{"X-Gateway-Inference-Objective": {name}}
		if _, _, err := a.viaGateway(ctx, a.want.Model, "objective "+name, h); err != nil {
			return err
		}
		var after float64
		if !poll(ctx, 30*time.Second, func() bool { after = requestsAtPriority(a.picker.metrics, priority); return after > before }) {
			return fmt.Errorf("a request with x-gateway-inference-objective: %s was not counted at its priority %d (inference_objective_request_total{priority=%q} stays %v)", name, priority, fmt.Sprint(priority), after)
		}
	}
	return nil
}

// requestsAtPriority sums the picker's inference_objective_request_total
// at a priority.
func requestsAtPriority(url string, priority int64) float64 {
	resp, err := http.Get(url)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	sum := 0.0
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "inference_objective_request_total{") && strings.Contains(line, fmt.Sprintf(`priority="%d"`, priority)) {
			f := strings.Fields(line)
			v, _ := strconv.ParseFloat(f[len(f)-1], 64)
			sum += v
		}
	}
	return sum
}

// prefillThenDecode: a request whose prompt the decode server has not
// cached goes to a prefill server first, with the KV-transfer parameters
// llm-d's sidecar adds, and the decode server answers it with the
// parameters the prefill server returned.
func prefillThenDecode(ctx context.Context, a *asked) error {
	prompt := strings.Repeat("a prompt long enough that most of it is not cached on the decode server. ", 8)
	decode, _, err := a.viaGateway(ctx, a.want.Model, prompt, nil)
	if err != nil {
		return err
	}
	got, err := served(ctx, decode)
	if err != nil {
		return err
	}
	if !slices.ContainsFunc(got, func(r engine.Request) bool { return r.Kind == engine.KindDecode && r.Status == http.StatusOK }) {
		return fmt.Errorf("the decode server at %s received no request with the prefill server's KV-transfer parameters: %+v", decode, got)
	}
	for _, p := range a.endpoints {
		if p.Labels["llm-d.ai/role"] != "prefill" {
			continue
		}
		got, err := served(ctx, net.JoinHostPort(p.Status.PodIP, strconv.Itoa(a.port)))
		if err != nil {
			return err
		}
		if slices.ContainsFunc(got, func(r engine.Request) bool { return r.Kind == engine.KindPrefill && r.Status == http.StatusOK }) {
			return nil
		}
	}
	return fmt.Errorf("no prefill server received the prefill request")
}

// adaptersAnswer: a request for each LoRA adapter reaches a server that
// serves it.
func adaptersAnswer(ctx context.Context, a *asked) error {
	if len(a.want.Adapters) == 0 {
		return fmt.Errorf("the plan names no adapter")
	}
	for _, adapter := range a.want.Adapters {
		if a.gw == nil {
			for _, p := range a.servers {
				if _, err := a.direct(ctx, p, apiPort(p), adapter); err != nil {
					return err
				}
			}
			continue
		}
		endpoint, _, err := a.viaGateway(ctx, adapter, "adapter "+adapter, nil)
		if err != nil {
			return err
		}
		got, err := served(ctx, endpoint)
		if err != nil {
			return err
		}
		if !slices.ContainsFunc(got, func(r engine.Request) bool { return r.Adapter == adapter && r.Status == http.StatusOK }) {
			return fmt.Errorf("the server at %s did not serve adapter %s: %+v", endpoint, adapter, got)
		}
	}
	return nil
}

// scalesFromZero: the ScaledObject's queries, evaluated by Prometheus's
// own PromQL engine over series scraped from the real picker and the
// servers with the labels their PodMonitors add, and read as KEDA reads
// them, do what the render says. Rendered for the namespace the release
// runs in (a render without one is bound to Helm's default, and says so:
// LR024), the demand query sees a request the picker holds while no server
// is there, the wake query crosses its activation threshold then, a
// server started as KEDA would start it answers the held request, and once
// idle for the keep-alive every query falls to zero. The same queries from
// the render that was moved here see nothing: the control.
func scalesFromZero(ctx context.Context, a *asked) error {
	chosen, err := Render(a.ns, a.files, nil)
	if err != nil {
		return err
	}
	triggers, err := kedaTriggers(chosen)
	if err != nil {
		return err
	}
	moved, err := kedaTriggers(a.objs)
	if err != nil {
		return err
	}
	db, err := promeval.New()
	if err != nil {
		return err
	}
	defer db.Close()
	s := &scraper{a: a, db: db, at: time.Now().Truncate(time.Second)}
	value := func(q string) (float64, error) { return kedaValue(db, q, s.at) }
	expect := func(when, trigger string, want func(float64) bool, what string) error {
		for _, tr := range triggers {
			if tr.name != trigger {
				continue
			}
			v, err := value(tr.query)
			if err != nil {
				return fmt.Errorf("%s: trigger %s: %v", when, trigger, err)
			}
			if !want(v) {
				return fmt.Errorf("%s: trigger %s (%s) is %v, want %s", when, trigger, tr.query, v, what)
			}
			return nil
		}
		return fmt.Errorf("the ScaledObject has no trigger %s", trigger)
	}
	positive := func(v float64) bool { return v > 0 }
	zero := func(v float64) bool { return v == 0 }
	// A request that generates tokens between two scrapes keeps the
	// servers alive.
	if err := s.scrape(ctx); err != nil {
		return err
	}
	if _, _, err := a.viaGateway(ctx, a.want.Model, "keep me alive", nil); err != nil {
		return err
	}
	if err := s.scrape(ctx); err != nil {
		return err
	}
	if err := expect("after a request", "keep-alive", positive, "above 0"); err != nil {
		return err
	}
	// Idle, KEDA takes the servers to zero.
	if err := a.scaleServers(ctx, 0); err != nil {
		return err
	}
	if err := s.scrape(ctx); err != nil {
		return err
	}
	if err := expect("no server and no request", "wake", zero, "0"); err != nil {
		return err
	}
	// A request comes: the picker holds it.
	type answer struct {
		endpoint string
		body     []byte
		err      error
	}
	held := make(chan answer, 1)
	go func() {
		endpoint, body, err := a.send(ctx, a.want.Model, "wake up", nil)
		held <- answer{endpoint, body, err}
	}()
	var waiting float64
	for deadline := time.Now().Add(60 * time.Second); waiting == 0; {
		if time.Now().After(deadline) {
			return fmt.Errorf("the picker does not hold the request while no server is there (its flow control queue stays empty)\n%s", a.picker.logs.tail(20))
		}
		if err := s.scrape(ctx); err != nil {
			return err
		}
		if waiting, err = value(triggers[0].query); err != nil {
			return err
		}
	}
	if err := expect("a request held", "wake", func(v float64) bool { return v > triggerActivation(triggers, "wake") }, "above its activation threshold"); err != nil {
		return err
	}
	for _, tr := range moved {
		if v, err := value(tr.query); err != nil || v != 0 {
			return fmt.Errorf("the moved render's trigger %s (%s) sees %v (%v): its namespace matcher should name the render's namespace, not this one", tr.name, tr.query, v, err)
		}
	}
	// KEDA wakes a server; the held request is answered by it. The woken
	// server is a new pod, at an address of its own.
	if err := a.scaleServers(ctx, 1); err != nil {
		return err
	}
	got := <-held
	if got.err == nil {
		if a.endpoints, _, got.err = poolEndpoints(ctx, a.ns, a.objs); got.err == nil {
			got.err = a.cameBack(got.endpoint, got.body, a.want.Model)
		}
	}
	if got.err != nil {
		return fmt.Errorf("the request that woke the servers: %w", got.err)
	}
	// Idle for the keep-alive and more: everything falls to zero.
	for range 24 {
		if err := s.scrape(ctx); err != nil {
			return err
		}
	}
	for _, tr := range triggers {
		if err := expect("idle for 12 minutes", tr.name, zero, "0"); err != nil {
			return err
		}
	}
	a.t.Logf("KEDA's triggers, by Prometheus's engine over what the picker and the servers exported: %s woke a server for a held request, and every trigger fell to 0 after 12 idle minutes", triggers[len(triggers)-2].name)
	return nil
}

// trigger is one of a ScaledObject's Prometheus triggers.
type trigger struct {
	name, query string
	activation  float64
}

func kedaTriggers(objs []*unstructured.Unstructured) ([]trigger, error) {
	for _, o := range objs {
		if o.GetKind() != "ScaledObject" {
			continue
		}
		list, _, _ := unstructured.NestedSlice(o.Object, "spec", "triggers")
		var out []trigger
		for _, t := range list {
			m := t.(map[string]any)
			md, _ := m["metadata"].(map[string]any)
			name, _ := m["name"].(string)
			q, _ := md["query"].(string)
			act, _ := strconv.ParseFloat(fmt.Sprint(md["activationThreshold"]), 64)
			out = append(out, trigger{name: name, query: q, activation: act})
		}
		return out, nil
	}
	return nil, fmt.Errorf("no ScaledObject in the render")
}

func triggerActivation(ts []trigger, name string) float64 {
	for _, t := range ts {
		if t.name == name {
			return t.activation
		}
	}
	return 0
}

// kedaValue is a query's value as KEDA's Prometheus scaler (v2.18.3)
// reads it: an empty result is 0 (ignoreNullValues, true by default), more
// than one element an error.
func kedaValue(db *promeval.DB, q string, at time.Time) (float64, error) {
	r, err := db.Query(q, at)
	if err != nil {
		return 0, err
	}
	switch len(r.Vector) {
	case 0:
		if v, ok := r.Scalar(); ok {
			return v, nil
		}
		return 0, nil
	case 1:
		return r.Vector[0].Value, nil
	}
	return 0, fmt.Errorf("%s returned %d elements; KEDA refuses more than one", q, len(r.Vector))
}

// scraper scrapes the picker and the servers as their PodMonitors do,
// every 30 s of a clock of its own (the programs' state is real; only the
// time between scrapes is not waited for).
type scraper struct {
	a    *asked
	db   *promeval.DB
	at   time.Time
	seen map[string]promeval.Target // the server targets of the last scrape
}

func (s *scraper) scrape(ctx context.Context) error {
	s.at = s.at.Add(30 * time.Second)
	if err := s.add(ctx, s.a.picker.metrics, promeval.PodMonitorTarget(s.a.ns, "llm-epp", s.a.ns+"-epp-0", "epp", "metrics", "127.0.0.1", 9090)); err != nil {
		return err
	}
	pods, err := sim.Client.CoreV1().Pods(s.a.ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/component=run"})
	if err != nil {
		return err
	}
	now := map[string]promeval.Target{}
	for _, p := range pods.Items {
		port := apiPort(&p)
		if p.Status.PodIP == "" || port == 0 || p.DeletionTimestamp != nil {
			continue
		}
		target := promeval.PodMonitorTarget(s.a.ns, "llm", p.Name, "server", "http", p.Status.PodIP, port)
		url := fmt.Sprintf("http://%s/metrics", net.JoinHostPort(p.Status.PodIP, strconv.Itoa(port)))
		if err := s.add(ctx, url, target); err != nil {
			continue // not answering yet: Prometheus records a failed scrape
		}
		now[p.Name] = target
	}
	for name, t := range s.seen {
		if _, ok := now[name]; !ok {
			if err := s.db.TargetGone(t, s.at); err != nil {
				return err
			}
		}
	}
	s.seen = now
	return nil
}

func (s *scraper) add(ctx context.Context, url string, t promeval.Target) error {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %d", url, resp.StatusCode)
	}
	return s.db.Add(body, resp.Header.Get("Content-Type"), s.at, t)
}

// scaleServers sets the servers' replicas, as KEDA does, and waits until
// that many are ready (or none is left).
func (a *asked) scaleServers(ctx context.Context, n int32) error {
	patch := []byte(fmt.Sprintf(`{"spec":{"replicas":%d}}`, n))
	if _, err := sim.Client.AppsV1().Deployments(a.ns).Patch(ctx, "llm", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return err
	}
	ok := poll(ctx, 3*time.Minute, func() bool {
		pods, err := sim.Client.CoreV1().Pods(a.ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/component=run"})
		if err != nil {
			return false
		}
		ready := 0
		for _, p := range pods.Items {
			if n == 0 {
				ready++ // any pod left, gone or not
			} else if podReady(&p) && p.DeletionTimestamp == nil {
				ready++
			}
		}
		return int32(ready) == n
	})
	if !ok {
		return fmt.Errorf("the servers did not reach %d replicas", n)
	}
	return nil
}

// accepts tells whether something listens at host:port.
func accepts(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err == nil {
		c.Close()
	}
	return err == nil
}

// Servers the examples do not show behind the picker answer through it
// too: LoRA adapters (the picker's LoRA affinity reads vLLM's
// lora_requests_info), and SGLang (the picker reads SGLang's metrics by
// its core-metrics-extractor's defaultEngine; the metric-name flags it
// once took make the picker exit at start-up).
func TestServerVariantsAnswerThroughThePicker(t *testing.T) {
	pool := []string{"serving.inferencePool.enabled=true", "serving.inferencePool.gateway.name=inference-gateway"}
	for _, c := range []struct {
		name, example string
		set           []string
		peak          int
		check         func(context.Context, *asked) error
	}{
		{"lora", "serving/serve-gke-h100-llama31-8b-lora", pool, 1, adaptersAnswer},
		{"sglang", "serving/serve-gke-h100-llama31-8b-inferencepool", []string{"serving.engine=sglang"}, 2, nil},
		// A draft model fetched beside the weights, each engine's flags read
		// by its stand-in as the engine reads them.
		{"draft", "serving/serve-gke-h100-llama31-8b-inferencepool", []string{"serving.speculative.method=draft", "serving.speculative.draft.model=llama-3.2-1b-instruct"}, 2, nil},
		{"sglang-draft", "serving/serve-gke-h100-llama31-8b-inferencepool", []string{"serving.engine=sglang", "serving.speculative.method=draft", "serving.speculative.draft.model=llama-3.2-1b-instruct"}, 2, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ns := "variant-" + c.name
			files := []string{example(c.example)}
			objs, err := RenderFor(ns, files, c.set)
			if err == nil {
				objs, err = MoveTo(objs, ns)
			}
			if err != nil {
				t.Fatal(err)
			}
			sc := Scenario{Name: ns, Objects: objs, Apply: "kubectl", Nodes: gkeNodes("h100-80gb", 1), PeakNodes: 1, Network: true, Timeout: 3 * time.Minute}
			sc.Finished = askServers(t, ns, files, objs, c.check)
			runScenario(t, sc, c.peak, files, c.set...)
		})
	}
}
