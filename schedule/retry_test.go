package schedule

import (
	"math"
	"testing"
	"time"
)

func TestShouldPause(t *testing.T) {
	t.Parallel()
	tests := []struct {
		failures, after int
		want            bool
	}{
		{0, 0, false}, {100, 0, false}, {5, -1, false},
		{0, 3, false}, {2, 3, false}, {3, 3, true}, {4, 3, true},
		{1, 1, true},
	}
	for _, tt := range tests {
		if got := ShouldPause(tt.failures, tt.after); got != tt.want {
			t.Errorf("ShouldPause(%d, %d) = %v, want %v", tt.failures, tt.after, got, tt.want)
		}
	}
}

func TestBackoff(t *testing.T) {
	t.Parallel()
	const s = time.Second
	tests := []struct {
		attempt   int
		base, max time.Duration
		want      time.Duration
	}{
		{1, s, time.Minute, s},
		{2, s, time.Minute, 2 * s},
		{3, s, time.Minute, 4 * s},
		{6, s, time.Minute, 32 * s},
		{7, s, time.Minute, time.Minute}, // 64s capped
		{1000, s, time.Minute, time.Minute},
		{math.MaxInt, s, time.Hour, time.Hour},
		{0, s, time.Minute, s},  // below 1 counts as 1
		{-3, s, time.Minute, s}, // below 1 counts as 1
		{1, 2 * time.Minute, time.Minute, time.Minute},
		{3, s, 0, 4 * s},     // no cap
		{200, s, 0, s << 33}, // doubling stops before it overflows
		{1, 0, time.Minute, 0},
	}
	for _, tt := range tests {
		if got := Backoff(tt.attempt, tt.base, tt.max); got != tt.want {
			t.Errorf("Backoff(%d, %s, %s) = %s, want %s", tt.attempt, tt.base, tt.max, got, tt.want)
		}
	}
}
