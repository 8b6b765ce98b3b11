// Package promeval evaluates PromQL with Prometheus's own engine over series
// ingested the way a Prometheus server scrapes them, so that tests can prove
// the queries the project renders (KEDA Prometheus triggers) against real
// expositions, labelled as a Prometheus Operator PodMonitor labels them.
//
// Upstream facts cited below refer to github.com/prometheus/prometheus
// v0.314.0 (Prometheus 3.14) unless said otherwise.
package promeval

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"
	"github.com/prometheus/prometheus/model/timestamp"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"
)

// The engine settings are Prometheus's command-line defaults
// (cmd/prometheus/main.go: --query.lookback-delta=5m, --query.timeout=2m,
// --query.max-samples=50000000; subqueries without a step use the global
// evaluation_interval, 1m by default).
const (
	lookbackDelta = 5 * time.Minute
	queryTimeout  = 2 * time.Minute
	maxSamples    = 50_000_000
	subqueryStep  = time.Minute
)

// DB is a Prometheus TSDB in a temporary directory plus a PromQL engine
// over it. It is safe for concurrent use.
type DB struct {
	dir    string
	tsdb   *tsdb.DB
	engine *promql.Engine

	mu sync.Mutex
	// scraped holds, per target (keyed by its label set), the series of
	// its last successful scrape. Prometheus keeps the same in its scrape
	// cache to write a staleness marker for every series that a scrape no
	// longer exposes (scrape/scrape.go, scrapeCache.forEachStale).
	scraped map[string]map[string]labels.Labels
}

// New opens an empty DB. Close it when done.
func New() (*DB, error) {
	dir, err := os.MkdirTemp("", "promeval-")
	if err != nil {
		return nil, err
	}
	opts := tsdb.DefaultOptions()
	// No write-ahead log: the data lives only as long as the test.
	opts.WALSegmentSize = -1
	db, err := tsdb.Open(dir, nil, nil, opts, nil)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	// A test's timestamps need not follow the wall clock; keep the head
	// from being compacted into blocks under it.
	db.DisableCompactions()

	engine := promql.NewEngine(promql.EngineOpts{
		MaxSamples:    maxSamples,
		Timeout:       queryTimeout,
		LookbackDelta: lookbackDelta,
		NoStepSubqueryIntervalFn: func(int64) int64 {
			return subqueryStep.Milliseconds()
		},
		// Always on in a Prometheus server since v2.33 (cmd/prometheus/main.go).
		EnableAtModifier:     true,
		EnableNegativeOffset: true,
	})
	return &DB{
		dir:     dir,
		tsdb:    db,
		engine:  engine,
		scraped: map[string]map[string]labels.Labels{},
	}, nil
}

// Close releases the TSDB and removes its directory.
func (d *DB) Close() error {
	return errors.Join(d.tsdb.Close(), os.RemoveAll(d.dir))
}

// Add ingests one scrape of target taken at time at, as a Prometheus server
// with the defaults a PodMonitor leaves in place (honor_labels: false,
// honor_timestamps: true, no native histograms) would:
//
//   - the body is parsed by textparse for contentType: OpenMetrics for
//     "application/openmetrics-text", the protobuf format for
//     "application/vnd.google.protobuf", otherwise (also when empty or not
//     understood) the text format 0.0.4, like fallback_scrape_protocol
//     PrometheusText0.0.4;
//   - comments, HELP, TYPE and UNIT lines are skipped; counters, gauges and
//     classic histograms and summaries (their _bucket/_sum/_count and
//     quantile lines) become plain float series;
//   - target labels are attached; a scraped label that clashes with one is
//     kept as exported_<name> (see withTargetLabels);
//   - samples get timestamp at, unless the exposition gives one;
//   - series that the target's previous scrape exposed and this one does
//     not get a staleness marker at time at, so that PromQL stops seeing
//     them at once rather than after the 5m lookback.
//
// A body that does not parse fails the scrape: nothing of it is stored, and,
// as Prometheus does for a failed scrape (scrape/scrape.go:1438-1451), all
// the target's series are marked stale; the parse error is returned.
//
// Unlike Prometheus, which counts and skips samples the TSDB rejects (out of
// order, duplicate, too old), Add fails on them: in a test they are a bug.
// As in Prometheus, a sample more than an hour (half the 2h head chunk
// range) older than the newest sample stored is rejected as out of bounds.
func (d *DB) Add(exposition []byte, contentType string, at time.Time, target Target) error {
	d.mu.Lock()
	defer d.mu.Unlock()

	ctx := context.Background()
	t := timestamp.FromTime(at)
	targetLabels := target.labels()
	key := targetLabels.String()

	app := d.tsdb.AppenderV2(ctx)
	current, scrapeErr := appendScrape(app, exposition, contentType, t, targetLabels)
	if scrapeErr != nil {
		_ = app.Rollback()
		app = d.tsdb.AppenderV2(ctx)
		current = map[string]labels.Labels{}
	}
	if err := appendStaleMarkers(app, d.scraped[key], current, t); err != nil {
		_ = app.Rollback()
		return errors.Join(scrapeErr, err)
	}
	if err := app.Commit(); err != nil {
		return errors.Join(scrapeErr, err)
	}
	d.scraped[key] = current
	return scrapeErr
}

