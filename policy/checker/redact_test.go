package checker_test

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/policy"
	"github.com/agentrt/agentrt/policy/checker"
)

func TestRedact(t *testing.T) {
	t.Parallel()
	f := func(kind string, start, end int) policy.Finding {
		return policy.Finding{Kind: kind, Start: start, End: end}
	}
	tests := []struct {
		name     string
		text     string
		findings []policy.Finding
		want     string
	}{
		{"none", "hello", nil, "hello"},
		{"one", "key=abc123 ok", []policy.Finding{f("k", 4, 10)}, "key=[REDACTED:k] ok"},
		{"whole text", "abc", []policy.Finding{f("k", 0, 3)}, "[REDACTED:k]"},
		{"unsorted", "aa bb cc", []policy.Finding{f("c", 6, 8), f("a", 0, 2)}, "[REDACTED:a] bb [REDACTED:c]"},
		{"adjacent stay apart", "aabb", []policy.Finding{f("a", 0, 2), f("b", 2, 4)}, "[REDACTED:a][REDACTED:b]"},
		{"overlap unites under the first", "abcdef", []policy.Finding{f("b", 2, 5), f("a", 1, 3)}, "a[REDACTED:a]f"},
		{"same start, longer wins", "abcdef", []policy.Finding{f("short", 0, 2), f("long", 0, 4)}, "[REDACTED:long]ef"},
		{"contained", "abcdef", []policy.Finding{f("out", 0, 6), f("in", 2, 3)}, "[REDACTED:out]"},
		{"chain of overlaps", "0123456789", []policy.Finding{f("a", 1, 4), f("b", 3, 6), f("c", 5, 8)}, "0[REDACTED:a]89"},
		{"duplicates", "abc", []policy.Finding{f("a", 1, 2), f("a", 1, 2)}, "a[REDACTED:a]c"},
		{"clamped", "abc", []policy.Finding{f("a", -5, 1), f("b", 2, 99)}, "[REDACTED:a]b[REDACTED:b]"},
		{"empty and inverted ignored", "abc", []policy.Finding{f("a", 1, 1), f("b", 2, 1), f("c", 7, 9)}, "abc"},
		{"widened to whole runes", "xé€y", []policy.Finding{f("u", 2, 4)}, "x[REDACTED:u]y"},
		{"widened at both ends", "é€", []policy.Finding{f("u", 1, 3)}, "[REDACTED:u]"},
		{"invalid utf-8 is not widened", "a\x80\x80b", []policy.Finding{f("u", 0, 1), f("v", 3, 4)}, "[REDACTED:u]\x80\x80[REDACTED:v]"},
		{"empty kind", "abc", []policy.Finding{f("", 0, 1)}, "[REDACTED]bc"},
		{"kind that is not a name", "abc", []policy.Finding{f("sk-abc] [x", 0, 1)}, "[REDACTED]bc"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			before := slices.Clone(tt.findings)
			got := checker.Redact(tt.text, tt.findings)
			if got != tt.want {
				t.Errorf("Redact(%q, %v) = %q, want %q", tt.text, tt.findings, got, tt.want)
			}
			if diff := cmp.Diff(before, tt.findings); diff != "" {
				t.Errorf("Redact modified its findings (-before +after):\n%s", diff)
			}
		})
	}
}
