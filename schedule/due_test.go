package schedule

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"
)

func mustParse(t testing.TB, s Spec) *Schedule {
	t.Helper()
	sch, err := Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return sch
}

// planStrings is a Plan with its times as RFC 3339 strings, for diffs.
type planStrings struct {
	Run, Missed []string
	MissedMore  int
	Next        string
}

func strs(p Plan) planStrings {
	conv := func(ts []time.Time) []string {
		var out []string
		for _, t := range ts {
			out = append(out, utc(t))
		}
		return out
	}
	return planStrings{conv(p.Run), conv(p.Missed), p.MissedMore, utc(p.Next)}
}

func TestDue(t *testing.T) {
	t.Parallel()
	minutely := Spec{Kind: KindCron, Cron: "* * * * *"}
	hourly := Spec{Kind: KindCron, Cron: "@hourly", TimeZone: "Europe/Berlin"}
	at := mustTime(t, "2026-05-01T10:00:00Z")
	tests := []struct {
		name      string
		spec      Spec
		next, now string
		window    time.Duration
		max       int
		want      planStrings
	}{
		{"nothing due yet", minutely, "2026-05-01T10:01:00Z", "2026-05-01T10:00:30Z", time.Minute, 10,
			planStrings{Next: "2026-05-01T10:01:00Z"}},
		{"due on time", minutely, "2026-05-01T10:01:00Z", "2026-05-01T10:01:00Z", time.Minute, 10,
			planStrings{Run: []string{"2026-05-01T10:01:00Z"}, Next: "2026-05-01T10:02:00Z"}},
		{"a little late runs", minutely, "2026-05-01T10:01:00Z", "2026-05-01T10:01:40Z", time.Minute, 10,
			planStrings{Run: []string{"2026-05-01T10:01:00Z"}, Next: "2026-05-01T10:02:00Z"}},
		{"window edge runs", hourly, "2026-05-01T10:00:00Z", "2026-05-01T10:05:00Z", 5 * time.Minute, 10,
			planStrings{Run: []string{"2026-05-01T10:00:00Z"}, Next: "2026-05-01T11:00:00Z"}},
		{"just outside window missed", hourly, "2026-05-01T10:00:00Z", "2026-05-01T10:05:00.001Z", 5 * time.Minute, 10,
			planStrings{Missed: []string{"2026-05-01T10:00:00Z"}, Next: "2026-05-01T11:00:00Z"}},
		{"window 0 means a minute", hourly, "2026-05-01T10:00:00Z", "2026-05-01T10:01:00Z", 0, 10,
			planStrings{Run: []string{"2026-05-01T10:00:00Z"}, Next: "2026-05-01T11:00:00Z"}},
		{"window 0 misses after a minute", hourly, "2026-05-01T10:00:00Z", "2026-05-01T10:01:01Z", 0, 10,
			planStrings{Missed: []string{"2026-05-01T10:00:00Z"}, Next: "2026-05-01T11:00:00Z"}},
		{"downtime split by window", hourly, "2026-05-01T07:00:00Z", "2026-05-01T10:30:00Z", 2 * time.Hour, 10,
			planStrings{
				Missed: []string{"2026-05-01T07:00:00Z", "2026-05-01T08:00:00Z"},
				Run:    []string{"2026-05-01T09:00:00Z", "2026-05-01T10:00:00Z"},
				Next:   "2026-05-01T11:00:00Z"}},
		{"oldest missed only counted", hourly, "2026-05-01T00:00:00Z", "2026-05-01T10:30:00Z", time.Hour, 3,
			planStrings{
				Missed:     []string{"2026-05-01T08:00:00Z", "2026-05-01T09:00:00Z"},
				Run:        []string{"2026-05-01T10:00:00Z"},
				MissedMore: 8,
				Next:       "2026-05-01T11:00:00Z"}},
		{"too many in window: newest run", minutely, "2026-05-01T10:00:00Z", "2026-05-01T10:30:00Z", time.Hour, 2,
			planStrings{
				Run:        []string{"2026-05-01T10:29:00Z", "2026-05-01T10:30:00Z"},
				MissedMore: 29,
				Next:       "2026-05-01T10:31:00Z"}},
		{"max below one lists one", minutely, "2026-05-01T10:00:00Z", "2026-05-01T10:02:00Z", time.Hour, 0,
			planStrings{Run: []string{"2026-05-01T10:02:00Z"}, MissedMore: 2, Next: "2026-05-01T10:03:00Z"}},
		{"next between fires", hourly, "2026-05-01T09:30:00Z", "2026-05-01T10:00:00Z", time.Hour, 10,
			planStrings{Run: []string{"2026-05-01T10:00:00Z"}, Next: "2026-05-01T11:00:00Z"}},
		{"zero next: nothing pending", minutely, "zero", "2026-05-01T10:00:00Z", time.Hour, 10,
			planStrings{Next: "2026-05-01T10:01:00Z"}},
		{"once due", Spec{Kind: KindOnce, At: at}, "2026-05-01T10:00:00Z", "2026-05-01T10:00:10Z", time.Minute, 10,
			planStrings{Run: []string{"2026-05-01T10:00:00Z"}, Next: "zero"}},
		{"once missed", Spec{Kind: KindOnce, At: at}, "2026-05-01T10:00:00Z", "2026-05-02T10:00:00Z", time.Minute, 10,
			planStrings{Missed: []string{"2026-05-01T10:00:00Z"}, Next: "zero"}},
		{"once handled", Spec{Kind: KindOnce, At: at}, "zero", "2026-05-02T10:00:00Z", time.Minute, 10,
			planStrings{Next: "zero"}},
		{"interval catch-up", Spec{Kind: KindInterval, Every: 10 * time.Minute, Start: at}, "2026-05-01T10:10:00Z", "2026-05-01T11:05:00Z", 30 * time.Minute, 3,
			planStrings{
				Run:        []string{"2026-05-01T10:40:00Z", "2026-05-01T10:50:00Z", "2026-05-01T11:00:00Z"},
				MissedMore: 3,
				Next:       "2026-05-01T11:10:00Z"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := mustParse(t, tt.spec)
			var next time.Time
			if tt.next != "zero" {
				next = mustTime(t, tt.next)
			}
			got := strs(s.Due(next, mustTime(t, tt.now), tt.window, tt.max))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Due (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDueLongDowntime: a year of downtime costs Due work in proportion to
// max and the days passed, never to the number of fires. A cron schedule
// walks the days twice (to count, then to skip) and steps through the fires
// of the partial days at both ends and of the days within a day of a DST
// change, hence the bounds: 2*370 + (2 + 14 if the zone has DST) * fires a day.
func TestDueLongDowntime(t *testing.T) {
	t.Parallel()
	next := mustTime(t, "2025-05-01T00:00:00Z")
	now := mustTime(t, "2026-05-01T00:00:00Z")
	tests := []struct {
		name     string
		spec     Spec
		fires    int
		maxSteps int
	}{
		{"per-second interval", Spec{Kind: KindInterval, Every: time.Second, Start: next.Add(-time.Second)}, 365*24*3600 + 1, 25},
		{"minute cron", Spec{Kind: KindCron, Cron: "* * * * *"}, 365*24*60 + 1, 2*370 + 2*1440},
		{"minute cron in a DST zone", Spec{Kind: KindCron, Cron: "* * * * *", TimeZone: "Europe/Berlin"}, 365*24*60 + 1, 2*370 + 16*1440},
		{"fixed hours in a DST zone", Spec{Kind: KindCron, Cron: "*/5 1-3 * * *", TimeZone: "America/New_York"}, 0, 2*370 + 16*36},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := mustParse(t, tt.spec)
			p, steps := s.due(next, now, time.Minute, 10)
			if steps > tt.maxSteps {
				t.Errorf("Due took %d steps, want at most %d", steps, tt.maxSteps)
			}
			total := len(p.Run) + len(p.Missed) + p.MissedMore
			if tt.fires != 0 && total != tt.fires {
				t.Errorf("Due counted %d fires, want %d", total, tt.fires)
			}
			if len(p.Run)+len(p.Missed) != 10 {
				t.Errorf("Due listed %d fires, want 10", len(p.Run)+len(p.Missed))
			}
		})
	}
}

// TestDueProperties checks Due against walking every fire with Next.
func TestDueProperties(t *testing.T) {
	t.Parallel()
	crons := []string{"* * * * *", "*/15 * * * *", "@hourly", "@daily", "30 2 * * *", "0,30 1-3 * * *",
		"*/7 2 * * 0", "15 */2 1,15 * *", "* 2 * * *", "0 0 * * 1", "59 23 * * *"}
	zones := []string{"", "America/New_York", "Europe/Berlin", "Australia/Lord_Howe", "America/Santiago", "Asia/Kathmandu"}
	// Transitions in 2026 of the zones above, and a quiet day.
	bases := []string{"2026-03-08T07:00:00Z", "2026-11-01T06:00:00Z", "2026-03-29T01:00:00Z", "2026-10-25T01:00:00Z",
		"2026-04-04T15:00:00Z", "2026-10-03T15:30:00Z", "2026-04-05T03:00:00Z", "2026-09-06T04:00:00Z", "2026-07-15T12:00:00Z"}
	rapid.Check(t, func(t *rapid.T) {
		var spec Spec
		switch rapid.IntRange(0, 3).Draw(t, "kind") {
		case 0, 1:
			spec = Spec{Kind: KindCron, Cron: rapid.SampledFrom(crons).Draw(t, "cron"), TimeZone: rapid.SampledFrom(zones).Draw(t, "zone")}
		case 2:
			spec = Spec{Kind: KindInterval, Every: time.Duration(rapid.Int64Range(1, 7200).Draw(t, "every")) * time.Second}
		case 3:
			spec = Spec{Kind: KindOnce}
		}
		base, _ := time.Parse(time.RFC3339, rapid.SampledFrom(bases).Draw(t, "base"))
		next := base.Add(time.Duration(rapid.Int64Range(-3*86400, 86400).Draw(t, "next")) * time.Second)
		now := next.Add(time.Duration(rapid.Int64Range(-3600, 4*86400).Draw(t, "now")) * time.Second)
		if spec.Kind == KindOnce {
			spec.At = next.Add(time.Duration(rapid.Int64Range(-3600, 3*86400).Draw(t, "at")) * time.Second)
		}
		if rapid.Bool().Draw(t, "start") {
			spec.Start = next.Add(time.Duration(rapid.Int64Range(-86400, 86400).Draw(t, "startOffset")) * time.Second)
			if spec.Kind == KindOnce && spec.At.Before(spec.Start) {
				spec.Start = spec.At
			}
		}
		window := time.Duration(rapid.Int64Range(-60, 2*86400).Draw(t, "window")) * time.Second
		max := rapid.IntRange(-1, 50).Draw(t, "max")
		s, err := Parse(spec)
		if err != nil {
			t.Fatalf("Parse: %v", err)
		}

		p := s.Due(next, now, window, max)

		var want []time.Time // every fire in [next, now]
		for f := s.Next(next.Add(-time.Nanosecond)); !f.IsZero() && !f.After(now); f = s.Next(f) {
			want = append(want, f)
		}
		listed := append(append([]time.Time(nil), p.Missed...), p.Run...)
		if max < 1 {
			max = 1
		}
		if len(listed) > max {
			t.Fatalf("listed %d fires, max %d", len(listed), max)
		}
		if got := len(listed) + p.MissedMore; got != len(want) {
			t.Fatalf("Due accounts for %d fires, want %d", got, len(want))
		}
		if diff := cmp.Diff(fmt.Sprint(want[len(want)-len(listed):]), fmt.Sprint(listed)); diff != "" {
			t.Fatalf("listed fires are not the newest, in order (-want +got):\n%s", diff)
		}
		if window <= 0 {
			window = DefaultCatchupWindow
		}
		for _, f := range p.Run {
			if now.Sub(f) > window {
				t.Fatalf("run fire %s is older than the window %s before %s", utc(f), window, utc(now))
			}
		}
		for _, f := range p.Missed {
			if now.Sub(f) <= window {
				t.Fatalf("missed fire %s is inside the window %s before %s", utc(f), window, utc(now))
			}
		}
		if !p.Next.IsZero() && !p.Next.After(now) {
			t.Fatalf("Next %s is not after now %s", utc(p.Next), utc(now))
		}
		if want := s.Next(now); !p.Next.Equal(want) {
			t.Fatalf("Next = %s, want %s", utc(p.Next), utc(want))
		}
	})
}
