package manifest

import (
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/llmrender/llmrender/internal/yamlnode"
)

// clusterScoped are the kinds that live outside namespaces: Kubernetes'
// own, and those of the operators llmrender targets (by API group).
var clusterScoped = map[string]map[string]bool{
	"":                             {"Namespace": true, "Node": true, "PersistentVolume": true, "ComponentStatus": true},
	"storage.k8s.io":               {"StorageClass": true, "CSIDriver": true, "CSINode": true, "VolumeAttachment": true, "VolumeAttributesClass": true},
	"rbac.authorization.k8s.io":    {"ClusterRole": true, "ClusterRoleBinding": true},
	"apiextensions.k8s.io":         {"CustomResourceDefinition": true},
	"scheduling.k8s.io":            {"PriorityClass": true},
	"node.k8s.io":                  {"RuntimeClass": true},
	"networking.k8s.io":            {"IngressClass": true, "IPAddress": true, "ServiceCIDR": true},
	"admissionregistration.k8s.io": {"ValidatingWebhookConfiguration": true, "MutatingWebhookConfiguration": true, "ValidatingAdmissionPolicy": true, "ValidatingAdmissionPolicyBinding": true, "MutatingAdmissionPolicy": true, "MutatingAdmissionPolicyBinding": true},
	"apiregistration.k8s.io":       {"APIService": true},
	"certificates.k8s.io":          {"CertificateSigningRequest": true, "ClusterTrustBundle": true},
	"flowcontrol.apiserver.k8s.io": {"FlowSchema": true, "PriorityLevelConfiguration": true},
	"resource.k8s.io":              {"DeviceClass": true, "ResourceSlice": true},
	"scheduling.volcano.sh":        {"Queue": true},
	"kueue.x-k8s.io":               {"ClusterQueue": true, "ResourceFlavor": true, "WorkloadPriorityClass": true, "Topology": true, "AdmissionCheck": true, "Cohort": true},
	"trainer.kubeflow.org":         {"ClusterTrainingRuntime": true},
}

// ClusterScoped tells whether a kind lives outside namespaces. A kind it
// does not know is taken to be namespaced, as most custom resources are.
func ClusterScoped(apiVersion, kind string) bool {
	group := ""
	if i := strings.Index(apiVersion, "/"); i >= 0 {
		group = apiVersion[:i]
	}
	return clusterScoped[group][kind]
}

// SetNamespaces writes namespace into metadata.namespace of every
// namespaced object that names none, so the set lands there whatever the
// apply tool's default namespace is.
func SetNamespaces(objs []*Object, namespace string) {
	for _, o := range objs {
		if o.Namespace != "" || ClusterScoped(o.APIVersion, o.Kind) {
			continue
		}
		meta := yamlnode.Map(o.Node, "metadata")
		if meta == nil {
			continue
		}
		yamlnode.Remove(meta, "namespace")
		// After the name, where people look for it.
		at := len(meta.Content)
		for i := 0; i+1 < len(meta.Content); i += 2 {
			if meta.Content[i].Value == "name" {
				at = i + 2
			}
		}
		entry := []*yaml.Node{yamlnode.Str("namespace"), yamlnode.Str(namespace)}
		meta.Content = append(meta.Content[:at], append(entry, meta.Content[at:]...)...)
		o.Namespace = namespace
	}
}
