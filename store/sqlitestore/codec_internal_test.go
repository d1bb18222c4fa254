package sqlitestore

import (
	"database/sql"
	"encoding/json"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/runtype"
)

// TestAppendJSONFloat: costs are written as encoding/json writes them.
func TestAppendJSONFloat(t *testing.T) {
	t.Parallel()
	for _, f := range []float64{
		0, 1, -1, 0.1, 0.0125, 1.0 / 3, 123456.789, 1e-6, 9.99e-7, 1.5e-9, 1e20, 1e21, 2.5e300,
		math.SmallestNonzeroFloat64, math.MaxFloat64, -4.2e-8,
	} {
		want, err := json.Marshal(f)
		if err != nil {
			t.Fatalf("json.Marshal(%v): %v", f, err)
		}
		if got := appendJSONFloat(nil, f); string(got) != string(want) {
			t.Errorf("appendJSONFloat(%v) = %s, want %s", f, got, want)
		}
	}
}

// TestCodecRoundTrip: the hand-written encodings are valid JSON that
// decodes to what was encoded, and leave out what the JSON tags omit.
func TestCodecRoundTrip(t *testing.T) {
	t.Parallel()
	odd := "quote \" backslash \\ newline \n tab \t nul \x00 <html> & \u2028 日本語 \xff"
	usages := []runtype.Usage{
		{},
		{InputTokens: 1, OutputTokens: 2},
		{InputTokens: 1200, CachedInputTokens: 300, OutputTokens: 45, ReasoningTokens: 30, CostUSD: 0.0123456789},
		{InputTokens: math.MaxInt64, CostUSD: 1e-9},
	}
	for _, u := range usages {
		text := encodeUsage(u)
		if !json.Valid([]byte(text)) {
			t.Errorf("encodeUsage(%+v) = %s, not valid JSON", u, text)
			continue
		}
		got, err := decodeUsage(text)
		if err != nil || got != u {
			t.Errorf("decodeUsage(encodeUsage(%+v)) = %+v, %v", u, got, err)
		}
		if want, _ := json.Marshal(u); string(want) != text {
			t.Errorf("encodeUsage(%+v) = %s, want %s (as encoding/json writes it)", u, text, want)
		}
	}

	reasonings := [][]runtype.Reasoning{
		{{Provider: "anthropic_messages"}},
		{
			{Provider: "anthropic_messages", Text: odd, Signature: "sig=="},
			{Provider: "anthropic_messages", Redacted: "opaque"},
			{Provider: "openai_responses", ID: "rs_1", Text: "summary", Encrypted: "gAAAA" + odd},
		},
	}
	for _, rs := range reasonings {
		text := encodeReasoning(rs).(string)
		if !json.Valid([]byte(text)) {
			t.Errorf("encodeReasoning = %s, not valid JSON", text)
			continue
		}
		got, err := decodeReasoning(sql.NullString{String: text, Valid: true})
		if err != nil {
			t.Errorf("decodeReasoning(%s): %v", text, err)
		}
		want := decodeAs[[]runtype.Reasoning](t, rs)
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("reasoning round trip (-encoding/json +hand-written):\n%s", d)
		}
	}
	if encodeReasoning(nil) != nil || encodeReasoning([]runtype.Reasoning{}) != nil {
		t.Errorf("encodeReasoning of no blocks is not NULL")
	}

	routings := []*runtype.Routing{
		{},
		{Mode: "single", Candidate: "default", Provider: "anthropic_messages", CandidateCount: 1, Reason: "only candidate"},
		{Mode: "fallback", Candidate: "b", Provider: "openai_responses", Model: "gpt", CandidateCount: 3, Reason: odd, Fallbacks: 2},
	}
	for _, r := range routings {
		text := encodeRouting(r).(string)
		if !json.Valid([]byte(text)) {
			t.Errorf("encodeRouting = %s, not valid JSON", text)
			continue
		}
		got, err := decodeRouting(sql.NullString{String: text, Valid: true})
		if err != nil {
			t.Errorf("decodeRouting(%s): %v", text, err)
		}
		want := decodeAs[*runtype.Routing](t, r)
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("routing round trip (-encoding/json +hand-written):\n%s", d)
		}
		var keys, wantKeys map[string]any
		_ = json.Unmarshal([]byte(text), &keys)
		b, _ := json.Marshal(r)
		_ = json.Unmarshal(b, &wantKeys)
		if d := cmp.Diff(wantKeys, keys); d != "" {
			t.Errorf("routing fields (-encoding/json +hand-written):\n%s", d)
		}
	}
	if encodeRouting(nil) != nil {
		t.Errorf("encodeRouting(nil) is not NULL")
	}
}

// decodeAs returns v after a trip through encoding/json, which is what a
// faithful encoding decodes to (invalid UTF-8 becomes U+FFFD).
func decodeAs[T any](t *testing.T, v T) T {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("json.Marshal: %v", err)
	}
	var out T
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("json.Unmarshal: %v", err)
	}
	return out
}

func TestCheckCost(t *testing.T) {
	t.Parallel()
	for _, f := range []float64{0, 0.5, -1, math.MaxFloat64} {
		if err := checkCost("usage", f); err != nil {
			t.Errorf("checkCost(%v) = %v, want nil", f, err)
		}
	}
	for _, f := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		if err := checkCost("usage", f); err == nil {
			t.Errorf("checkCost(%v) = nil, want an error", f)
		}
	}
}
