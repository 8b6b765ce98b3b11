package pipeline

import (
	"errors"
	"strings"
	"testing"

	"github.com/llmrender/llmrender/internal/containers"
	"github.com/llmrender/llmrender/internal/examples"
	"github.com/llmrender/llmrender/modes/matrix"
	"github.com/llmrender/llmrender/rules"
	"github.com/llmrender/llmrender/values"
)

// global.imageRegistry reaches every image the chart renders: every
// container and init container of every example, and of every mode with
// every helper on (shell, TensorBoard, preprocessing, the fabric test, a
// wired fabric, an autoscaled server), keeping the repository path.
func TestImageRegistryReachesEveryImage(t *testing.T) {
	c, err := BuiltinChart()
	if err != nil {
		t.Fatal(err)
	}
	const mirror = "registry.local:5000"
	list, err := examples.List("..")
	if err != nil {
		t.Fatal(err)
	}
	var sources []values.Sources
	for _, ex := range list {
		sources = append(sources, values.Sources{Files: []string{ex.Path}})
	}
	for _, mode := range matrix.Modes {
		for _, profile := range []string{"h100-mega-80gb", "trn1-32xlarge", "cpu"} {
			set := "orchestration.mode=" + mode + ",accelerator.profile=" + profile + ",accelerator.devices=0,model.name=tinyllama-1.1b,workload.type=finetune,workload.script=./run.sh," +
				"storage.storageClassName=standard-rwx,shell.enabled=true,tensorboard.enabled=true,steps.preprocess.enabled=true"
			switch mode {
			case "serve":
				set += ",workload.type=inference,workload.script=,serving.autoscaling.kind=hpa,serving.autoscaling.maxReplicas=2"
			case "pod", "job":
			default:
				set += ",workload.nodes=2"
				if profile == "h100-mega-80gb" && mode != "rayjob" {
					set += ",steps.fabricTest.enabled=true"
				}
			}
			sources = append(sources, values.Sources{Set: []string{set}, SetString: []string{"steps.preprocess.command[0]=prepare.sh"}})
		}
	}
	images, rendered := 0, 0
	for _, src := range sources {
		plain, err := Render(Request{Chart: c, Sources: src})
		if err != nil {
			continue // a combination the rules refuse
		}
		src.Set = append(src.Set, "global.imageRegistry="+mirror)
		res, err := Render(Request{Chart: c, Sources: src})
		if err != nil {
			t.Fatalf("%v: %v", src, err)
		}
		want := map[string]bool{}
		for _, img := range imagesOf(t, plain) {
			want[rewritten(mirror, img)] = true
		}
		for _, img := range imagesOf(t, res) {
			images++
			if !strings.HasPrefix(img, mirror+"/") {
				t.Errorf("%v: image %s is not from %s", src, img, mirror)
			}
			if !want[img] {
				t.Errorf("%v: image %s is none of the plain render's images moved to %s", src, img, mirror)
			}
		}
		rendered++
	}
	t.Logf("%d renders, %d images", rendered, images)
	if rendered < len(list)+len(matrix.Modes) {
		t.Errorf("only %d renders", rendered)
	}
}

func imagesOf(t *testing.T, res *Result) []string {
	objs := decoded(t, res)
	var out []string
	for _, o := range objs {
		for _, c := range containers.Of(o.Doc) {
			out = append(out, c.Image())
		}
	}
	return out
}

// rewritten is an image's reference in a mirror, worked out by hand.
func rewritten(mirror, ref string) string {
	first, rest, ok := strings.Cut(ref, "/")
	switch {
	case !ok:
		return mirror + "/library/" + ref
	case strings.ContainsAny(first, ".:") || first == "localhost":
		return mirror + "/" + rest
	}
	return mirror + "/" + ref
}

// global.imageDigests: require refuses every example, naming each of its
// containers (none of the examples pins digests), and accepts a render
// whose every image names one.
func TestImageDigestsRequire(t *testing.T) {
	c, err := BuiltinChart()
	if err != nil {
		t.Fatal(err)
	}
	list, err := examples.List("..")
	if err != nil {
		t.Fatal(err)
	}
	for _, ex := range list {
		src := values.Sources{Files: []string{ex.Path}}
		plain, err := Render(Request{Chart: c, Sources: src})
		if err != nil {
			t.Fatal(err)
		}
		want := len(imagesOf(t, plain))
		src.Set = []string{"global.imageDigests=require"}
		_, err = Render(Request{Chart: c, Sources: src})
		var failed *rules.Failed
		if !errors.As(err, &failed) {
			t.Errorf("%s: rendered without digests (%v)", ex.Name, err)
			continue
		}
		named := 0
		for _, f := range failed.Findings {
			if f.Rule == "LR010" && strings.Contains(f.Message, "names no digest") {
				named++
			}
		}
		if named != want {
			t.Errorf("%s: %d of %d containers named", ex.Name, named, want)
		}
	}
	const digest = "@sha256:" + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	_, err = Render(Request{Chart: c, Sources: values.Sources{Set: []string{"global.imageDigests=require,download.enabled=false,workload.image=example.com/run:1" + digest}}})
	if err != nil {
		t.Errorf("every image pinned: %v", err)
	}
}
