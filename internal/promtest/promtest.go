// Package promtest reads the Prometheus text exposition format in tests:
// series → value, with each sample checked to follow its family's TYPE
// line.
package promtest

import (
	"strconv"
	"strings"
	"testing"
)

// Parse parses text into series (name with its labels, as written) →
// value. A line without a number fails the test; a sample before its
// family's TYPE line is an error.
func Parse(t testing.TB, text string) map[string]float64 {
	t.Helper()
	typed := map[string]string{}
	out := map[string]float64{}
	for _, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		if rest, ok := strings.CutPrefix(line, "# TYPE "); ok {
			name, typ, _ := strings.Cut(rest, " ")
			typed[name] = typ
			continue
		}
		if strings.HasPrefix(line, "# HELP ") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			t.Fatalf("metrics line %q has no value", line)
		}
		series, raw := line[:i], line[i+1:]
		v, err := strconv.ParseFloat(raw, 64)
		if err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		name, _, _ := strings.Cut(series, "{")
		base := name
		for _, suf := range []string{"_bucket", "_sum", "_count"} {
			if b, ok := strings.CutSuffix(name, suf); ok && typed[b] == "histogram" {
				base = b
			}
		}
		if typed[base] == "" {
			t.Errorf("metrics line %q comes before its family's TYPE line", line)
		}
		out[series] = v
	}
	return out
}
