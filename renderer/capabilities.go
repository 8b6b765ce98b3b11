package renderer

import (
	"fmt"
	"strings"

	"github.com/llmrender/llmrender/internal/lazy"
	"github.com/llmrender/llmrender/internal/redact"
)

// DefaultKubeVersion is what .Capabilities.KubeVersion reports without
// --kube-version. (helm built without release ldflags reports v1.20.0; we
// target a current cluster instead.)
const DefaultKubeVersion = "v1.36.0"

// defaultAPIVersions is the list helm v3.22 reports without a cluster.
var defaultAPIVersions = []string{
	"v1",
	"admissionregistration.k8s.io/v1", "admissionregistration.k8s.io/v1alpha1", "admissionregistration.k8s.io/v1beta1",
	"internal.apiserver.k8s.io/v1alpha1",
	"apps/v1", "apps/v1beta1", "apps/v1beta2",
	"authentication.k8s.io/v1", "authentication.k8s.io/v1alpha1", "authentication.k8s.io/v1beta1",
	"authorization.k8s.io/v1", "authorization.k8s.io/v1beta1",
	"autoscaling/v1", "autoscaling/v2",
	"batch/v1", "batch/v1beta1",
	"certificates.k8s.io/v1", "certificates.k8s.io/v1beta1", "certificates.k8s.io/v1alpha1",
	"coordination.k8s.io/v1alpha2", "coordination.k8s.io/v1beta1", "coordination.k8s.io/v1",
	"discovery.k8s.io/v1", "discovery.k8s.io/v1beta1",
	"events.k8s.io/v1", "events.k8s.io/v1beta1",
	"extensions/v1beta1",
	"flowcontrol.apiserver.k8s.io/v1", "flowcontrol.apiserver.k8s.io/v1beta1", "flowcontrol.apiserver.k8s.io/v1beta2", "flowcontrol.apiserver.k8s.io/v1beta3",
	"lifecycle.k8s.io/v1alpha1",
	"networking.k8s.io/v1", "networking.k8s.io/v1beta1",
	"node.k8s.io/v1", "node.k8s.io/v1alpha1", "node.k8s.io/v1beta1",
	"policy/v1", "policy/v1beta1",
	"rbac.authorization.k8s.io/v1", "rbac.authorization.k8s.io/v1beta1", "rbac.authorization.k8s.io/v1alpha1",
	"resource.k8s.io/v1", "resource.k8s.io/v1beta2", "resource.k8s.io/v1beta1", "resource.k8s.io/v1alpha3",
	"scheduling.k8s.io/v1alpha3", "scheduling.k8s.io/v1beta1", "scheduling.k8s.io/v1",
	"storage.k8s.io/v1beta1", "storage.k8s.io/v1", "storage.k8s.io/v1alpha1",
	"storagemigration.k8s.io/v1", "storagemigration.k8s.io/v1beta1",
	"apiextensions.k8s.io/v1beta1", "apiextensions.k8s.io/v1",
}

// Capabilities is .Capabilities, shaped like Helm's.
type Capabilities struct {
	KubeVersion KubeVersion
	APIVersions VersionSet
	HelmVersion HelmVersion
}

// KubeVersion is .Capabilities.KubeVersion.
type KubeVersion struct {
	Version string
	Major   string
	Minor   string
}

// String and GitVersion have pointer receivers as in Helm, so that printing
// the struct itself looks the same as there.
func (kv *KubeVersion) String() string     { return kv.Version }
func (kv *KubeVersion) GitVersion() string { return kv.Version }

// VersionSet is .Capabilities.APIVersions.
type VersionSet []string

// Has reports whether an API version (or group/version/kind) is available.
func (v VersionSet) Has(apiVersion string) bool {
	for _, x := range v {
		if x == apiVersion {
			return true
		}
	}
	return false
}

// HelmVersion is .Capabilities.HelmVersion: the Helm release whose template
// behaviour llmrender follows.
type HelmVersion struct {
	Version      string
	GitCommit    string
	GitTreeState string
	GoVersion    string
}

var kubeVersionRE = lazy.Regexp(`^\s*v?([0-9]+(?:\.[0-9]+){1,2})(?:[-+].*)?\s*$`)

// ParseKubeVersion reads "1.30", "v1.30.2" or "1.30.2-gke.1" as Helm does.
func ParseKubeVersion(s string) (KubeVersion, error) {
	m := kubeVersionRE().FindStringSubmatch(s)
	if m == nil {
		return KubeVersion{}, fmt.Errorf("invalid kube version %s: expected MAJOR.MINOR[.PATCH], e.g. 1.30.0", redact.Quote(s))
	}
	parts := strings.Split(m[1], ".")
	for i, p := range parts {
		parts[i] = strings.TrimLeft(p, "0")
		if parts[i] == "" {
			parts[i] = "0"
		}
	}
	return KubeVersion{Version: "v" + strings.Join(parts, "."), Major: parts[0], Minor: parts[1]}, nil
}

func newCapabilities(kubeVersion string, extraAPIVersions []string) (*Capabilities, error) {
	if kubeVersion == "" {
		kubeVersion = DefaultKubeVersion
	}
	kv, err := ParseKubeVersion(kubeVersion)
	if err != nil {
		return nil, err
	}
	apis := make(VersionSet, 0, len(defaultAPIVersions)+len(extraAPIVersions))
	apis = append(apis, defaultAPIVersions...)
	apis = append(apis, extraAPIVersions...)
	return &Capabilities{
		KubeVersion: kv,
		APIVersions: apis,
		HelmVersion: HelmVersion{Version: "v3.22"},
	}, nil
}

// String prints the capabilities as fmt prints the struct itself, which is
// what {{ .Capabilities }} shows in Helm. Inside a list or map fmt would
// print the pointer as its address instead, which differs between runs.
func (c *Capabilities) String() string { return fmt.Sprint(*c) }
