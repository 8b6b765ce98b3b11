package pipeline

import (
	"bytes"
	"errors"
	"fmt"
	"hash/fnv"
	"strings"
	"sync"
	"testing"

	"github.com/llmrender/llmrender/manifest"
	"github.com/llmrender/llmrender/renderer"
	"github.com/llmrender/llmrender/values"

	"github.com/llmrender/llmrender/internal/examples"
	"github.com/llmrender/llmrender/internal/testkit"
	"github.com/llmrender/llmrender/modes/matrix"
	"github.com/llmrender/llmrender/rules"
)

// sampled picks about one in n of the cases by their text: the same ones
// every run, spread over every dimension of the matrix (an index would
// follow the product's order and could skip a whole value of its
// innermost dimension).
func sampled(set string, n uint32) bool {
	h := fnv.New32a()
	h.Write([]byte(set))
	return h.Sum32()%n == 0
}

// computeContainers are the containers that run the model in each mode.
var computeContainers = map[string]bool{"main": true, "pytorch": true, "ray-worker": true, "worker": true, "node": true, "server": true}

// Every workload type x model x accelerator x mode either renders under
// --strict (a missing key is an error), with the accelerator requested by
// every compute container, or fails with a rule ID. Under --strict a render
// that succeeds read no missing key, so it is the render without it.
//
// Thousands of renders take minutes under the race detector: with -short
// (make unit's race run) the matrix is left to make unit's second run,
// without -race.
func TestMatrix(t *testing.T) {
	if testing.Short() {
		t.Skip("the whole matrix runs in make unit's run without -race")
	}
	c, err := BuiltinChart()
	if err != nil {
		t.Fatal(err)
	}
	catalog := c.Values["catalog"].(map[string]any)
	cases := matrix.Cases(catalog)
	// Loaded here, on the test's goroutine: checkChartAccepts stops the
	// test when it cannot load, which a worker's goroutine may not do.
	if _, err := checksChart(); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	rendered, refused := 0, map[string]int{}
	testkit.EachAtOnce(len(cases), func(i int) {
		mc := cases[i]
		set := mc.String()
		res, err := Render(Request{Chart: c, Sources: mc.Sources(), Options: renderer.Options{Strict: true}})
		var failed *rules.Failed
		switch {
		case errors.As(err, &failed):
			mu.Lock()
			defer mu.Unlock()
			for _, f := range failed.Findings {
				if f.Rule == "" || f.Message == "" {
					t.Errorf("%s: finding without rule or message: %v", set, f)
				}
				// The values rules refuse what cannot run; a manifest rule
				// that refuses the chart's own output means the chart and
				// the Go rules derived different facts from the values.
				if f.Object != nil {
					t.Errorf("%s: a manifest rule refuses the chart's own objects: %s", set, f)
				}
				refused[f.Rule]++
			}
			return
		case err != nil:
			t.Errorf("%s: not a rule error: %v", set, err)
			return
		}
		mu.Lock()
		rendered++
		mu.Unlock()
		if sampled(set, 3) {
			checkChartAccepts(t, set, mc.Sources())
		}
		acc := catalog["accelerators"].(map[string]any)[mc.Accelerator].(map[string]any)
		resource, _ := acc["resource"].(string)
		objs := decoded(t, res)
		checkDependsOn(t, set, objs)
		checkClaimSize(t, set, res, objs)
		checkFactsAgree(t, set, res, objs)
		for _, o := range res.Objects {
			got, err1 := manifest.EncodeObject(o)
			want, err2 := manifest.EncodeWithYAML(o)
			if err1 != nil || err2 != nil || !bytes.Equal(got, want) {
				t.Errorf("%s: %s is written differently than by yaml.v3 (%v, %v):\n%s\nyaml.v3:\n%s", set, o.ID(), err1, err2, got, want)
			}
		}
		found := 0
		for _, o := range objs {
			walkContainers(o.Doc, func(c map[string]any) {
				if !computeContainers[fmt.Sprint(c["name"])] {
					return
				}
				found++
				if resource == "" {
					return
				}
				limits, _ := c["resources"].(map[string]any)["limits"].(map[string]any)
				if limits[resource] == nil {
					t.Errorf("%s: %s/%v container %v does not request %s", set, o.Doc["kind"], o.Doc["metadata"].(map[string]any)["name"], c["name"], resource)
				}
			})
		}
		if found == 0 {
			t.Errorf("%s: no compute container rendered", set)
		}
	})
	t.Logf("%d combinations rendered, refusals by rule: %v", rendered, refused)
	if rendered < len(cases)/2 || refused["LR008"] == 0 {
		t.Errorf("only %d combinations rendered; the matrix proves little", rendered)
	}
}

// walkContainers calls fn for every container and init container in any
// pod template of doc.
func walkContainers(v any, fn func(map[string]any)) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if k == "containers" || k == "initContainers" {
				l, _ := e.([]any)
				for _, c := range l {
					if m, ok := c.(map[string]any); ok {
						fn(m)
					}
				}
				continue
			}
			walkContainers(e, fn)
		}
	case []any:
		for _, e := range x {
			walkContainers(e, fn)
		}
	}
}

// checkDependsOn requires every config.kubernetes.io/depends-on entry
// (group/namespaces/NS/Kind/name or group/Kind/name) to name an object of
// the same render.
func checkDependsOn(t *testing.T, set string, objs []rules.Object) {
	t.Helper()
	have := map[string]bool{}
	for _, o := range objs {
		have[fmt.Sprintf("%v/%v", o.Doc["kind"], o.Doc["metadata"].(map[string]any)["name"])] = true
	}
	for _, o := range objs {
		ann, _ := o.Doc["metadata"].(map[string]any)["annotations"].(map[string]any)
		deps, _ := ann["config.kubernetes.io/depends-on"].(string)
		if deps == "" {
			continue
		}
		for _, ref := range strings.Split(deps, ",") {
			parts := strings.Split(ref, "/")
			target := strings.Join(parts[len(parts)-2:], "/")
			if !have[target] {
				t.Errorf("%s: %v/%v depends on %s, which is not rendered", set, o.Doc["kind"], o.Doc["metadata"].(map[string]any)["name"], ref)
			}
		}
	}
}

// The built-in chart reads no value it does not have: the defaults and
// every example render under --strict (a missing key is an error) to the
// same objects as without it (the matrix renders under --strict in
// TestMatrix).
func TestStrictRendersTheSame(t *testing.T) {
	c, err := BuiltinChart()
	if err != nil {
		t.Fatal(err)
	}
	var sources []values.Sources
	paths, err := examples.Paths("..")
	if err != nil {
		t.Fatal(err)
	}
	sources = append(sources, values.Sources{})
	for _, ex := range paths {
		sources = append(sources, values.Sources{Files: []string{ex}})
	}
	rendered := 0
	for _, src := range sources {
		loose, err := Render(Request{Chart: c, Sources: src})
		if err != nil {
			continue // refused by a rule, with or without --strict
		}
		strict, err := Render(Request{Chart: c, Sources: src, Options: renderer.Options{Strict: true}})
		if err != nil {
			t.Errorf("%v: --strict: %v", src, err)
			continue
		}
		var a, b strings.Builder
		manifest.WriteStream(&a, loose.Objects)
		manifest.WriteStream(&b, strict.Objects)
		if a.String() != b.String() {
			t.Errorf("%v: --strict renders something else", src)
		}
		rendered++
	}
	if rendered < len(sources)/2 {
		t.Errorf("only %d of %d renders compared", rendered, len(sources))
	}
}