// TargetGone marks stale every series of target's last scrape, as
// Prometheus does once a target disappears from service discovery (e.g. its
// pod was deleted). Prometheus stamps those markers with the time its next
// scrape would have been (scrape/scrape.go:1473-1492, endOfRunStaleness), so
// pass the last scrape's time plus the scrape interval.
func (d *DB) TargetGone(target Target, at time.Time) error {
	d.mu.Lock()
	defer d.mu.Unlock()

	key := target.labels().String()
	app := d.tsdb.AppenderV2(context.Background())
	if err := appendStaleMarkers(app, d.scraped[key], nil, timestamp.FromTime(at)); err != nil {
		_ = app.Rollback()
		return err
	}
	if err := app.Commit(); err != nil {
		return err
	}
	delete(d.scraped, key)
	return nil
}

// appendScrape appends the samples of one scrape body and returns the
// series whose staleness is to be tracked.
func appendScrape(app storage.AppenderV2, body []byte, contentType string, t int64, target labels.Labels) (map[string]labels.Labels, error) {
	p, err := textparse.New(body, contentType, nil, textparse.ParserOptions{
		// scrape_native_histograms defaults to false.
		IgnoreNativeHistograms: true,
		FallbackContentType:    "text/plain",
	})
	if p == nil {
		return nil, err
	}
	// A non-nil err with a parser only says the fallback was used.

	current := map[string]labels.Labels{}
	for {
		entry, err := p.Next()
		if errors.Is(err, io.EOF) {
			return current, nil
		}
		if err != nil {
			return nil, fmt.Errorf("parsing scrape: %w", err)
		}
		switch entry {
		case textparse.EntryType, textparse.EntryHelp, textparse.EntryUnit, textparse.EntryComment:
			continue
		case textparse.EntryHistogram:
			// Not produced with IgnoreNativeHistograms; refuse rather than
			// store something the query side does not expect.
			return nil, errors.New("parsing scrape: unexpected native histogram")
		}

		_, parsedTime, v := p.Series()
		var scraped labels.Labels
		p.Labels(&scraped)
		lset := withTargetLabels(scraped, target)
		if !lset.Has(model.MetricNameLabel) {
			return nil, fmt.Errorf("parsing scrape: series %s has no metric name", lset)
		}

		sampleTime := t
		if parsedTime != nil {
			// honor_timestamps defaults to true.
			sampleTime = *parsedTime
		}
		if _, err := app.Append(0, lset, 0, sampleTime, v, nil, nil, storage.AOptions{}); err != nil {
			return nil, fmt.Errorf("appending %s: %w", lset, err)
		}
		// Series with their own timestamps are not tracked for staleness
		// (track_timestamps_staleness defaults to false;
		// scrape/scrape_append_v2.go:373).
		if parsedTime == nil {
			current[lset.String()] = lset
		}
	}
}

// withTargetLabels attaches the target's labels to a scraped series as
// Prometheus does with honor_labels: false (scrape/scrape.go:582-629,
// mutateSampleLabels and resolveConflictingExposedLabels): the target's
// value wins, and a clashing scraped label is kept under the name prefixed
// with "exported_" (repeatedly, until the name is free), shortest names
// first.
func withTargetLabels(scraped, target labels.Labels) labels.Labels {
	lb := labels.NewBuilder(scraped)
	var conflicts []labels.Label
	target.Range(func(l labels.Label) {
		if v := scraped.Get(l.Name); v != "" {
			conflicts = append(conflicts, labels.Label{Name: l.Name, Value: v})
		}
		lb.Set(l.Name, l.Value)
	})
	slices.SortStableFunc(conflicts, func(a, b labels.Label) int {
		return len(a.Name) - len(b.Name)
	})
	for _, l := range conflicts {
		name := l.Name
		for {
			name = model.ExportedLabelPrefix + name
			if lb.Get(name) == "" {
				lb.Set(name, l.Value)
				break
			}
		}
	}
	return lb.Labels()
}

