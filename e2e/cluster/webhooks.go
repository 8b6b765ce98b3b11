package cluster

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The operators' admission and conversion webhooks run for real: each
// operator serves them on 127.0.0.1 with a certificate made here, and the
// API server calls them through configurations that name the server by URL
// (https://127.0.0.1:PORT/PATH) with the CA that signed it. The paths, rules
// and selectors are the operators' own, as their config/webhook manifests
// and kubebuilder markers declare them at the pinned versions.

// webhookCerts is a CA and a serving certificate for 127.0.0.1 signed by
// it, as tls.crt and tls.key in Dir, the layout controller-runtime's
// webhook server reads.
type webhookCerts struct {
	Dir      string
	CABundle []byte
}

func newWebhookCerts(dir string) (*webhookCerts, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "sim-webhook-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	leafTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"},
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.crt"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leafDER}), 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.key"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return nil, err
	}
	return &webhookCerts{Dir: dir, CABundle: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})}, nil
}

// pool is the CA as a certificate pool, to check a server as the API
// server will.
func (w *webhookCerts) pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AppendCertsFromPEM(w.CABundle)
	return p
}

// hook is one webhook as an operator declares it.
type hook struct {
	name     string // the operator's webhook name (unique within a configuration)
	path     string
	group    string
	version  string
	resource []string // resources, "workloads/status" for a subresource
	ops      []admissionv1.OperationType
	// selectors, as the operator's kustomize patches add them
	objectSelector    *metav1.LabelSelector
	namespaceSelector *metav1.LabelSelector
}

var (
	create       = []admissionv1.OperationType{admissionv1.Create}
	createUpdate = []admissionv1.OperationType{admissionv1.Create, admissionv1.Update}
)

func exists(key string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: key, Operator: metav1.LabelSelectorOpExists}}}
}

func notIn(key string, values ...string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: key, Operator: metav1.LabelSelectorOpNotIn, Values: values}}}
}

// operatorHooks are an operator's mutating and validating webhooks.
type operatorHooks struct {
	operator             string // names the configurations
	mutating, validating []hook
}

// JobSet v0.12.0 (config/components/webhook: manifests.yaml, and patches/
// that limit the pod webhooks to the JobSet's pods).
var jobsetHooks = operatorHooks{operator: "jobset",
	mutating: []hook{
		{name: "mjobset.kb.io", path: "/mutate-jobset-x-k8s-io-v1alpha2-jobset", group: "jobset.x-k8s.io", version: "v1alpha2", resource: []string{"jobsets"}, ops: create},
		{name: "mpod.kb.io", path: "/mutate--v1-pod", version: "v1", resource: []string{"pods"}, ops: create, objectSelector: exists("jobset.sigs.k8s.io/jobset-name")},
	},
	validating: []hook{
		{name: "vjobset.kb.io", path: "/validate-jobset-x-k8s-io-v1alpha2-jobset", group: "jobset.x-k8s.io", version: "v1alpha2", resource: []string{"jobsets"}, ops: createUpdate},
		{name: "vpod.kb.io", path: "/validate--v1-pod", version: "v1", resource: []string{"pods"}, ops: create, objectSelector: exists("jobset.sigs.k8s.io/jobset-name")},
	},
}

// LWS v0.9.0 (config/webhook: manifests.yaml and the patches that limit
// the pod webhooks to the LeaderWorkerSet's pods).
var lwsHooks = operatorHooks{operator: "lws",
	mutating: []hook{
		{name: "mleaderworkerset.kb.io", path: "/mutate-leaderworkerset-x-k8s-io-v1-leaderworkerset", group: "leaderworkerset.x-k8s.io", version: "v1", resource: []string{"leaderworkersets"}, ops: createUpdate},
		{name: "mpod.kb.io", path: "/mutate--v1-pod", version: "v1", resource: []string{"pods"}, ops: create, objectSelector: exists("leaderworkerset.sigs.k8s.io/name")},
	},
	validating: []hook{
		{name: "vleaderworkerset.kb.io", path: "/validate-leaderworkerset-x-k8s-io-v1-leaderworkerset", group: "leaderworkerset.x-k8s.io", version: "v1", resource: []string{"leaderworkersets"}, ops: createUpdate},
		{name: "vpod.kb.io", path: "/validate--v1-pod", version: "v1", resource: []string{"pods"}, ops: createUpdate, objectSelector: exists("leaderworkerset.sigs.k8s.io/name")},
		{name: "vdisaggregatedset.kb.io", path: "/validate-disaggregatedset-x-k8s-io-v1-disaggregatedset", group: "disaggregatedset.x-k8s.io", version: "v1", resource: []string{"disaggregatedsets"}, ops: createUpdate},
	},
}

