package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// The operators of the newer modes: JobSet, LeaderWorkerSet, Kueue and
// Kubeflow Trainer, each a real controller manager with its webhooks (see
// webhooks.go). Every one reads its listeners from a configuration file
// written here: webhooks on 127.0.0.1, metrics and health probes off,
// certificates from the directory the test made, no leader election and no
// certificate management of its own (that needs a Service and a Secret,
// and would sign for a Service name the API server cannot reach here).

// operatorHost names one operator process and its webhook port.
type operatorHost struct {
	name string
	port int
	hook operatorHooks
}

// operators is the set started after the control plane.
type operators struct {
	certs *webhookCerts
	hosts []operatorHost
}

func (o *operators) port(name string) int {
	for _, h := range o.hosts {
		if h.name == name {
			return h.port
		}
	}
	return 0
}

// newOperators makes the webhook certificate and picks each operator's
// webhook port, before the CRDs are installed: Kueue's conversion webhook
// is part of its CRDs.
func (c *Cluster) newOperators() (*operators, error) {
	certs, err := newWebhookCerts(filepath.Join(c.Dir, "webhook-certs"))
	if err != nil {
		return nil, err
	}
	o := &operators{certs: certs}
	hooks := []operatorHooks{jobsetHooks, lwsHooks, kueueHooks, trainerHooks}
	ports, err := freePorts(len(hooks))
	if err != nil {
		return nil, err
	}
	for i, h := range hooks {
		o.hosts = append(o.hosts, operatorHost{name: h.operator, port: ports[i], hook: h})
	}
	return o, nil
}

// crds returns the CRDs as the operators install them: Kueue's with its
// conversion webhook.
func (o *operators) crds(crds []*unstructured.Unstructured) []*unstructured.Unstructured {
	return withConversion(crds, o.port("kueue"), o.certs.CABundle)
}

// writeConfig writes an operator's configuration file.
func (c *Cluster) writeConfig(name, text string) (string, error) {
	p := filepath.Join(c.Dir, name+"-config.yaml")
	return p, os.WriteFile(p, []byte(text), 0o644)
}