// appendStaleMarkers writes a staleness marker (value.StaleNaN) at t for
// every series in previous that is not in current. As Prometheus does
// (scrape/scrape_append_v2.go, updateStaleMarkersV2), a marker that would
// be out of order or a duplicate is silently dropped.
func appendStaleMarkers(app storage.AppenderV2, previous, current map[string]labels.Labels, t int64) error {
	stale := math.Float64frombits(value.StaleNaN)
	for key, lset := range previous {
		if _, ok := current[key]; ok {
			continue
		}
		_, err := app.Append(0, lset, 0, t, stale, nil, nil, storage.AOptions{RejectOutOfOrder: true})
		if err != nil && !errors.Is(err, storage.ErrOutOfOrderSample) && !errors.Is(err, storage.ErrDuplicateSampleForTimestamp) {
			return fmt.Errorf("marking %s stale: %w", lset, err)
		}
	}
	return nil
}

// Result is the value of an instant query.
type Result struct {
	// Kind is "scalar" or "vector".
	Kind string
	// Vector holds a vector result's samples, sorted by their labels.
	Vector []Sample
	// Warnings and Infos are the annotations the engine returned, e.g.
	// "PromQL info: metric might not be a counter, name does not end in
	// _total/_sum/_count/_bucket", sorted.
	Warnings, Infos []string

	scalar float64
}

// Sample is one element of a vector result.
type Sample struct {
	Labels map[string]string
	Value  float64
}

// Scalar returns the value of a scalar result or of a vector result with
// exactly one element; ok is false otherwise (notably for an empty vector,
// which is what a selector matching no series yields).
func (r Result) Scalar() (v float64, ok bool) {
	switch {
	case r.Kind == "scalar":
		return r.scalar, true
	case r.Kind == "vector" && len(r.Vector) == 1:
		return r.Vector[0].Value, true
	}
	return 0, false
}

// String formats the result for test failure messages.
func (r Result) String() string {
	if r.Kind == "scalar" {
		return fmt.Sprintf("scalar %g", r.scalar)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "vector of %d", len(r.Vector))
	for _, s := range r.Vector {
		fmt.Fprintf(&b, "\n  %s => %g", labels.FromMap(s.Labels), s.Value)
	}
	return b.String()
}

// Query evaluates q as an instant query at time at, with the engine settings
// of a Prometheus server started with its defaults. An error from parsing or
// evaluating q is returned as the engine gives it. Results other than a
// scalar or a vector (a range vector or a string) are refused.
func (d *DB) Query(q string, at time.Time) (Result, error) {
	ctx := context.Background()
	qry, err := d.engine.NewInstantQuery(ctx, d.tsdb, promql.NewPrometheusQueryOpts(false, lookbackDelta), q, at)
	if err != nil {
		return Result{}, err
	}
	defer qry.Close()
	res := qry.Exec(ctx)
	if res.Err != nil {
		return Result{}, res.Err
	}

	var r Result
	r.Warnings, r.Infos = res.Warnings.AsStrings(q, 0, 0)
	slices.Sort(r.Warnings)
	slices.Sort(r.Infos)
	switch v := res.Value.(type) {
	case promql.Scalar:
		r.Kind = "scalar"
		r.scalar = v.V
	case promql.Vector:
		r.Kind = "vector"
		for _, s := range v {
			if s.H != nil {
				return Result{}, fmt.Errorf("query %q: sample %s is a native histogram", q, s.Metric)
			}
			r.Vector = append(r.Vector, Sample{Labels: s.Metric.Map(), Value: s.F})
		}
		slices.SortFunc(r.Vector, func(a, b Sample) int {
			return labels.Compare(labels.FromMap(a.Labels), labels.FromMap(b.Labels))
		})
	default:
		return Result{}, fmt.Errorf("query %q: got a %s, want a scalar or an instant vector", q, res.Value.Type())
	}
	return r, nil
}
