package pipeline

import (
	"fmt"
	"strings"
	"testing"

	"github.com/llmrender/llmrender/internal/containers"
	"github.com/llmrender/llmrender/values"
)

// download.endpoint reaches every container that reads the hub: the
// download, the run, a server that downloads the weights itself, the
// shell; and no other.
func TestHubEndpointReachesWhatReadsTheHub(t *testing.T) {
	c, err := BuiltinChart()
	if err != nil {
		t.Fatal(err)
	}
	const mirror = "https://hf.internal.example.com"
	for _, src := range []values.Sources{
		{Set: []string{"download.endpoint=" + mirror + ",download.tokenSecret.name=hf"}},
		{Files: []string{"../examples/serving/serve-gke-h100-llama31-8b-instruct.yaml"}, Set: []string{"download.endpoint=" + mirror + ",download.enabled=false"}},
	} {
		res, err := Render(Request{Chart: c, Sources: src})
		if err != nil {
			t.Fatal(err)
		}
		objs := decoded(t, res)
		seen := map[string]bool{}
		for _, o := range objs {
			for _, ct := range containers.Of(o.Doc) {
				got := ""
				env, _ := ct.Spec["env"].([]any)
				for _, e := range env {
					if m, _ := e.(map[string]any); m["name"] == "HF_ENDPOINT" {
						got, _ = m["value"].(string)
					}
				}
				reads := ct.Name() == "download" || ct.Name() == "main" || ct.Name() == "server"
				if reads && got != mirror {
					t.Errorf("%v: container %s reads the hub, and its HF_ENDPOINT is %q", src, ct.Name(), got)
				}
				if !reads && got != "" && ct.Name() != "shell" {
					t.Errorf("%v: container %s has HF_ENDPOINT", src, ct.Name())
				}
				seen[ct.Name()] = true
			}
		}
		if !seen["main"] && !seen["server"] || len(src.Files) == 0 && !seen["download"] {
			t.Errorf("%v: the containers are %v, not the run and (by default) the download", src, seen)
		}
	}
}

// download.offline: nothing downloads (no download step, a server loads
// the claim's copy), and every container that reads the hub is told not
// to call out.
func TestOfflineCallsNothingOut(t *testing.T) {
	c, err := BuiltinChart()
	if err != nil {
		t.Fatal(err)
	}
	for _, src := range []values.Sources{
		{Set: []string{"download.offline=true,workload.type=finetune,workload.script=train.py"}},
		{Files: []string{"../examples/serving/serve-gke-h100-llama31-8b-instruct.yaml"}, Set: []string{"download.offline=true"}},
	} {
		res, err := Render(Request{Chart: c, Sources: src})
		if err != nil {
			t.Fatal(err)
		}
		runs := 0
		for _, o := range decoded(t, res) {
			for _, ct := range containers.Of(o.Doc) {
				env, _ := ct.Spec["env"].([]any)
				offline := false
				for _, e := range env {
					if m, _ := e.(map[string]any); m["name"] == "HF_HUB_OFFLINE" && m["value"] == "1" {
						offline = true
					}
				}
				switch ct.Name() {
				case "download":
					t.Errorf("%v: a download container runs", src)
				case "main", "server":
					runs++
					if !offline {
						t.Errorf("%v: container %s may call the hub", src, ct.Name())
					}
					if cmd := fmt.Sprint(ct.Spec["command"]); ct.Name() == "server" && !strings.Contains(cmd, "/data/models/llama-3.1-8b-instruct") {
						t.Errorf("%v: the server does not load the claim's copy: %s", src, cmd)
					}
				}
			}
		}
		if runs == 0 {
			t.Errorf("%v: no run or server container", src)
		}
	}
}
