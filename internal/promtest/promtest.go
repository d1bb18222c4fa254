// Package promtest reads the Prometheus text exposition format in tests,
// with the Prometheus library's own parser (expfmt).
package promtest

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Families parses text into its metric families by name. Text the
// parser refuses fails the test.
func Families(t testing.TB, text string) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("parsing the metrics: %v\n%s", err, text)
	}
	return fams
}

// Parse parses text into series → value. A series is written as the
// format writes it, labels sorted by name: `name{a="x",b="y"}`, `name`
// without labels; a histogram is its _bucket (with le, "+Inf" last),
// _sum and _count series.
func Parse(t testing.TB, text string) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for name, f := range Families(t, text) {
		for _, m := range f.GetMetric() {
			labels := m.GetLabel()
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				out[series(name, labels)] = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				out[series(name, labels)] = m.GetGauge().GetValue()
			case dto.MetricType_UNTYPED:
				out[series(name, labels)] = m.GetUntyped().GetValue()
			case dto.MetricType_SUMMARY:
				out[series(name+"_sum", labels)] = m.GetSummary().GetSampleSum()
				out[series(name+"_count", labels)] = float64(m.GetSummary().GetSampleCount())
			case dto.MetricType_HISTOGRAM:
				h := m.GetHistogram()
				inf := false
				for _, b := range h.GetBucket() {
					inf = inf || math.IsInf(b.GetUpperBound(), 1)
					out[series(name+"_bucket", labels, le(b.GetUpperBound()))] = float64(b.GetCumulativeCount())
				}
				if !inf {
					out[series(name+"_bucket", labels, le(math.Inf(1)))] = float64(h.GetSampleCount())
				}
				out[series(name+"_sum", labels)] = h.GetSampleSum()
				out[series(name+"_count", labels)] = float64(h.GetSampleCount())
			default:
				t.Fatalf("metric family %s has type %s, which promtest does not read", name, f.GetType())
			}
		}
	}
	return out
}

func le(bound float64) *dto.LabelPair {
	v := "+Inf"
	if !math.IsInf(bound, 1) {
		v = strconv.FormatFloat(bound, 'g', -1, 64)
	}
	name := "le"
	return &dto.LabelPair{Name: &name, Value: &v}
}

// series writes name with its labels sorted by name.
func series(name string, labels []*dto.LabelPair, more ...*dto.LabelPair) string {
	all := slices.Concat(labels, more)
	if len(all) == 0 {
		return name
	}
	slices.SortFunc(all, func(a, b *dto.LabelPair) int { return strings.Compare(a.GetName(), b.GetName()) })
	var sb strings.Builder
	sb.WriteString(name + "{")
	for i, l := range all {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(l.GetName() + "=" + strconv.Quote(l.GetValue()))
	}
	sb.WriteByte('}')
	return sb.String()
}
