package schedule

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/robfig/cron/v3"
)

// TestRobfigDST pins what robfig/cron v3.0.1 does on its own around DST
// changes, the behaviour cronSource wraps: a time in the spring-forward
// gap is skipped (the fire moves to the next day), a time in the repeated
// hour fires twice, and every-hour specs fire by real time. If an upgrade
// changes this, revisit cron.go.
func TestRobfigDST(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, zone, spec, after string
		want                    []string // the next two fires
	}{
		{"ny gap skipped", "America/New_York", "30 2 * * *", "2026-03-08T06:00:00Z",
			[]string{"2026-03-09T06:30:00Z", "2026-03-10T06:30:00Z"}},
		{"ny repeated hour twice", "America/New_York", "30 1 * * *", "2026-11-01T04:00:00Z",
			[]string{"2026-11-01T05:30:00Z", "2026-11-01T06:30:00Z"}},
		{"ny quarter-hourly spring", "America/New_York", "*/15 * * * *", "2026-03-08T06:45:00Z",
			[]string{"2026-03-08T07:00:00Z", "2026-03-08T07:15:00Z"}},
		{"ny quarter-hourly fall", "America/New_York", "*/15 * * * *", "2026-11-01T05:45:00Z",
			[]string{"2026-11-01T06:00:00Z", "2026-11-01T06:15:00Z"}},
		{"berlin gap skipped", "Europe/Berlin", "30 2 * * *", "2026-03-29T00:00:00Z",
			[]string{"2026-03-30T00:30:00Z", "2026-03-31T00:30:00Z"}},
		{"berlin repeated hour twice", "Europe/Berlin", "30 2 * * *", "2026-10-25T00:00:00Z",
			[]string{"2026-10-25T00:30:00Z", "2026-10-25T01:30:00Z"}},
		{"berlin hourly fall", "Europe/Berlin", "@hourly", "2026-10-25T00:00:00Z",
			[]string{"2026-10-25T01:00:00Z", "2026-10-25T02:00:00Z"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, err := cron.ParseStandard("CRON_TZ=" + tt.zone + " " + tt.spec)
			if err != nil {
				t.Fatal(err)
			}
			first := s.Next(mustTime(t, tt.after))
			got := []string{utc(first), utc(s.Next(first))}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("robfig fires (-want +got):\n%s", diff)
			}
		})
	}
}

func mustTime(t testing.TB, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func utc(t time.Time) string {
	if t.IsZero() {
		return "zero"
	}
	return t.UTC().Format(time.RFC3339Nano)
}
