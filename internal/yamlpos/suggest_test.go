package yamlpos

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestEditDistance(t *testing.T) {
	t.Parallel()

	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"", "abc", 3},
		{"kitten", "sitting", 3},
		{"max_hops", "max_tool_hops", 5},
		{"scirpt", "script", 2},
	}
	for _, tt := range tests {
		t.Run(tt.a+"_"+tt.b, func(t *testing.T) {
			t.Parallel()
			if got := EditDistance(tt.a, tt.b); got != tt.want {
				t.Errorf("EditDistance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
			}
			if got := EditDistance(tt.b, tt.a); got != tt.want {
				t.Errorf("EditDistance(%q, %q) = %d, want %d", tt.b, tt.a, got, tt.want)
			}
		})
	}
}

func TestNearest(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name       string
		s          string
		candidates []string
		want       string
		dist       int
	}{
		{name: "Closest", s: "lenght", candidates: []string{"stop", "length"}, want: "length", dist: 2},
		{name: "IgnoresCase", s: "Tools", candidates: []string{"model", "tools"}, want: "tools", dist: 0},
		{name: "FirstWinsTie", s: "ab", candidates: []string{"xb", "ax"}, want: "xb", dist: 1},
		{name: "NoCandidates", s: "x", want: "", dist: -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, dist := Nearest(tt.s, tt.candidates)
			if diff := cmp.Diff([]any{tt.want, tt.dist}, []any{got, dist}); diff != "" {
				t.Errorf("Nearest(%q) mismatch (-want +got):\n%s", tt.s, diff)
			}
		})
	}
}
