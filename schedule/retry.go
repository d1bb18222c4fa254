package schedule

import (
	"math"
	"time"
)

// ShouldPause reports whether a schedule pauses after consecutiveFailures
// failed runs in a row; pauseAfter 0 (or less) never pauses.
func ShouldPause(consecutiveFailures, pauseAfter int) bool {
	return pauseAfter > 0 && consecutiveFailures >= pauseAfter
}

// Backoff returns the wait before retry attempt (1 for the first retry):
// base*2^(attempt-1), capped at max. It has no jitter, so a retry's time is
// reproducible. An attempt below 1 counts as 1; max <= 0 means no cap
// (doubling stops before it overflows).
func Backoff(attempt int, base, max time.Duration) time.Duration {
	if base <= 0 {
		return 0
	}
	d := base
	for i := 1; i < attempt; i++ {
		if max > 0 && d >= max || d > math.MaxInt64/2 {
			break
		}
		d *= 2
	}
	if max > 0 && d > max {
		return max
	}
	return d
}
