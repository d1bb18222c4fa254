package proc_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/internal/proc"
)

// write is one Write call and what it should return.
type write struct {
	p       string
	n       int
	wantErr error
}

func TestCappedBuffer(t *testing.T) {
	t.Parallel()
	errFull := errors.New("full")

	tests := []struct {
		name       string
		limit      int
		onOverflow func(calls *int) func() error
		writes     []write
		wantBytes  string
		wantDrop   int64
		wantCalls  int
	}{
		{
			name:      "within the limit",
			limit:     5,
			writes:    []write{{"ab", 2, nil}, {"cde", 3, nil}},
			wantBytes: "abcde",
		},
		{
			name:      "counts and discards without onOverflow",
			limit:     4,
			writes:    []write{{"abc", 3, nil}, {"def", 3, nil}, {"gh", 2, nil}},
			wantBytes: "abcd",
			wantDrop:  4,
		},
		{
			name:  "counts and discards when onOverflow returns nil",
			limit: 2,
			onOverflow: func(calls *int) func() error {
				return func() error { *calls++; return nil }
			},
			writes:    []write{{"abc", 3, nil}, {"de", 2, nil}},
			wantBytes: "ab",
			wantDrop:  3,
			wantCalls: 1,
		},
		{
			name:  "fails every write past the limit with onOverflow's error",
			limit: 4,
			onOverflow: func(calls *int) func() error {
				return func() error { *calls++; return errFull }
			},
			writes:    []write{{"abc", 3, nil}, {"def", 1, errFull}, {"gh", 0, errFull}},
			wantBytes: "abcd",
			wantDrop:  4,
			wantCalls: 1,
		},
		{
			name:      "zero limit",
			limit:     0,
			writes:    []write{{"", 0, nil}, {"a", 1, nil}},
			wantBytes: "",
			wantDrop:  1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var calls int
			var onOverflow func() error
			if tt.onOverflow != nil {
				onOverflow = tt.onOverflow(&calls)
			}
			b := proc.NewCappedBuffer(tt.limit, onOverflow)
			for i, w := range tt.writes {
				n, err := b.Write([]byte(w.p))
				if n != w.n || !errors.Is(err, w.wantErr) || (err == nil) != (w.wantErr == nil) {
					t.Errorf("write %d of %q = %d, %v; want %d, %v", i, w.p, n, err, w.n, w.wantErr)
				}
			}
			if diff := cmp.Diff(tt.wantBytes, string(b.Bytes())); diff != "" {
				t.Errorf("Bytes (-want +got):\n%s", diff)
			}
			if got := b.Dropped(); got != tt.wantDrop {
				t.Errorf("Dropped = %d, want %d", got, tt.wantDrop)
			}
			if got, want := b.Overflowed(), tt.wantDrop > 0; got != want {
				t.Errorf("Overflowed = %v, want %v", got, want)
			}
			if calls != tt.wantCalls {
				t.Errorf("onOverflow called %d times, want %d", calls, tt.wantCalls)
			}
		})
	}
}

func TestExcerpt(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		b     string
		n     int
		total int
		want  string
	}{
		{"short", "hello", 10, 5, "hello"},
		{"cut", "hello world", 5, 11, "hello … (6 more bytes)"},
		{"cut at a rune boundary", "aé", 2, 3, "a … (2 more bytes)"},
		{"more left out than b", "abc", 10, 100, "abc … (97 more bytes)"},
		{"invalid UTF-8", "a\xffb", 10, 3, "a\uFFFDb"},
		{"empty", "", 10, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := proc.Excerpt([]byte(tt.b), tt.n, tt.total); got != tt.want {
				t.Errorf("Excerpt(%q, %d, %d) = %q, want %q", tt.b, tt.n, tt.total, got, tt.want)
			}
		})
	}
}