// start starts the four controller managers, waits until each serves its
// webhooks, registers them with the API server and waits until the API
// server calls them.
func (o *operators) start(ctx context.Context, c *Cluster, t Tools) error {
	k := c.Kubeconfig
	certDir := o.certs.Dir
	common := func(port int) string {
		return fmt.Sprintf(`webhook: {port: %d, host: 127.0.0.1, certDir: %q}
metrics: {bindAddress: "0"}
health: {healthProbeBindAddress: "0"}
leaderElection: {leaderElect: false}
internalCertManagement: {enable: false}
clientConnection: {qps: 50, burst: 100}
`, port, certDir)
	}
	// JobSet v0.12.0 (config.jobset.x-k8s.io/v1alpha1).
	cfg, err := c.writeConfig("jobset", "apiVersion: config.jobset.x-k8s.io/v1alpha1\nkind: Configuration\n"+common(o.port("jobset")))
	if err != nil {
		return err
	}
	if err := c.spawn("jobset", t.JobSet, []string{"KUBECONFIG=" + k}, "--config", cfg, "--kubeconfig", k, "--zap-devel=false"); err != nil {
		return err
	}
	// LWS v0.9.0 (config.lws.x-k8s.io/v1alpha1); --leader-elect defaults
	// to true on its command line.
	cfg, err = c.writeConfig("lws", "apiVersion: config.lws.x-k8s.io/v1alpha1\nkind: Configuration\n"+common(o.port("lws")))
	if err != nil {
		return err
	}
	if err := c.spawn("lws", t.LWS, []string{"KUBECONFIG=" + k}, "--config", cfg, "--kubeconfig", k, "--leader-elect=false", "--zap-devel=false"); err != nil {
		return err
	}
	// Kueue v0.19.2 (config.kueue.x-k8s.io/v1beta2), as clusters that
	// enforce quota run it: in the namespaces it manages (ManagedLabel:
	// scenarios with queues) every Job, Pod and Deployment is Kueue's, and
	// one without the queue-name label is never admitted
	// (manageJobsWithoutQueueName). It leaves the other namespaces alone,
	// as clusters without Kueue. Its visibility API server (an aggregated
	// API behind a Service) is off.
	var frameworks []string
	for _, f := range kueueFrameworks {
		frameworks = append(frameworks, f.name)
	}
	cfg, err = c.writeConfig("kueue", fmt.Sprintf(`apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
namespace: %s
manageJobsWithoutQueueName: true
managedJobsNamespaceSelector: {matchLabels: {%s: "true"}}
%spprofBindAddress: "0"
integrations:
  frameworks: [%s]
featureGates: {VisibilityOnDemand: false}
`, kueueNamespace, ManagedLabel, common(o.port("kueue")), strings.Join(frameworks, ", ")))
	if err != nil {
		return err
	}
	if err := c.spawn("kueue", t.Kueue, []string{"KUBECONFIG=" + k}, "--config", cfg, "--kubeconfig", k); err != nil {
		return err
	}
	// Kubeflow Trainer v2.3.0 (config.trainer.kubeflow.org/v1alpha1): its
	// webhook server reads the certificate from controller-runtime's
	// default directory under $TMPDIR, and its certificate management
	// section is certManagement.
	tmp := filepath.Join(c.Dir, "trainer-tmp")
	serving := filepath.Join(tmp, "k8s-webhook-server", "serving-certs")
	if err := os.MkdirAll(serving, 0o700); err != nil {
		return err
	}
	for _, f := range []string{"tls.crt", "tls.key"} {
		data, err := os.ReadFile(filepath.Join(certDir, f))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(serving, f), data, 0o600); err != nil {
			return err
		}
	}
	cfg, err = c.writeConfig("trainer", fmt.Sprintf(`apiVersion: config.trainer.kubeflow.org/v1alpha1
kind: Configuration
webhook: {port: %d, host: 127.0.0.1}
metrics: {bindAddress: "0"}
health: {healthProbeBindAddress: "0"}
leaderElection: {leaderElect: false}
certManagement: {enable: false}
clientConnection: {qps: 50, burst: 100}
`, o.port("trainer")))
	if err != nil {
		return err
	}
	if err := c.spawn("trainer", t.Trainer, []string{"KUBECONFIG=" + k, "TMPDIR=" + tmp}, "--config", cfg, "--kubeconfig", k); err != nil {
		return err
	}
	// Kueue's own namespace, which its webhooks and queues leave alone,
	// and the DRA driver's, where the ComputeDomain controller keeps its
	// IMEX daemons' DaemonSets and claim templates.
	for _, ns := range []string{kueueNamespace, draDriverNamespace} {
		_, err = c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	// NVIDIA's ComputeDomain controller (sigs.k8s.io/dra-driver-nvidia-gpu
	// v0.4.1), as its chart runs it: it creates each ComputeDomain's
	// workload ResourceClaimTemplate, the one the pods claim IMEX channels
	// from. Its kubelet plugin does not run: the nodes' channel and daemon
	// devices are published as it would (Shape.DRA), so the real
	// scheduler allocates the channels.
	if err := c.spawn("compute-domain-controller", t.ComputeDomainController, []string{"KUBECONFIG=" + k},
		"--kubeconfig", k, "--namespace", draDriverNamespace, "--pod-name", "compute-domain-controller-sim",
		"--image-name", "registry.k8s.io/dra-driver-nvidia/dra-driver-nvidia-gpu:v0.4.1", "--log-verbosity-cd-daemon", "1"); err != nil {
		return err
	}
	for _, h := range o.hosts {
		if err := waitServing(ctx, c.ControlPlane, h.name, h.port, o.certs, 90*time.Second); err != nil {
			return err
		}
		m, v := h.hook.configurations(h.port, o.certs.CABundle)
		if _, err := c.Client.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, m, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("%s: %v", h.name, err)
		}
		if _, err := c.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, v, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("%s: %v", h.name, err)
		}
	}
	return c.waitWebhooks(ctx, 60*time.Second)
}

var (
	jobsGVR         = schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}
	jobSetsGVR      = schema.GroupVersionResource{Group: "jobset.x-k8s.io", Version: "v1alpha2", Resource: "jobsets"}
	lwsGVR          = schema.GroupVersionResource{Group: "leaderworkerset.x-k8s.io", Version: "v1", Resource: "leaderworkersets"}
	trainJobsGVR    = schema.GroupVersionResource{Group: "trainer.kubeflow.org", Version: "v1alpha1", Resource: "trainjobs"}
	localQueuesV1b1 = schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta1", Resource: "localqueues"}
)

