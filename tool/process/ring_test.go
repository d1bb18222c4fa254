package process

import (
	"strings"
	"testing"
)

func TestRing(t *testing.T) {
	t.Parallel()
	r := newRing(8)
	var all strings.Builder
	write := func(s string) {
		r.Write([]byte(s))
		all.WriteString(s)
	}
	check := func(off int64) {
		t.Helper()
		data, dropped := r.Since(off)
		whole := all.String()
		kept := whole[max(0, len(whole)-8):]
		wantDropped := max(0, int64(len(whole)-len(kept))-off)
		want := whole[max(off, int64(len(whole)-len(kept))):]
		if string(data) != want || dropped != wantDropped {
			t.Errorf("Since(%d) after %q = %q, %d; want %q, %d", off, whole, data, dropped, want, wantDropped)
		}
	}
	check(0)
	write("abc")
	check(0)
	check(2)
	check(3)
	write("defgh") // exactly full
	check(0)
	check(5)
	write("ij") // wraps
	check(0)
	check(4)
	check(9)
	write("0123456789AB") // larger than the ring
	check(0)
	check(20)
	write("x")
	check(22)
	if got := string(r.Bytes()); got != "456789ABx"[1:] {
		t.Errorf("Bytes = %q", got)
	}
}

func TestTailPreview(t *testing.T) {
	t.Parallel()
	tests := []struct {
		data    string
		dropped int64
		limit   int
		want    string
	}{
		{"hello", 0, 10, "hello"},
		{"hello", 3, 10, "[… 3 earlier bytes not shown]\nhello"},
		{"hello world", 0, 5, "[… 6 earlier bytes not shown]\nworld"},
		{"aé", 0, 1, "[… 3 earlier bytes not shown]\n"},
		{"a\xffb", 0, 10, "a\uFFFDb"},
	}
	for _, tt := range tests {
		if got := tailPreview([]byte(tt.data), tt.dropped, tt.limit); got != tt.want {
			t.Errorf("tailPreview(%q, %d, %d) = %q, want %q", tt.data, tt.dropped, tt.limit, got, tt.want)
		}
	}
}

func TestDedupEnv(t *testing.T) {
	t.Parallel()
	got := strings.Join(dedupEnv([]string{"A=1", "B=2", "A=3", "C=4"}), " ")
	if want := "A=3 B=2 C=4"; got != want {
		t.Errorf("dedupEnv = %s, want %s", got, want)
	}
}
