package cli

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/runtype"
)

// scheduleBackend answers the overview's schedules read.
type scheduleBackend struct {
	backend // nothing else is called
	ov      *apitype.ScheduleOverview
	err     error
}

func (b *scheduleBackend) ScheduleOverview(context.Context, *apitype.ScheduleOverviewParams) (*apitype.ScheduleOverview, error) {
	return b.ov, b.err
}

// TestOverviewSchedules: the overview's schedules section lists the
// schedules that fire next, with their next fire relative and absolute,
// and the failing ones with why they are paused; it says nothing without
// schedules, or from a server that predates them (404), and fails on any
// other error.
func TestOverviewSchedules(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 28, 1, 0, 0, 0, time.UTC)
	next := now.Add(65 * time.Minute)
	b := &scheduleBackend{ov: &apitype.ScheduleOverview{
		NextFires: []apitype.ScheduleRead{{ScheduleID: "sch_1", ScheduleSpec: apitype.ScheduleSpec{Name: "nightly", Agent: "digest", Kind: "cron", Cron: "5 2 * * *", TimeZone: "UTC"},
			Status: runtype.ScheduleActive, NextFireAt: &next, Running: 1}},
		Failing: []apitype.ScheduleRead{{ScheduleID: "sch_2", ScheduleSpec: apitype.ScheduleSpec{Agent: "support", Kind: "interval", Every: "4h"},
			Status: runtype.SchedulePaused, PausedReason: "consecutive_failures", ConsecutiveFailures: 3}},
	}}
	so, err := readScheduleOverview(t.Context(), b)
	if err != nil {
		t.Fatal(err)
	}
	want := &schedulesOverview{
		NextFires: []scheduleOverview{{ScheduleID: "sch_1", Name: "nightly", Agent: "digest", When: "cron 5 2 * * * UTC", Status: runtype.ScheduleActive, NextFireAt: &next, Running: 1}},
		Failing: []scheduleOverview{{ScheduleID: "sch_2", Agent: "support", When: "every 4h", Status: runtype.SchedulePaused,
			PausedReason: "consecutive_failures", ConsecutiveFailures: 3}},
	}
	if d := cmp.Diff(want, so); d != "" {
		t.Errorf("schedules overview (-want +got):\n%s", d)
	}
	var out bytes.Buffer
	printScheduleOverview(&out, so, now, style{})
	wantText := "schedules  1 schedule firing next, 1 failing\n" +
		"           SCHEDULE  NAME     AGENT   WHEN                NEXT FIRE                        RUNNING\n" +
		"           sch_1     nightly  digest  cron 5 2 * * * UTC  in 1h05m (2026-11-28 02:05 UTC)  1\n" +
		"           FAILING  NAME  AGENT    STATUS                       FAILURES    NEXT FIRE\n" +
		"           sch_2    -     support  paused consecutive_failures  3 in a row  -\n"
	if d := cmp.Diff(wantText, out.String()); d != "" {
		t.Errorf("printed (-want +got):\n%s", d)
	}

	for _, empty := range []*schedulesOverview{nil, {NextFires: []scheduleOverview{}, Failing: []scheduleOverview{}}} {
		out.Reset()
		printScheduleOverview(&out, empty, now, style{})
		if out.Len() != 0 {
			t.Errorf("printed %q for %+v, want nothing", out.String(), empty)
		}
	}
	so, err = readScheduleOverview(t.Context(), &scheduleBackend{err: apitype.ErrNotFound})
	if so != nil || err != nil {
		t.Errorf("from a server without schedules: %+v, %v; want nil, nil", so, err)
	}
	boom := errors.New("boom")
	if _, err := readScheduleOverview(t.Context(), &scheduleBackend{err: boom}); !errors.Is(err, boom) {
		t.Errorf("err = %v, want boom", err)
	}
}

// TestShortDuration: a schedule's interval shows without its zero units.
func TestShortDuration(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"1h0m0s": "1h", "1h30m0s": "1h30m", "2m0s": "2m", "1m30s": "1m30s", "90s": "1m30s", "45s": "45s", "36h": "36h", "daily": "daily"} {
		if got := shortDuration(in); got != want {
			t.Errorf("shortDuration(%q) = %q, want %q", in, got, want)
		}
	}
}