// webhookProbes dry-run one object per operator that only its webhook
// changes or refuses, so a probe passes once the API server calls it.
var webhookProbes = []struct {
	name string
	gvr  schema.GroupVersionResource
	obj  string
	// check reads the dry-run's outcome; nil when the webhook acted.
	check func(*unstructured.Unstructured, error) error
}{
	{"kueue suspends a Job with a queue name", jobsGVR, `{"apiVersion": "batch/v1", "kind": "Job",
		"metadata": {"name": "sim-probe", "labels": {"kueue.x-k8s.io/queue-name": "sim-probe"}},
		"spec": {"suspend": false, "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}}`,
		func(u *unstructured.Unstructured, err error) error {
			if err != nil {
				return err
			}
			if s, _, _ := unstructured.NestedBool(u.Object, "spec", "suspend"); !s {
				return fmt.Errorf("spec.suspend is not true")
			}
			return nil
		}},
	{"kueue converts a v1beta1 LocalQueue", localQueuesV1b1, `{"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "LocalQueue",
		"metadata": {"name": "sim-probe"}, "spec": {"clusterQueue": "sim-probe"}}`,
		func(u *unstructured.Unstructured, err error) error { return err }},
	{"jobset defaults a JobSet's pod restart policy", jobSetsGVR, `{"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
		"metadata": {"name": "sim-probe"},
		"spec": {"replicatedJobs": [{"name": "a", "template": {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}}]}}`,
		func(u *unstructured.Unstructured, err error) error {
			if err != nil {
				return err
			}
			jobs, _, _ := unstructured.NestedSlice(u.Object, "spec", "replicatedJobs")
			if len(jobs) == 1 {
				if p, _, _ := unstructured.NestedString(jobs[0].(map[string]any), "template", "spec", "template", "spec", "restartPolicy"); p == "OnFailure" {
					return nil
				}
			}
			return fmt.Errorf("restartPolicy not defaulted to OnFailure")
		}},
	{"lws defaults a LeaderWorkerSet's subdomain policy", lwsGVR, `{"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
		"metadata": {"name": "sim-probe"},
		"spec": {"leaderWorkerTemplate": {"size": 2, "workerTemplate": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}}`,
		func(u *unstructured.Unstructured, err error) error {
			if err != nil {
				return err
			}
			if p, _, _ := unstructured.NestedString(u.Object, "spec", "networkConfig", "subdomainPolicy"); p != "Shared" {
				return fmt.Errorf("networkConfig.subdomainPolicy not defaulted to Shared")
			}
			return nil
		}},
	{"trainer refuses a TrainJob without its runtime", trainJobsGVR, `{"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
		"metadata": {"name": "sim-probe"}, "spec": {"runtimeRef": {"name": "sim-probe-missing"}}}`,
		func(u *unstructured.Unstructured, err error) error {
			if err != nil && strings.Contains(err.Error(), `admission webhook "validator.trainjob.trainer.kubeflow.org"`) {
				return nil
			}
			return fmt.Errorf("not refused by the Trainer's webhook: %v", err)
		}},
}

// waitWebhooks waits until every probe passes: the API server has loaded
// the configurations and each operator answers.
func (c *Cluster) waitWebhooks(ctx context.Context, timeout time.Duration) error {
	// The probe of a v1beta1 object draws a deprecation warning: expected.
	cfg := rest.CopyConfig(c.Config)
	cfg.WarningHandler = rest.NoWarnings{}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(timeout)
	for _, p := range webhookProbes {
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON([]byte(p.obj)); err != nil {
			return fmt.Errorf("%s: %v", p.name, err)
		}
		for {
			got, err := dyn.Resource(p.gvr).Namespace("default").Create(ctx, obj.DeepCopy(), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			err = p.check(got, err)
			if err == nil {
				break
			}
			if xerr := c.Exited(); xerr != nil {
				return xerr
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("webhook probe %q still fails after %v: %v", p.name, timeout, err)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	return nil
}
