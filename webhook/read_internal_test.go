package webhook

import (
	"io"
	"strings"
	"testing"
)

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// TestReadAtMost: a response body is read up to the limit and no further.
func TestReadAtMost(t *testing.T) {
	t.Parallel()
	r := &countingReader{r: strings.NewReader(strings.Repeat("x", 1<<20))}
	b := readAtMost(r, 1000)
	if len(b) != 1000 || r.n != 1000 {
		t.Errorf("readAtMost(1 MiB, 1000) returned %d bytes and read %d, want 1000 and 1000", len(b), r.n)
	}
}

func TestExcerpt(t *testing.T) {
	t.Parallel()
	scrub := strings.NewReplacer("SIG", "[redacted]")
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"  not\tfound\r\n\n", "not found"},
		{"bad SIG here", "bad [redacted] here"},
		{"esc\x1b[31mred\x00", "esc [31mred"},
		{"bad utf8 \xff!", "bad utf8 \uFFFD!"},
		{strings.Repeat("a", 200), strings.Repeat("a", 200)},
		{strings.Repeat("a", 201), strings.Repeat("a", 200) + "…"},
		{"a" + strings.Repeat("€", 100), "a" + strings.Repeat("€", 66) + "…"}, // 1+198 bytes; the next € would pass 200
	} {
		if got := excerpt([]byte(tc.in), scrub); got != tc.want {
			t.Errorf("excerpt(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
