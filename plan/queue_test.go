package plan

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/llmrender/llmrender/pipeline"
	"github.com/llmrender/llmrender/renderer"
	"github.com/llmrender/llmrender/values"
)

// planOf renders the built-in chart with values files and --set flags and
// returns the plan in its three forms.
func planOf(t *testing.T, files []string, set ...string) (text, markdown, jsonText string) {
	t.Helper()
	c, err := pipeline.BuiltinChart()
	if err != nil {
		t.Fatal(err)
	}
	res, err := pipeline.Render(pipeline.Request{Chart: c, Sources: values.Sources{Files: files, Set: set},
		Options: renderer.Options{ReleaseName: "llm", Namespace: "ml"}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := Build(res, "llm", "ml")
	if err != nil {
		t.Fatal(err)
	}
	var tb, mb bytes.Buffer
	Text(&tb, p)
	Markdown(&mb, p)
	data, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	return tb.String(), mb.String(), string(data)
}

// A reviewer sees which Kueue queue admits the workload, and whether the
// release creates it, in every form of the plan.
func TestPlanSaysTheQueue(t *testing.T) {
	example := []string{"../examples/modes/s1-gke-h100-llama3-finetune-jobset.yaml"}
	text, md, js := planOf(t, example)
	for form, out := range map[string]string{"text": text, "markdown": md} {
		for _, want := range []string{"Kueue LocalQueue ml-team", "created by this release", "ClusterQueue gpu-h100", "JobSet/llm"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s plan lacks %q:\n%s", form, want, out)
			}
		}
	}
	if !strings.Contains(js, `"queue":{"name":"ml-team","objects":["JobSet/llm"],"created":true,"clusterQueue":"gpu-h100"}`) {
		t.Errorf("JSON plan lacks the queue:\n%s", js)
	}
	// A queue the release does not create must exist already.
	text, md, js = planOf(t, example, "kueue.localQueue.create=false", "kueue.priorityClass=high")
	for form, out := range map[string]string{"text": text, "markdown": md} {
		for _, want := range []string{"Kueue LocalQueue ml-team", "not created by this release: it must exist in namespace ml", "priority class high"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s plan, existing queue, lacks %q:\n%s", form, want, out)
			}
		}
	}
	if !strings.Contains(js, `"queue":{"name":"ml-team","objects":["JobSet/llm"],"created":false,"priorityClass":"high"}`) {
		t.Errorf("JSON plan lacks the existing queue:\n%s", js)
	}
	// No queue, no line.
	if text, _, js := planOf(t, []string{"../examples/s1-gke-h100-llama3-finetune-multinode.yaml"}); strings.Contains(text, "Queue:") || strings.Contains(js, `"queue"`) {
		t.Errorf("a plan without Kueue names a queue:\n%s\n%s", text, js)
	}
}

// The plan says the fabric whenever the accelerator pods carry one: on one
// node too, when the values name it.
func TestPlanSaysTheFabricOfOneNode(t *testing.T) {
	text, md, js := planOf(t, []string{"../examples/fabric/eks-p5-efa-pytorchjob.yaml"},
		"workload.nodes=1", "accelerator.fabric=efa", "storage.storageClassName=gp3")
	for form, out := range map[string]string{"text": text, "markdown": md} {
		if !strings.Contains(out, "Fabric") || !strings.Contains(out, "efa, about 3200 Gbit/s per node") {
			t.Errorf("%s plan lacks the fabric:\n%s", form, out)
		}
	}
	if !strings.Contains(js, `"fabric":{"kind":"efa","native":"efa"`) {
		t.Errorf("JSON plan lacks the fabric:\n%s", js)
	}
	// One node without a fabric named: the pods carry none, nothing to say.
	text, _, js = planOf(t, []string{"../examples/fabric/eks-p5-efa-pytorchjob.yaml"}, "workload.nodes=1", "storage.storageClassName=gp3")
	if strings.Contains(text, "Fabric:") || strings.Contains(js, `"fabric"`) {
		t.Errorf("a one-node plan without a fabric names one:\n%s", text)
	}
}