// Kubeflow Trainer v2.3.0 (manifests/base/webhook: manifests.yaml and the
// patches that let a runtime opt out of validation).
var trainerHooks = func() operatorHooks {
	optOut := notIn("trainer.kubeflow.org/webhook-validation", "disabled")
	return operatorHooks{operator: "trainer",
		mutating: []hook{
			{name: "defaulter.trainjob.trainer.kubeflow.org", path: "/mutate-trainer-kubeflow-org-v1alpha1-trainjob", group: "trainer.kubeflow.org", version: "v1alpha1", resource: []string{"trainjobs"}, ops: createUpdate},
		},
		validating: []hook{
			{name: "validator.clustertrainingruntime.trainer.kubeflow.org", path: "/validate-trainer-kubeflow-org-v1alpha1-clustertrainingruntime", group: "trainer.kubeflow.org", version: "v1alpha1", resource: []string{"clustertrainingruntimes"}, ops: createUpdate, objectSelector: optOut},
			{name: "validator.trainingruntime.trainer.kubeflow.org", path: "/validate-trainer-kubeflow-org-v1alpha1-trainingruntime", group: "trainer.kubeflow.org", version: "v1alpha1", resource: []string{"trainingruntimes"}, ops: createUpdate, objectSelector: optOut},
			{name: "validator.trainjob.trainer.kubeflow.org", path: "/validate-trainer-kubeflow-org-v1alpha1-trainjob", group: "trainer.kubeflow.org", version: "v1alpha1", resource: []string{"trainjobs"}, ops: createUpdate},
		},
	}
}()

// kueueFrameworks are the integrations Kueue manages here, each with its
// job kind's webhooks (config/components/webhook/manifests.yaml at v0.19.2;
// its kustomization keeps them out of kube-system and Kueue's namespace).
// LeaderWorkerSet implies pod: Kueue admits an LWS's groups as pod groups.
var kueueFrameworks = []struct {
	name                     string
	group, version, resource string
	path                     string // after /mutate- and /validate-
	mutateOps                []admissionv1.OperationType
}{
	{"batch/job", "batch", "v1", "jobs", "batch-v1-job", create},
	{"jobset.x-k8s.io/jobset", "jobset.x-k8s.io", "v1alpha2", "jobsets", "jobset-x-k8s-io-v1alpha2-jobset", create},
	{"kubeflow.org/pytorchjob", "kubeflow.org", "v1", "pytorchjobs", "kubeflow-org-v1-pytorchjob", create},
	{"kubeflow.org/mpijob", "kubeflow.org", "v2beta1", "mpijobs", "kubeflow-org-v2beta1-mpijob", create},
	{"ray.io/rayjob", "ray.io", "v1", "rayjobs", "ray-io-v1-rayjob", create},
	{"ray.io/raycluster", "ray.io", "v1", "rayclusters", "ray-io-v1-raycluster", create},
	{"trainer.kubeflow.org/trainjob", "trainer.kubeflow.org", "v1alpha1", "trainjobs", "trainer-kubeflow-org-v1alpha1-trainjob", create},
	{"leaderworkerset.x-k8s.io/leaderworkerset", "leaderworkerset.x-k8s.io", "v1", "leaderworkersets", "leaderworkerset-x-k8s-io-v1-leaderworkerset", createUpdate},
	{"deployment", "apps", "v1", "deployments", "apps-v1-deployment", createUpdate},
	{"pod", "", "v1", "pods", "-v1-pod", create},
}

// kueueNamespace is Kueue's own namespace (its default), which its
// webhooks leave alone, as they do kube-system.
const kueueNamespace = "kueue-system"

// draDriverNamespace is where NVIDIA's DRA driver runs, as its chart installs it.
const draDriverNamespace = "nvidia-dra-driver-gpu"

var kueueHooks = func() operatorHooks {
	h := operatorHooks{operator: "kueue",
		mutating: []hook{
			{name: "mclusterqueue.kb.io", path: "/mutate-kueue-x-k8s-io-v1beta2-clusterqueue", group: "kueue.x-k8s.io", version: "v1beta2", resource: []string{"clusterqueues"}, ops: create},
			{name: "mresourceflavor.kb.io", path: "/mutate-kueue-x-k8s-io-v1beta2-resourceflavor", group: "kueue.x-k8s.io", version: "v1beta2", resource: []string{"resourceflavors"}, ops: create},
			{name: "mworkload.kb.io", path: "/mutate-kueue-x-k8s-io-v1beta2-workload", group: "kueue.x-k8s.io", version: "v1beta2", resource: []string{"workloads"}, ops: create},
		},
		validating: []hook{
			{name: "vclusterqueue.kb.io", path: "/validate-kueue-x-k8s-io-v1beta2-clusterqueue", group: "kueue.x-k8s.io", version: "v1beta2", resource: []string{"clusterqueues"}, ops: createUpdate},
			{name: "vcohort.kb.io", path: "/validate-kueue-x-k8s-io-v1beta2-cohort", group: "kueue.x-k8s.io", version: "v1beta2", resource: []string{"cohorts"}, ops: createUpdate},
			{name: "vresourceflavor.kb.io", path: "/validate-kueue-x-k8s-io-v1beta2-resourceflavor", group: "kueue.x-k8s.io", version: "v1beta2", resource: []string{"resourceflavors"}, ops: createUpdate},
			{name: "vworkload.kb.io", path: "/validate-kueue-x-k8s-io-v1beta2-workload", group: "kueue.x-k8s.io", version: "v1beta2", resource: []string{"workloads", "workloads/status"}, ops: createUpdate},
		},
	}
	outside := notIn("kubernetes.io/metadata.name", "kube-system", kueueNamespace)
	for _, f := range kueueFrameworks {
		short := f.resource[:len(f.resource)-1] // jobs -> job: the kb.io names
		validateOps := createUpdate
		h.mutating = append(h.mutating, hook{name: "m" + short + ".kb.io", path: "/mutate-" + f.path, group: f.group, version: f.version, resource: []string{f.resource}, ops: f.mutateOps, namespaceSelector: outside})
		h.validating = append(h.validating, hook{name: "v" + short + ".kb.io", path: "/validate-" + f.path, group: f.group, version: f.version, resource: []string{f.resource}, ops: validateOps, namespaceSelector: outside})
	}
	return h
}()

