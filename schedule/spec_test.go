package schedule

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseErrors(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		spec Spec
		want string
	}{
		{"no kind", Spec{Cron: "* * * * *"}, "kind: required (cron, interval or once)"},
		{"unknown kind", Spec{Kind: "weekly"}, `kind: unknown kind "weekly" (want cron, interval or once)`},
		{"three fields", Spec{Kind: KindCron, Cron: "1 2 3"}, "cron: expected 5 fields, got 3"},
		{"six fields", Spec{Kind: KindCron, Cron: "0 1 2 3 4 5"}, "cron: expected 5 fields, got 6"},
		{"empty cron", Spec{Kind: KindCron}, "cron: required for a cron schedule"},
		{"cron tz prefix", Spec{Kind: KindCron, Cron: "CRON_TZ=Europe/Berlin 0 9 * * *"},
			`cron: "CRON_TZ=Europe/Berlin 0 9 * * *" carries a time zone: put the zone in timeZone`},
		{"tz prefix", Spec{Kind: KindCron, Cron: "TZ=UTC @daily"}, `cron: "TZ=UTC @daily" carries a time zone: put the zone in timeZone`},
		{"every descriptor", Spec{Kind: KindCron, Cron: "@every 1h"}, `cron: "@every 1h": use an interval schedule for a fixed interval`},
		{"bad descriptor", Spec{Kind: KindCron, Cron: "@fortnightly"}, "cron: unrecognized descriptor: @fortnightly"},
		{"bad field", Spec{Kind: KindCron, Cron: "61 * * * *"}, "cron: end of range (61) above maximum (59): 61"},
		{"never fires", Spec{Kind: KindCron, Cron: "0 0 31 4 *"}, `cron: "0 0 31 4 *" never fires`},
		{"unknown zone", Spec{Kind: KindCron, Cron: "@daily", TimeZone: "Mars/Base"}, `timeZone: unknown time zone "Mars/Base"`},
		{"local zone", Spec{Kind: KindCron, Cron: "@daily", TimeZone: "Local"},
			`timeZone: "Local" depends on the machine: name an IANA zone such as "Europe/Berlin"`},
		{"every too short", Spec{Kind: KindInterval, Every: 500 * time.Millisecond}, "every: must be at least 1s, got 500ms"},
		{"every missing", Spec{Kind: KindInterval}, "every: must be at least 1s, got 0s"},
		{"at missing", Spec{Kind: KindOnce}, "at: required for a once schedule"},
		{"at before start", Spec{Kind: KindOnce, At: at, Start: at.Add(time.Hour)},
			"at: 2026-05-01T12:00:00Z is before start 2026-05-01T13:00:00Z"},
		{"every in cron", Spec{Kind: KindCron, Cron: "@daily", Every: time.Hour}, "every: not allowed in a cron schedule"},
		{"cron in interval", Spec{Kind: KindInterval, Cron: "@daily", Every: time.Hour}, "cron: not allowed in a interval schedule"},
		{"at in interval", Spec{Kind: KindInterval, At: at, Every: time.Hour}, "at: not allowed in a interval schedule"},
		{"cron in once", Spec{Kind: KindOnce, Cron: "@daily", At: at}, "cron: not allowed in a once schedule"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, err := Parse(tt.spec)
			if err == nil {
				t.Fatalf("Parse(%+v) = %v, want error %q", tt.spec, s, tt.want)
			}
			if diff := cmp.Diff(tt.want, err.Error()); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
		})
	}
}

// TestNext pins the fires of each kind outside DST changes.
func TestNext(t *testing.T) {
	t.Parallel()
	start := mustTime(t, "2026-05-01T10:00:00Z")
	tests := []struct {
		name  string
		spec  Spec
		after string
		want  []string // successive fires
	}{
		{"cron utc", Spec{Kind: KindCron, Cron: "0 9 * * 1-5"}, "2026-05-01T09:00:00Z",
			[]string{"2026-05-04T09:00:00Z", "2026-05-05T09:00:00Z"}},
		{"cron zone", Spec{Kind: KindCron, Cron: "0 9 * * *", TimeZone: "Asia/Tokyo"}, "2026-05-01T00:00:00Z",
			[]string{"2026-05-02T00:00:00Z", "2026-05-03T00:00:00Z"}},
		{"cron descriptor", Spec{Kind: KindCron, Cron: "@daily", TimeZone: "Europe/Berlin"}, "2026-05-01T00:00:00Z",
			[]string{"2026-05-01T22:00:00Z", "2026-05-02T22:00:00Z"}},
		{"cron fractional after", Spec{Kind: KindCron, Cron: "* * * * *"}, "2026-05-01T09:00:00.5Z",
			[]string{"2026-05-01T09:01:00Z", "2026-05-01T09:02:00Z"}},
		{"cron not before start", Spec{Kind: KindCron, Cron: "@hourly", Start: start}, "2026-01-01T00:00:00Z",
			[]string{"2026-05-01T10:00:00Z", "2026-05-01T11:00:00Z"}},
		{"interval anchored", Spec{Kind: KindInterval, Every: 90 * time.Minute, Start: start}, "2026-01-01T00:00:00Z",
			[]string{"2026-05-01T11:30:00Z", "2026-05-01T13:00:00Z", "2026-05-01T14:30:00Z"}},
		{"interval between", Spec{Kind: KindInterval, Every: 90 * time.Minute, Start: start}, "2026-05-01T12:00:00Z",
			[]string{"2026-05-01T13:00:00Z", "2026-05-01T14:30:00Z"}},
		{"interval on a fire", Spec{Kind: KindInterval, Every: 90 * time.Minute, Start: start}, "2026-05-01T13:00:00Z",
			[]string{"2026-05-01T14:30:00Z"}},
		{"interval epoch", Spec{Kind: KindInterval, Every: time.Hour}, "2026-05-01T10:20:00Z",
			[]string{"2026-05-01T11:00:00Z", "2026-05-01T12:00:00Z"}},
		{"once ahead", Spec{Kind: KindOnce, At: start}, "2026-05-01T09:59:59Z",
			[]string{"2026-05-01T10:00:00Z", "zero"}},
		{"once passed", Spec{Kind: KindOnce, At: start}, "2026-05-01T10:00:00Z",
			[]string{"zero"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, err := Parse(tt.spec)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.spec, s.Spec()); diff != "" {
				t.Errorf("Spec() (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(fires(s, mustTime(t, tt.after), len(tt.want)), tt.want); diff != "" {
				t.Errorf("fires (-want +got):\n%s", diff)
			}
		})
	}
}

// fires returns n successive fires after after, "zero" past the last.
func fires(s *Schedule, after time.Time, n int) []string {
	var got []string
	for t := after; len(got) < n; {
		t = s.Next(t)
		got = append(got, utc(t))
		if t.IsZero() {
			break
		}
		if t.Location() != time.UTC {
			got = append(got, "not UTC: "+t.Location().String())
		}
	}
	return got
}

func TestLocation(t *testing.T) {
	t.Parallel()
	for zone, want := range map[string]string{"": "UTC", "Europe/Berlin": "Europe/Berlin"} {
		s, err := Parse(Spec{Kind: KindCron, Cron: "@daily", TimeZone: zone})
		if err != nil {
			t.Fatal(err)
		}
		if got := s.Location().String(); got != want {
			t.Errorf("Location() of %q = %s, want %s", zone, got, want)
		}
	}
}
