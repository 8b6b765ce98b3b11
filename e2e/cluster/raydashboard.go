package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The Ray job API of every Ray head in the cluster. KubeRay submits a
// RayJob's entrypoint to the head's dashboard (HTTPMode) and polls it until
// the job ends; the dashboard runs inside the head pod, so like every other
// program in a container it is simulated. KubeRay runs with HTTP_PROXY
// pointing here: requests arrive for http://<service>.<namespace>.svc...:8265,
// and the entrypoint runs as a program of the head pod whose distributed
// work needs every worker of its cluster.
type rayDashboard struct {
	c    *Cluster
	ctx  context.Context
	mu   sync.Mutex
	jobs map[string]*rayJobRun // namespace/submission id
}

type rayJobRun struct {
	Status    string `json:"status"`
	JobID     string `json:"job_id"`
	Submitted string `json:"submission_id"`
	Start     int64  `json:"start_time"`
	End       int64  `json:"end_time"`
	Message   string `json:"message"`
}

func (c *Cluster) startRayDashboard(ctx context.Context) (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	d := &rayDashboard{c: c, ctx: ctx, jobs: map[string]*rayJobRun{}}
	srv := &http.Server{Handler: d}
	go srv.Serve(l)
	go func() { <-ctx.Done(); srv.Close() }()
	return l.Addr().String(), nil
}

func (d *rayDashboard) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	host := strings.Split(req.Host, ":")[0]
	parts := strings.Split(host, ".") // service, namespace, svc, ...
	if len(parts) < 3 || parts[2] != "svc" {
		http.Error(w, "not a service address", http.StatusBadGateway)
		return
	}
	service, namespace := parts[0], parts[1]
	p := strings.TrimSuffix(req.URL.Path, "/")
	w.Header().Set("Content-Type", "application/json")
	switch {
	case req.Method == http.MethodPost && p == "/api/jobs":
		var body struct {
			Entrypoint   string         `json:"entrypoint"`
			SubmissionID string         `json:"submission_id"`
			RuntimeEnv   map[string]any `json:"runtime_env"`
		}
		if err := json.NewDecoder(req.Body).Decode(&body); err != nil || body.SubmissionID == "" {
			http.Error(w, "bad submission", http.StatusBadRequest)
			return
		}
		// Ray accepts the submission and fails the job when its
		// supervisor cannot take the runtime environment.
		if err := checkRuntimeEnv(body.RuntimeEnv); err != nil {
			d.fail(namespace, body.SubmissionID, "Failed to start supervisor actor "+body.SubmissionID+": "+err.Error())
		} else {
			d.submit(namespace, service, body.SubmissionID, body.Entrypoint, envVars(body.RuntimeEnv))
		}
		json.NewEncoder(w).Encode(map[string]string{"job_id": body.SubmissionID, "submission_id": body.SubmissionID})
	case strings.HasPrefix(p, "/api/jobs/") && strings.HasSuffix(p, "/stop") && req.Method == http.MethodPost:
		id := strings.TrimSuffix(strings.TrimPrefix(p, "/api/jobs/"), "/stop")
		d.mu.Lock()
		if j := d.jobs[namespace+"/"+id]; j != nil && j.End == 0 {
			j.Status, j.End = "STOPPED", time.Now().UnixMilli()
		}
		d.mu.Unlock()
		json.NewEncoder(w).Encode(map[string]bool{"stopped": true})
	case strings.HasPrefix(p, "/api/jobs/") && req.Method == http.MethodGet:
		d.mu.Lock()
		j := d.jobs[namespace+"/"+strings.TrimPrefix(p, "/api/jobs/")]
		var copy rayJobRun
		if j != nil {
			copy = *j
		}
		d.mu.Unlock()
		if j == nil {
			http.Error(w, "job not found", http.StatusNotFound)
			return
		}
		json.NewEncoder(w).Encode(copy)
	default:
		http.Error(w, "not simulated: "+req.Method+" "+p, http.StatusNotFound)
	}
}

var rayClusters = schema.GroupVersionResource{Group: "ray.io", Version: "v1", Resource: "rayclusters"}

// submit starts a job on the head behind a service.
func (d *rayDashboard) submit(namespace, service, id, entrypoint string, env []corev1.EnvVar) {
	d.mu.Lock()
	if d.jobs[namespace+"/"+id] != nil {
		d.mu.Unlock()
		return
	}
	job := &rayJobRun{Status: "RUNNING", JobID: id, Submitted: id, Start: time.Now().UnixMilli()}
	d.jobs[namespace+"/"+id] = job
	d.mu.Unlock()
	go func() {
		status, msg := d.run(namespace, service, entrypoint, env)
		d.mu.Lock()
		if job.End == 0 {
			job.Status, job.Message, job.End = status, msg, time.Now().UnixMilli()
		}
		d.mu.Unlock()
	}()
}