// kueueConverted are the CRDs Kueue converts between v1beta1 and v1beta2
// (config/components/crd/kustomization.yaml: webhook_in_*.yaml).
var kueueConverted = []string{"localqueues", "clusterqueues", "cohorts", "workloads", "multikueueclusters"}

// configurations builds an operator's webhook configurations for its
// server at 127.0.0.1:port.
func (h operatorHooks) configurations(port int, caBundle []byte) (*admissionv1.MutatingWebhookConfiguration, *admissionv1.ValidatingWebhookConfiguration) {
	none := admissionv1.SideEffectClassNone
	fail := admissionv1.Fail
	client := func(path string) admissionv1.WebhookClientConfig {
		url := fmt.Sprintf("https://127.0.0.1:%d%s", port, path)
		return admissionv1.WebhookClientConfig{URL: &url, CABundle: caBundle}
	}
	rules := func(x hook) []admissionv1.RuleWithOperations {
		return []admissionv1.RuleWithOperations{{Operations: x.ops, Rule: admissionv1.Rule{APIGroups: []string{x.group}, APIVersions: []string{x.version}, Resources: x.resource}}}
	}
	m := &admissionv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "sim-" + h.operator}}
	for _, x := range h.mutating {
		m.Webhooks = append(m.Webhooks, admissionv1.MutatingWebhook{Name: x.name, ClientConfig: client(x.path), Rules: rules(x),
			FailurePolicy: &fail, SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
			ObjectSelector: x.objectSelector, NamespaceSelector: x.namespaceSelector})
	}
	v := &admissionv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "sim-" + h.operator}}
	for _, x := range h.validating {
		v.Webhooks = append(v.Webhooks, admissionv1.ValidatingWebhook{Name: x.name, ClientConfig: client(x.path), Rules: rules(x),
			FailurePolicy: &fail, SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
			ObjectSelector: x.objectSelector, NamespaceSelector: x.namespaceSelector})
	}
	return m, v
}

// withConversion points the CRDs Kueue converts at its /convert endpoint.
func withConversion(crds []*unstructured.Unstructured, port int, caBundle []byte) []*unstructured.Unstructured {
	url := fmt.Sprintf("https://127.0.0.1:%d/convert", port)
	out := make([]*unstructured.Unstructured, len(crds))
	for i, crd := range crds {
		out[i] = crd
		for _, r := range kueueConverted {
			if crd.GetName() == r+".kueue.x-k8s.io" {
				c := crd.DeepCopy()
				unstructured.SetNestedMap(c.Object, map[string]any{
					"strategy": "Webhook",
					"webhook": map[string]any{
						"clientConfig":             map[string]any{"url": url, "caBundle": base64.StdEncoding.EncodeToString(caBundle)},
						"conversionReviewVersions": []any{"v1"},
					},
				}, "spec", "conversion")
				out[i] = c
			}
		}
	}
	return out
}

// waitServing waits until a webhook server at 127.0.0.1:port completes a
// TLS handshake with the certificate the API server will check.
func waitServing(ctx context.Context, cp *ControlPlane, name string, port int, certs *webhookCerts, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	cfg := &tls.Config{RootCAs: certs.pool(), ServerName: "127.0.0.1"}
	for {
		d := &tls.Dialer{Config: cfg, NetDialer: &net.Dialer{Timeout: time.Second}}
		conn, err := d.DialContext(ctx, "tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			conn.Close()
			return nil
		}
		if xerr := cp.Exited(); xerr != nil {
			return xerr
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s serves no webhooks on 127.0.0.1:%d after %v: %v\n%s", name, port, timeout, err, cp.LogTail(name, 3000))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
