package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestFit: spans give way in their order, those of one rank in
// proportion, dropped whole or cut to minCut; what still does not fit is
// cut at the end; a width of 0 changes nothing.
func TestFit(t *testing.T) {
	t.Parallel()
	line := func() []span {
		return []span{plain("tool "), flexible(1, "aaaaaaaaaaaaaaaaaaaa"), plain(" → "), flexible(1, "bbbbbbbbbb"),
			{text: " · 5 tokens", give: 2, drop: true}, plain(" · 3ms")}
	}
	tests := []struct {
		width int
		want  string
	}{
		{0, "tool aaaaaaaaaaaaaaaaaaaa → bbbbbbbbbb · 5 tokens · 3ms"},
		{100, "tool aaaaaaaaaaaaaaaaaaaa → bbbbbbbbbb · 5 tokens · 3ms"},
		{50, "tool aaaaaaaaaaaaaaa… → bbbbbbbb… · 5 tokens · 3ms"},
		{40, "tool aaaaaaa… → bbbbbb… · 5 tokens · 3ms"},
		{30, "tool aaaaa… → bbbbb… · 3ms"},
		{20, "tool aaaaa… → bbbbb…"},
		{10, "tool aaaa…"},
	}
	for _, tt := range tests {
		spans := line()
		fit(spans, tt.width)
		if got := render(spans, style{}); got != tt.want {
			t.Errorf("fit to %d:\n got %q\nwant %q", tt.width, got, tt.want)
		}
	}
}

// TestTextBlock: prose wraps at word boundaries, a word split across two
// writes waits until it is whole, a word longer than a line is broken,
// newlines start lines, and without a width nothing wraps.
func TestTextBlock(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		width  int
		pieces []string
		want   string
	}{
		{"wraps", 20, []string{"the quick brown fox jumps over the lazy dog"}, "> the quick brown\n  fox jumps over the\n  lazy dog.\n"},
		{"split word", 20, []string{"the quick bro", "wn fox"}, "> the quick brown\n  fox.\n"},
		{"long word", 12, []string{"a abcdefghijklmnopqrstuvwxyz"}, "> a\n  abcdefghij\n  klmnopqrst\n  uvwxyz.\n"},
		{"newlines", 40, []string{"one\n\n  two  three"}, "> one\n\n  two three.\n"},
		{"no width", 0, []string{"the quick brown fox jumps over the lazy dog"}, "> the quick brown fox jumps over the lazy dog.\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var out bytes.Buffer
			out.WriteString("> ")
			b := newTextBlock(&out, "  ", tt.width, 2)
			for i, p := range tt.pieces {
				b.write(p)
				if i == 0 && tt.name == "split word" && strings.Contains(out.String(), "bro") {
					t.Errorf("half a word was written: %q", out.String())
				}
			}
			b.end(".")
			if diff := cmp.Diff(tt.want, out.String()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