// Prefill and decode servers across nodes: the plan names each server
// object's pods, and says every pod of a server is an endpoint.
func TestPlanSaysPrefillAndDecodeAcrossNodes(t *testing.T) {
	text, md, _ := planOf(t, []string{"../examples/serving/serve-gke-h200-deepseek-r1-wide-ep.yaml"})
	for form, out := range map[string]string{"text": text, "markdown": md} {
		for _, want := range []string{
			"(1 prefill + 1 decode) servers x (2 node(s) x 8 nvidia.com/gpu) = 32 device(s); data-parallel attention on 16 ranks",
			"LeaderWorkerSet/llm-decode spec.leaderWorkerTemplate.workerTemplate.spec: 1 pod(s) x 8 nvidia.com/gpu",
			"LeaderWorkerSet/llm-prefill spec.leaderWorkerTemplate.leaderTemplate.spec: 1 pod(s) x 8 nvidia.com/gpu",
			"every pod of a server answers for its own node's 8 data-parallel ranks",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("%s plan lacks %q:\n%s", form, want, out)
			}
		}
	}
	// Decode servers of more nodes than prefill servers: each role's size,
	// and the world a decode server's.
	text, md, js := planOf(t, []string{"../examples/serving/serve-gke-h200-deepseek-r1-wide-ep.yaml"}, "serving.disaggregation.decode.nodes=4")
	for form, out := range map[string]string{"text": text, "markdown": md} {
		for _, want := range []string{
			"1 prefill server x (2 node(s) x 8 nvidia.com/gpu) + 1 decode server x (4 node(s) x 8 nvidia.com/gpu) = 48 device(s); data-parallel attention on 16 ranks a prefill server and 32 a decode server",
			"Peak: 6 accelerator pod(s) at once for 1 prefill server of 2 nodes and 1 decode server of 4 nodes.",
			"a prefill server's (the fewer nodes: each of its ranks holds the most)",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("%s plan of roles of their own sizes lacks %q:\n%s", form, want, out)
			}
		}
	}
	for _, want := range []string{`"nodesPerServer":4`, `"prefillNodesPerServer":2`, `"prefillDataParallel":16`, `"dataParallel":32`, `"worldSize":32`} {
		if !strings.Contains(js, want) {
			t.Errorf("JSON plan of roles of their own sizes lacks %s:\n%s", want, js)
		}
	}
	// One object with pods: its paths alone, as before.
	if text, _, _ := planOf(t, []string{"../examples/serving/serve-gke-h200-llama31-70b-instruct-lws.yaml"}); strings.Contains(text, "LeaderWorkerSet/llm spec.") {
		t.Errorf("a step of one server object names it before each path:\n%s", text)
	}
}

// The peak counts what an autoscaler may start, not the servers the
// object starts with; what waits for a step before them is the object's.
func TestPeakCountsTheAutoscalersMost(t *testing.T) {
	for _, c := range []struct {
		set  []string
		want string
	}{
		{[]string{"serving.autoscaling.kind=hpa", "serving.autoscaling.maxReplicas=4"}, "Peak: 4 accelerator pod(s) at once for 4 servers of 1 node."},
		{[]string{"serving.replicas=2"}, "Peak: 2 accelerator pod(s) at once for 2 servers of 1 node."},
	} {
		set := append([]string{"orchestration.mode=serve", "model.name=tinyllama-1.1b", "storage.storageClassName=standard-rwx"}, c.set...)
		text, _, js := planOf(t, nil, set...)
		if !strings.Contains(text, c.want) {
			t.Errorf("%v: plan lacks %q:\n%s", c.set, c.want, text)
		}
		if want := strings.Fields(c.want)[1]; !strings.Contains(js, `"peakAcceleratorPods":`+want) {
			t.Errorf("%v: JSON plan's peak is not %s:\n%s", c.set, want, js)
		}
	}
}
