package loop

import (
	"testing"
	"time"

	"github.com/agentrt/agentrt/runtype"
)

// TestRetryAt: the n-th retry waits Backoff·2ⁿ⁻¹, capped by MaxBackoff
// when it is set; failures that are not retryable, of an excluded kind
// or past MaxAttempts get none.
func TestRetryAt(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	model := &runtype.Failure{Kind: runtype.FailureModel, Retryable: true}
	tests := []struct {
		name     string
		p        RetryPolicy
		f        *runtype.Failure
		attempts int
		want     time.Duration // -1: no retry
	}{
		{"first retry", RetryPolicy{MaxAttempts: 5, Backoff: time.Second}, model, 1, time.Second},
		{"second doubles", RetryPolicy{MaxAttempts: 5, Backoff: time.Second}, model, 2, 2 * time.Second},
		{"fourth doubles thrice", RetryPolicy{MaxAttempts: 5, Backoff: time.Second}, model, 4, 8 * time.Second},
		{"capped", RetryPolicy{MaxAttempts: 5, Backoff: time.Second, MaxBackoff: 3 * time.Second}, model, 4, 3 * time.Second},
		{"used up", RetryPolicy{MaxAttempts: 2, Backoff: time.Second}, model, 2, -1},
		{"not retryable", RetryPolicy{MaxAttempts: 5}, &runtype.Failure{Kind: runtype.FailureModel}, 1, -1},
		{"excluded", RetryPolicy{MaxAttempts: 5, NonRetryable: []runtype.FailureKind{runtype.FailureModel}}, model, 1, -1},
		{"zero policy", RetryPolicy{}, model, 1, -1},
	}
	for _, tt := range tests {
		at, ok := tt.p.retryAt(tt.f, tt.attempts, now)
		switch {
		case tt.want < 0 && ok:
			t.Errorf("%s: retry at %v, want none", tt.name, at)
		case tt.want >= 0 && (!ok || at.Sub(now) != tt.want):
			t.Errorf("%s: retry after %v (%v), want %v", tt.name, at.Sub(now), ok, tt.want)
		}
	}
}
