package promeval

import (
	"errors"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/prometheus/prometheus/promql/parser"
)

// textFormat is the Content-Type client_golang serves to a Prometheus
// scraper (text format 0.0.4).
const textFormat = "text/plain; version=0.0.4; charset=utf-8"

// t0 is an arbitrary fixed start: no test reads the wall clock.
var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// scrapeInterval is what a PodMonitor without an interval gets: the
// Prometheus CRD defaults spec.scrapeInterval to 30s (prometheus-operator
// v0.90.1 example/prometheus-operator-crd-full/
// monitoring.coreos.com_prometheuses.yaml:9047-9048), which the operator
// writes as the global scrape_interval (pkg/prometheus/promcfg.go:2907).
const scrapeInterval = 30 * time.Second

func newDB(t *testing.T) *DB {
	t.Helper()
	db, err := New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Error(err)
		}
	})
	return db
}

func vllmPod(namespace, pod string) Target {
	return PodMonitorTarget(namespace, "vllm", pod, "vllm", "http", "10.0.0.1", 8000)
}

func waiting(n int) []byte {
	return fmt.Appendf(nil, `# HELP vllm:num_requests_waiting Number of requests waiting to be processed.
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{model_name="m",engine="0"} %d
`, n)
}

func add(t *testing.T, db *DB, body []byte, at time.Time, target Target) {
	t.Helper()
	if err := db.Add(body, textFormat, at, target); err != nil {
		t.Fatal(err)
	}
}

// single evaluates q at at and requires a single value.
func single(t *testing.T, db *DB, q string, at time.Time) float64 {
	t.Helper()
	r, err := db.Query(q, at)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	v, ok := r.Scalar()
	if !ok {
		t.Fatalf("%s at %s: want one value, got %s", q, at.Format(time.TimeOnly), r)
	}
	return v
}

func TestPodMonitorLabelsAndNamespaceSum(t *testing.T) {
	db := newDB(t)
	add(t, db, waiting(3), t0, vllmPod("a", "p1"))
	add(t, db, waiting(4), t0, vllmPod("a", "p2"))
	add(t, db, waiting(5), t0, vllmPod("b", "p3"))
	at := t0.Add(10 * time.Second)

	if got := single(t, db, `sum(vllm:num_requests_waiting{namespace="a",model_name="m"})`, at); got != 7 {
		t.Errorf("sum over namespace a = %g, want 7", got)
	}

	r, err := db.Query(`vllm:num_requests_waiting{pod="p1"}`, at)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"__name__":   "vllm:num_requests_waiting",
		"model_name": "m",
		"engine":     "0",
		"namespace":  "a",
		"pod":        "p1",
		"container":  "vllm",
		"endpoint":   "http",
		"job":        "a/vllm",
		"instance":   "10.0.0.1:8000",
	}
	if len(r.Vector) != 1 || !maps.Equal(r.Vector[0].Labels, want) {
		t.Errorf("got %s, want one series labelled %v", r, want)
	}
}

func TestWakeQuery(t *testing.T) {
	const (
		queue   = `(sum(inference_extension_flow_control_queue_size{namespace="a",inference_pool="llm"}) or vector(0))`
		waiters = `(sum(vllm:num_requests_waiting{namespace="a",model_name="m"}) or vector(0))`
		wake    = queue + " + " + waiters
	)
	db := newDB(t)
	add(t, db, waiting(3), t0, vllmPod("a", "p1"))
	add(t, db, waiting(4), t0, vllmPod("a", "p2"))
	at := t0.Add(10 * time.Second)

	// The picker's queue metric was never scraped: the "or vector(0)"
	// keeps the sum defined.
	if got := single(t, db, wake, at); got != 7 {
		t.Errorf("wake = %g, want 7", got)
	}
	if got := single(t, db, "("+wake+") > bool 0", at); got != 1 {
		t.Errorf("wake > bool 0 = %g, want 1", got)
	}

	// Idle engines and an empty queue: the bool form is 0, not empty.
	next := t0.Add(scrapeInterval)
	add(t, db, waiting(0), next, vllmPod("a", "p1"))
	add(t, db, waiting(0), next, vllmPod("a", "p2"))
	at = next.Add(10 * time.Second)
	if got := single(t, db, wake, at); got != 0 {
		t.Errorf("idle wake = %g, want 0", got)
	}
	if got := single(t, db, "("+wake+") > bool 0", at); got != 0 {
		t.Errorf("idle wake > bool 0 = %g, want 0", got)
	}

	// A request queued in the picker alone wakes the pool.
	picker := PodMonitorTarget("a", "epp", "epp-0", "epp", "metrics", "10.0.0.9", 9090)
	queued := []byte(`# TYPE inference_extension_flow_control_queue_size gauge
inference_extension_flow_control_queue_size{inference_pool="llm",model_name="m",priority="0"} 2
`)
	add(t, db, queued, next, picker)
	if got := single(t, db, "("+wake+") > bool 0", at); got != 1 {
		t.Errorf("queued wake > bool 0 = %g, want 1", got)
	}
}

