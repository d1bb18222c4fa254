package schedule

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestNextDST pins Vixie cron's DST rules with exact instants: a fixed-hour
// time in the spring-forward gap fires once when the gap ends, one in the
// repeated hour fires once at its first occurrence, and every-hour specs
// fire by real time.
func TestNextDST(t *testing.T) {
	t.Parallel()
	const ny, berlin = "America/New_York", "Europe/Berlin"
	tests := []struct {
		name, zone, cron, after string
		want                    []string
	}{
		// New York: 2026-03-08 02:00 EST -> 03:00 EDT (07:00Z);
		// 2026-11-01 02:00 EDT -> 01:00 EST (06:00Z).
		{"ny gap fires at gap end", ny, "30 2 * * *", "2026-03-07T08:00:00Z",
			[]string{"2026-03-08T07:00:00Z", "2026-03-09T06:30:00Z"}},
		{"ny gap from just before", ny, "30 2 * * *", "2026-03-08T06:59:59Z",
			[]string{"2026-03-08T07:00:00Z", "2026-03-09T06:30:00Z"}},
		{"ny gap times fire once", ny, "0,20,40 2 * * *", "2026-03-08T06:00:00Z",
			[]string{"2026-03-08T07:00:00Z", "2026-03-09T06:00:00Z"}},
		{"ny gap merges with 3:00", ny, "0 2,3 * * *", "2026-03-08T06:00:00Z",
			[]string{"2026-03-08T07:00:00Z", "2026-03-09T06:00:00Z"}},
		{"ny repeated hour once", ny, "30 1 * * *", "2026-10-31T06:00:00Z",
			[]string{"2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z"}},
		{"ny repeated hour from inside", ny, "30 1 * * *", "2026-11-01T06:10:00Z",
			[]string{"2026-11-02T06:30:00Z"}},
		{"ny every minute of hour 1", ny, "*/20 1 * * *", "2026-11-01T05:00:00Z",
			[]string{"2026-11-01T05:20:00Z", "2026-11-01T05:40:00Z", "2026-11-02T06:00:00Z"}},
		{"ny quarter-hourly spring", ny, "*/15 * * * *", "2026-03-08T06:30:00Z",
			[]string{"2026-03-08T06:45:00Z", "2026-03-08T07:00:00Z", "2026-03-08T07:15:00Z"}},
		{"ny quarter-hourly fall", ny, "*/15 * * * *", "2026-11-01T05:30:00Z",
			[]string{"2026-11-01T05:45:00Z", "2026-11-01T06:00:00Z", "2026-11-01T06:15:00Z",
				"2026-11-01T06:30:00Z", "2026-11-01T06:45:00Z", "2026-11-01T07:00:00Z"}},
		{"ny hourly spring", ny, "@hourly", "2026-03-08T05:30:00Z",
			[]string{"2026-03-08T06:00:00Z", "2026-03-08T07:00:00Z", "2026-03-08T08:00:00Z"}},
		{"ny hourly fall", ny, "@hourly", "2026-11-01T04:30:00Z",
			[]string{"2026-11-01T05:00:00Z", "2026-11-01T06:00:00Z", "2026-11-01T07:00:00Z"}},
		// Berlin: 2026-03-29 02:00 CET -> 03:00 CEST (01:00Z);
		// 2026-10-25 03:00 CEST -> 02:00 CET (01:00Z).
		{"berlin gap fires at gap end", berlin, "30 2 * * *", "2026-03-28T02:00:00Z",
			[]string{"2026-03-29T01:00:00Z", "2026-03-30T00:30:00Z"}},
		{"berlin repeated hour once", berlin, "30 2 * * *", "2026-10-24T02:00:00Z",
			[]string{"2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"}},
		{"berlin daily midnight", berlin, "@daily", "2026-03-28T00:00:00Z",
			[]string{"2026-03-28T23:00:00Z", "2026-03-29T22:00:00Z"}},
		{"berlin quarter-hourly spring", berlin, "*/15 * * * *", "2026-03-29T00:40:00Z",
			[]string{"2026-03-29T00:45:00Z", "2026-03-29T01:00:00Z", "2026-03-29T01:15:00Z"}},
		{"berlin quarter-hourly fall", berlin, "*/15 * * * *", "2026-10-25T00:40:00Z",
			[]string{"2026-10-25T00:45:00Z", "2026-10-25T01:00:00Z", "2026-10-25T01:15:00Z"}},
		{"berlin hourly fall", berlin, "@hourly", "2026-10-24T23:30:00Z",
			[]string{"2026-10-25T00:00:00Z", "2026-10-25T01:00:00Z", "2026-10-25T02:00:00Z"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, err := Parse(Spec{Kind: KindCron, Cron: tt.cron, TimeZone: tt.zone})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, fires(s, mustTime(t, tt.after), len(tt.want))); diff != "" {
				t.Errorf("fires (-want +got):\n%s", diff)
			}
		})
	}
}
