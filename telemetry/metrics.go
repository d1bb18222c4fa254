package telemetry

import (
	"bufio"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
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
// zero with the process. Families reads every tenant's sum, or one
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

// Families returns the metrics as families for WriteText: the runs
// counter, the step latency histogram, the token and cost counters;
// every tenant's sum when tenant is "", else that tenant's alone.
func (m *Metrics) Families(tenant string) []Family {
	runs := Family{Name: "agentrt_runs_total", Type: "counter",
		Help: "Runs this process let go of (ended, parked, paused, yielded or left retrying), by the status they were left in."}
	steps := Family{Name: "agentrt_step_duration_seconds", Type: "histogram",
		Help: "Latency of model calls (kind=model, one per request) and tool calls (kind=tool, while the tool ran)."}
	tokens := Family{Name: "agentrt_tokens_total", Type: "counter", Help: "Tokens of model calls this process made, by model and direction."}
	cost := Family{Name: "agentrt_cost_usd_total", Type: "counter", Help: "Cost in US dollars of model calls this process made, by model (priced models only)."}
	if m == nil {
		return []Family{runs, steps, tokens, cost}
	}
	mine := func(t string) bool { return tenant == "" || t == tenant }
	byStatus := map[string]float64{}
	byKind := map[string]*histogram{"model": newHistogram(), "tool": newHistogram()}
	byModelDir := map[[2]string]float64{}
	byModel := map[string]float64{}
	m.mu.Lock()
	for k, v := range m.runs {
		if mine(k[0]) {
			byStatus[k[1]] += v
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
			byModelDir[[2]string{k[1], k[2]}] += v
		}
	}
	for k, v := range m.cost {
		if mine(k[0]) {
			byModel[k[1]] += v
		}
	}
	m.mu.Unlock()
	for _, st := range sortedKeys(byStatus) {
		runs.Samples = append(runs.Samples, Sample{Labels: []Label{{"status", st}}, Value: byStatus[st]})
	}
	for _, kind := range sortedKeys(byKind) {
		h := byKind[kind]
		var cum uint64
		for i, c := range h.counts {
			cum += c
			le := math.Inf(1)
			if i < len(StepBuckets) {
				le = StepBuckets[i]
			}
			steps.Samples = append(steps.Samples, Sample{Suffix: "_bucket", Labels: []Label{{"kind", kind}, {"le", formatFloat(le)}}, Value: float64(cum)})
		}
		steps.Samples = append(steps.Samples,
			Sample{Suffix: "_sum", Labels: []Label{{"kind", kind}}, Value: h.sum},
			Sample{Suffix: "_count", Labels: []Label{{"kind", kind}}, Value: float64(h.count)})
	}
	keys := make([][2]string, 0, len(byModelDir))
	for k := range byModelDir {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b [2]string) int { return strings.Compare(a[0]+"\x00"+a[1], b[0]+"\x00"+b[1]) })
	for _, k := range keys {
		tokens.Samples = append(tokens.Samples, Sample{Labels: []Label{{"model", k[0]}, {"direction", k[1]}}, Value: byModelDir[k]})
	}
	for _, model := range sortedKeys(byModel) {
		cost.Samples = append(cost.Samples, Sample{Labels: []Label{{"model", model}}, Value: byModel[model]})
	}
	return []Family{runs, steps, tokens, cost}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// ContentType is the media type of the text exposition format WriteText
// writes.
const ContentType = "text/plain; version=0.0.4; charset=utf-8"

// Family is one metric family of the text exposition format.
type Family struct {
	Name string
	Help string
	// Type is counter, gauge, histogram or untyped.
	Type    string
	Samples []Sample
}

// Sample is one line of a family: the family's name with Suffix (a
// histogram's _bucket, _sum or _count), its labels and value.
type Sample struct {
	Suffix string
	Labels []Label
	Value  float64
}

// Label is one label of a sample.
type Label struct{ Name, Value string }

// WriteText writes fams in the Prometheus text exposition format 0.0.4:
// a HELP and a TYPE line per family, then its samples, label values
// escaped.
func WriteText(w io.Writer, fams []Family) error {
	bw := bufio.NewWriter(w)
	for _, f := range fams {
		bw.WriteString("# HELP " + f.Name + " " + escapeHelp(f.Help) + "\n")
		bw.WriteString("# TYPE " + f.Name + " " + f.Type + "\n")
		for _, s := range f.Samples {
			bw.WriteString(f.Name + s.Suffix)
			if len(s.Labels) > 0 {
				bw.WriteByte('{')
				for i, l := range s.Labels {
					if i > 0 {
						bw.WriteByte(',')
					}
					bw.WriteString(l.Name + `="` + escapeLabel(l.Value) + `"`)
				}
				bw.WriteByte('}')
			}
			bw.WriteString(" " + formatFloat(s.Value) + "\n")
		}
	}
	return bw.Flush()
}

var (
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
	labelEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)
)

func escapeHelp(s string) string  { return helpEscaper.Replace(s) }
func escapeLabel(s string) string { return labelEscaper.Replace(s) }

func formatFloat(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}