func TestKeepAliveIncrease(t *testing.T) {
	const keepAlive = `sum(increase(vllm:generation_tokens_total{namespace="a",model_name="m"}[10m])) > bool 0`
	db := newDB(t)
	pod := vllmPod("a", "p1")

	// The counter grows by 50 tokens per scrape for 5 minutes, then stays
	// put; it is scraped every 30 s throughout, as a scraper would.
	lastIncrease := t0.Add(5 * time.Minute)
	end := lastIncrease.Add(11 * time.Minute)
	tokens := 0
	for at := t0; !at.After(end); at = at.Add(scrapeInterval) {
		if at.After(t0) && !at.After(lastIncrease) {
			tokens += 50
		}
		body := fmt.Appendf(nil, `# TYPE vllm:generation_tokens_total counter
vllm:generation_tokens_total{model_name="m",engine="0"} %d
`, tokens)
		add(t, db, body, at, pod)
	}

	for _, c := range []struct {
		after time.Duration // since the last increase
		want  float64
	}{
		{-2 * time.Minute, 1}, // while it grows
		{0, 1},
		{9 * time.Minute, 1}, // the last increase is still inside the 10m window
		{11 * time.Minute, 0},
	} {
		if got := single(t, db, keepAlive, lastIncrease.Add(c.after)); got != c.want {
			t.Errorf("keep-alive %v after the last increase = %g, want %g", c.after, got, c.want)
		}
	}
}

func TestStaleness(t *testing.T) {
	db := newDB(t)
	pod := vllmPod("a", "p1")
	add(t, db, []byte("x 1\ny 2\n"), t0, pod)

	// A series the next scrape no longer exposes is gone at once, not
	// after the 5m lookback.
	next := t0.Add(scrapeInterval)
	add(t, db, []byte("x 1\n"), next, pod)
	if r, err := db.Query("y", next.Add(time.Second)); err != nil || len(r.Vector) != 0 {
		t.Errorf("y after it vanished: %s, %v; want an empty vector", r, err)
	}

	// So is every series of a target that disappears, e.g. a deleted pod;
	// then a sum over no series is empty, not 0.
	if err := db.TargetGone(pod, next.Add(scrapeInterval)); err != nil {
		t.Fatal(err)
	}
	r, err := db.Query("sum(x) > bool 0", next.Add(scrapeInterval+time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := r.Scalar(); ok {
		t.Errorf("sum(x) > bool 0 after the target went: %s, want an empty vector", r)
	}
}

func TestExportedLabelOnConflict(t *testing.T) {
	db := newDB(t)
	add(t, db, []byte(`foo{namespace="inner",exported_job="kept",job="j"} 1`+"\n"), t0, vllmPod("a", "p1"))

	r, err := db.Query("foo", t0)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Vector) != 1 {
		t.Fatalf("got %s, want one series", r)
	}
	got := r.Vector[0].Labels
	for name, want := range map[string]string{
		"namespace":          "a",
		"exported_namespace": "inner",
		"job":                "a/vllm",
		// exported_job is taken by a scraped label, so the prefix repeats.
		"exported_job":          "kept",
		"exported_exported_job": "j",
	} {
		if got[name] != want {
			t.Errorf("label %s = %q, want %q (series %v)", name, got[name], want, got)
		}
	}
}

func TestOpenMetricsAndClassicHistogram(t *testing.T) {
	db := newDB(t)
	picker := PodMonitorTarget("a", "epp", "epp-0", "epp", "metrics", "10.0.0.9", 9090)
	body := []byte(`# TYPE requests counter
requests_total{pool="llm"} 5
# TYPE latency_seconds histogram
latency_seconds_bucket{le="0.1"} 1
latency_seconds_bucket{le="1.0"} 3
latency_seconds_bucket{le="+Inf"} 4
latency_seconds_sum 2.5
latency_seconds_count 4
# EOF
`)
	if err := db.Add(body, "application/openmetrics-text; version=1.0.0; charset=utf-8", t0, picker); err != nil {
		t.Fatal(err)
	}
	if got := single(t, db, `requests_total{namespace="a",pool="llm"}`, t0); got != 5 {
		t.Errorf("requests_total = %g, want 5", got)
	}
	if got := single(t, db, `sum by (le) (latency_seconds_bucket{le="1.0"})`, t0); got != 3 {
		t.Errorf("le=1.0 bucket = %g, want 3", got)
	}

	// OpenMetrics requires the closing "# EOF": a failed scrape is an
	// error, and marks the target's series stale as Prometheus does.
	next := t0.Add(scrapeInterval)
	if err := db.Add(body[:len(body)-len("# EOF\n")], "application/openmetrics-text", next, picker); err == nil {
		t.Error("an OpenMetrics body without # EOF was accepted")
	}
	if r, err := db.Query("requests_total", next.Add(time.Second)); err != nil || len(r.Vector) != 0 {
		t.Errorf("requests_total after a failed scrape: %s, %v; want an empty vector", r, err)
	}
}

func TestInvalidQuery(t *testing.T) {
	db := newDB(t)
	_, err := db.Query(`sum(vllm:num_requests_waiting{namespace="a"}`, t0)
	var parseErrs parser.ParseErrors
	if !errors.As(err, &parseErrs) {
		t.Errorf("got %v, want a PromQL parse error", err)
	}
}