// fail records a job that failed as it was submitted.
func (d *rayDashboard) fail(namespace, id, msg string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.jobs[namespace+"/"+id] == nil {
		now := time.Now().UnixMilli()
		d.jobs[namespace+"/"+id] = &rayJobRun{Status: "FAILED", JobID: id, Submitted: id, Start: now, End: now, Message: msg}
	}
}

// checkRuntimeEnv applies Ray's rules for what a job submitted to the
// dashboard directly may carry: working_dir and py_modules are URIs of
// packages (a client such as `ray job submit` uploads a local directory
// and sends its gcs:// URI; the dashboard uploads nothing), and a remote
// package is a .zip or .whl (ray/_private/runtime_env/validation.py,
// packaging.py).
func checkRuntimeEnv(env map[string]any) error {
	var uris []string
	if wd, ok := env["working_dir"].(string); ok {
		uris = append(uris, wd)
	}
	if mods, ok := env["py_modules"].([]any); ok {
		for _, m := range mods {
			if s, ok := m.(string); ok {
				uris = append(uris, s)
			}
		}
	}
	for _, uri := range uris {
		scheme, rest, ok := strings.Cut(uri, "://")
		switch {
		case !ok || !slices.Contains([]string{"gcs", "https", "http", "s3", "gs", "file", "azure", "abfss"}, scheme):
			return fmt.Errorf("%s is not a valid URI. Passing directories or modules to be dynamically uploaded is only supported at the job level (i.e., passed to `ray.init`)", uri)
		case scheme != "gcs" && !strings.HasSuffix(rest, ".zip") && !strings.HasSuffix(rest, ".whl"):
			return fmt.Errorf("only .zip or .whl files are supported for remote URIs, got %s", uri)
		}
	}
	return nil
}

// run runs an entrypoint as Ray's job supervisor does: with /bin/sh, in
// the head's Ray container (its image, volumes and environment, and the
// runtime environment's variables). Its programs' work needs every worker
// of the cluster to have joined (standins.go).
func (d *rayDashboard) run(namespace, service, entrypoint string, env []corev1.EnvVar) (string, string) {
	ctx := d.ctx
	rt := d.c.Runtime
	svc, err := d.c.Client.CoreV1().Services(namespace).Get(ctx, service, metav1.GetOptions{})
	if err != nil {
		return "FAILED", err.Error()
	}
	pods, err := d.c.Client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(svc.Spec.Selector).String()})
	if err != nil || len(pods.Items) == 0 {
		return "FAILED", "no head pod"
	}
	head := &pods.Items[0]
	cluster := head.Labels["ray.io/cluster"]
	rc, err := d.c.Dynamic.Resource(rayClusters).Namespace(namespace).Get(ctx, cluster, metav1.GetOptions{})
	if err != nil {
		return "FAILED", err.Error()
	}
	want := 0
	groups, _, _ := unstructured.NestedSlice(rc.Object, "spec", "workerGroupSpecs")
	for _, g := range groups {
		n, _, _ := unstructured.NestedInt64(g.(map[string]any), "replicas")
		want += int(n)
	}
	c := *head.Spec.Containers[0].DeepCopy()
	c.Name, c.Command, c.Args = "ray-job-"+service, []string{"/bin/sh", "-c", entrypoint}, nil
	c.Env = append(append(c.Env, env...), corev1.EnvVar{Name: envRayJob, Value: fmt.Sprintf("%s/%d", cluster, want)})
	rt.record(head, "Ray job submitted")
	k, ok := rt.start(ctx, head, c)
	if !ok {
		return "FAILED", "the job's supervisor could not start"
	}
	<-k.proc.Done()
	if st := k.proc.Status(); st != 0 {
		rt.record(head, "Ray job failed with %d:%s", st, k.out.tail())
		return "FAILED", fmt.Sprintf("the entrypoint ended with %d", st)
	}
	rt.record(head, "Ray job succeeded")
	return "SUCCEEDED", ""
}

// envVars are a runtime environment's env_vars.
func envVars(env map[string]any) []corev1.EnvVar {
	vars, _ := env["env_vars"].(map[string]any)
	names := make([]string, 0, len(vars))
	for k := range vars {
		names = append(names, k)
	}
	slices.Sort(names)
	var out []corev1.EnvVar
	for _, k := range names {
		out = append(out, corev1.EnvVar{Name: k, Value: fmt.Sprint(vars[k])})
	}
	return out
}
