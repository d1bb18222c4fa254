package telemetry

import (
	"slices"
	"sync"
	"time"

	"github.com/agentrt/agentrt/runtype"
)

// StepBuckets are the upper bounds (seconds) of the step latency
// histogram: model calls take from tens of milliseconds to minutes, tool
// calls from microseconds to their timeout.
var StepBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300}

// Metrics counts what this process did: runs by how they ended, step
// latencies, tokens and cost by model, each by tenant. Counters start at
// zero with the process. Counts reads every tenant's sum, or one
// tenant's. It is safe for concurrent use; a nil *Metrics records
// nothing.
type Metrics struct {
	mu     sync.Mutex
	runs   map[[2]string]float64    // guarded by mu: {tenant, status} → runs
	steps  map[[2]string]*histogram // guarded by mu: {tenant, "model" | "tool"} → latencies
	tokens map[[3]string]float64    // guarded by mu: {tenant, model, direction} → tokens
	cost   map[[2]string]float64    // guarded by mu: {tenant, model} → USD
}

type histogram struct {
	counts []uint64 // per bucket, not cumulative; the last is +Inf
	sum    float64
	count  uint64
}

// NewMetrics returns empty metrics.
func NewMetrics() *Metrics {
	return &Metrics{
		runs:   map[[2]string]float64{},
		steps:  map[[2]string]*histogram{},
		tokens: map[[3]string]float64{},
		cost:   map[[2]string]float64{},
	}
}

func newHistogram() *histogram { return &histogram{counts: make([]uint64, len(StepBuckets)+1)} }

// add adds o's observations to h.
func (h *histogram) add(o *histogram) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.sum += o.sum
	h.count += o.count
}

// RunEnded counts a run of tenant that a worker let go of, by its status.
func (m *Metrics) RunEnded(tenant, status string) {
	if m == nil {
		return
	}
	m.mu.Lock()
	m.runs[[2]string{tenant, status}]++
	m.mu.Unlock()
}

// StepObserved records the latency of a model call or tool call of
// tenant's.
func (m *Metrics) StepObserved(tenant, kind string, d time.Duration) {
	if m == nil {
		return
	}
	sec := max(d.Seconds(), 0)
	i, _ := slices.BinarySearch(StepBuckets, sec) // the first bound ≥ sec
	k := [2]string{tenant, kind}
	m.mu.Lock()
	h := m.steps[k]
	if h == nil {
		h = newHistogram()
		m.steps[k] = h
	}
	h.counts[i]++
	h.sum += sec
	h.count++
	m.mu.Unlock()
}

// ModelUsage adds the tokens and cost of a model call of tenant's.
func (m *Metrics) ModelUsage(tenant, model string, u runtype.Usage) {
	if m == nil {
		return
	}
	m.mu.Lock()
	m.tokens[[3]string{tenant, model, "input"}] += float64(u.InputTokens)
	m.tokens[[3]string{tenant, model, "output"}] += float64(u.OutputTokens)
	if u.CostUSD > 0 {
		m.cost[[2]string{tenant, model}] += u.CostUSD
	}
	m.mu.Unlock()
}

// Counts is a reading of Metrics: every tenant's sum, or one tenant's.
// httpapi serves it in the Prometheus formats (docs/telemetry.md).
type Counts struct {
	// Runs counts runs by the status they were left in.
	Runs map[string]float64
	// Steps holds the latencies of model and tool calls by kind: "model"
	// and "tool" are always there, empty when nothing was observed.
	Steps map[string]Histogram
	// Tokens counts the tokens of model calls by model and direction.
	Tokens map[TokenKey]float64
	// CostUSD sums the cost of priced model calls by model.
	CostUSD map[string]float64
}

// TokenKey is a model and a direction ("input" or "output").
type TokenKey struct{ Model, Direction string }

// Histogram is a reading of a latency histogram in seconds.
type Histogram struct {
	// Buckets[i] counts the observations of at most StepBuckets[i]
	// seconds (cumulative); Count also counts those above the last bound.
	Buckets []uint64
	Count   uint64
	Sum     float64
}

// Counts returns what m counted: every tenant's sum when tenant is "",
// else that tenant's alone. A nil m counted nothing.
func (m *Metrics) Counts(tenant string) Counts {
	c := Counts{Runs: map[string]float64{}, Steps: map[string]Histogram{}, Tokens: map[TokenKey]float64{}, CostUSD: map[string]float64{}}
	byKind := map[string]*histogram{"model": newHistogram(), "tool": newHistogram()}
	mine := func(t string) bool { return tenant == "" || t == tenant }
	if m != nil {
		m.mu.Lock()
		for k, v := range m.runs {
			if mine(k[0]) {
				c.Runs[k[1]] += v
			}
		}
		for k, h := range m.steps {
			if !mine(k[0]) {
				continue
			}
			if byKind[k[1]] == nil {
				byKind[k[1]] = newHistogram()
			}
			byKind[k[1]].add(h)
		}
		for k, v := range m.tokens {
			if mine(k[0]) {
				c.Tokens[TokenKey{Model: k[1], Direction: k[2]}] += v
			}
		}
		for k, v := range m.cost {
			if mine(k[0]) {
				c.CostUSD[k[1]] += v
			}
		}
		m.mu.Unlock()
	}
	for kind, h := range byKind {
		r := Histogram{Buckets: make([]uint64, len(StepBuckets)), Count: h.count, Sum: h.sum}
		var cum uint64
		for i := range StepBuckets {
			cum += h.counts[i]
			r.Buckets[i] = cum
		}
		c.Steps[kind] = r
	}
	return c
}
