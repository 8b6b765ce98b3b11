package promeval

import (
	"net"
	"strconv"
	"strings"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
)

// Target is a scrape target as Prometheus sees it after relabeling: the
// labels below are attached to every series scraped from it. An empty field
// means "no such label" (Prometheus drops empty labels from a relabeled
// target; labels.Builder.Set with "" deletes the label).
type Target struct {
	Namespace string
	Pod       string
	Container string
	Endpoint  string
	Job       string
	Instance  string
	// Extra holds any further target labels, e.g. podTargetLabels.
	// Names starting with "__" are ignored, as Prometheus never attaches
	// them to series (scrape/target.go, Target.LabelsRange).
	Extra map[string]string
}

// PodMonitorTarget returns the target labels that a Prometheus Operator
// PodMonitor endpoint gives to a pod's port. Source: prometheus-operator
// v0.90.1, pkg/prometheus/promcfg.go, generatePodMonitorConfig:
//
//   - promcfg.go:1488-1502: namespace <- __meta_kubernetes_namespace,
//     container <- __meta_kubernetes_pod_container_name,
//     pod <- __meta_kubernetes_pod_name;
//   - promcfg.go:1520-1523: job = "<podmonitor namespace>/<podmonitor name>"
//     (overridden by the pod's label named by spec.jobLabel when that is set,
//     promcfg.go:1524-1531: set Target.Job yourself in that case);
//   - promcfg.go:1533-1537: endpoint = the endpoint's `port` (the container
//     port name); nothing is set when the endpoint selects its port by
//     number (portNumber), so pass portName "" then;
//   - promcfg.go:1129-1136 and the sharding rule only write "__tmp_*" labels,
//     which never reach a series (prometheus v0.314.0 scrape/target.go:198-204,
//     Target.LabelsRange, skips every "__" label).
//
// The operator does not set instance: Prometheus defaults it to __address__
// (prometheus v0.314.0 scrape/target.go:690-691), which the Kubernetes pod
// discovery sets to podIP:containerPort (discovery/kubernetes/pod.go:424-427).
// The PodMonitor is assumed to live in the pod's namespace (the common case;
// job uses the PodMonitor's namespace, the namespace label the pod's).
func PodMonitorTarget(namespace, podMonitor, pod, container, portName, podIP string, port int) Target {
	return Target{
		Namespace: namespace,
		Pod:       pod,
		Container: container,
		Endpoint:  portName,
		Job:       namespace + "/" + podMonitor,
		Instance:  net.JoinHostPort(podIP, strconv.Itoa(port)),
	}
}

// labels returns the target's labels, sorted, without empty values.
func (t Target) labels() labels.Labels {
	b := labels.NewBuilder(labels.EmptyLabels())
	for name, value := range t.Extra {
		if !strings.HasPrefix(name, model.ReservedLabelPrefix) {
			b.Set(name, value)
		}
	}
	// The named fields win over Extra, being the ones the operator sets.
	for _, l := range []labels.Label{
		{Name: "namespace", Value: t.Namespace},
		{Name: "pod", Value: t.Pod},
		{Name: "container", Value: t.Container},
		{Name: "endpoint", Value: t.Endpoint},
		{Name: "job", Value: t.Job},
		{Name: model.InstanceLabel, Value: t.Instance},
	} {
		if l.Value != "" {
			b.Set(l.Name, l.Value)
		}
	}
	return b.Labels()
}
