package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/runtype"
)

// This file holds the overview's schedules: the active schedules that
// fire soonest, and those whose last fires failed (paused for it among
// them), as the runtime's ScheduleOverview reads them.

// schedulesOverview is the overview's "schedules" object.
type schedulesOverview struct {
	// NextFires are the active schedules that fire soonest, soonest
	// first (at most 5).
	NextFires []scheduleOverview `json:"nextFires"`
	// Failing are the schedules whose last fires failed (at most 5).
	Failing []scheduleOverview `json:"failing"`
}

type scheduleOverview struct {
	ScheduleID string                 `json:"scheduleId"`
	Name       string                 `json:"name,omitempty"`
	Agent      string                 `json:"agent"`
	Instance   string                 `json:"instance,omitempty"`
	When       string                 `json:"when"`
	Status     runtype.ScheduleStatus `json:"status"`
	// PausedReason is operator or consecutive_failures when paused.
	PausedReason        string     `json:"pausedReason,omitempty"`
	NextFireAt          *time.Time `json:"nextFireAt"`
	Running             int        `json:"running"`
	ConsecutiveFailures int        `json:"consecutiveFailures"`
}

// readScheduleOverview reads the overview's schedules from b; nil
// without an error from a server that predates schedules (404).
func readScheduleOverview(ctx context.Context, b backend) (*schedulesOverview, error) {
	ov, err := b.ScheduleOverview(ctx, &apitype.ScheduleOverviewParams{})
	switch {
	case errors.Is(err, apitype.ErrNotFound):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading the schedules overview: %w", err)
	}
	so := &schedulesOverview{NextFires: scheduleOverviews(ov.NextFires), Failing: scheduleOverviews(ov.Failing)}
	return so, nil
}

func scheduleOverviews(rs []apitype.ScheduleRead) []scheduleOverview {
	out := make([]scheduleOverview, len(rs))
	for i := range rs {
		r := &rs[i]
		out[i] = scheduleOverview{
			ScheduleID: r.ScheduleID, Name: r.Name, Agent: r.Agent, Instance: r.Instance, When: whenText(&r.ScheduleSpec),
			Status: r.Status, PausedReason: r.PausedReason, NextFireAt: r.NextFireAt, Running: r.Running,
			ConsecutiveFailures: r.ConsecutiveFailures,
		}
	}
	return out
}

// printScheduleOverview prints the schedules section; nothing when no
// schedule fires or fails (or the server predates schedules).
func printScheduleOverview(w io.Writer, so *schedulesOverview, now time.Time, st style) {
	if so == nil || len(so.NextFires) == 0 && len(so.Failing) == 0 {
		return
	}
	fmt.Fprintf(w, "%-10s %s firing next, %d failing\n", "schedules", plural(len(so.NextFires), "schedule"), len(so.Failing))
	if len(so.NextFires) > 0 {
		t := newTable("SCHEDULE", "NAME", "AGENT", "WHEN", "NEXT FIRE", "RUNNING")
		for _, s := range so.NextFires {
			t.row(s.ScheduleID, orDash(s.Name), s.Agent, s.When, nextFireText(now, s.NextFireAt), strconv.Itoa(s.Running))
		}
		t.write(w, "           ", st)
	}
	if len(so.Failing) > 0 {
		t := newTable("FAILING", "NAME", "AGENT", "STATUS", "FAILURES", "NEXT FIRE")
		t.paint[3] = st.status
		for _, s := range so.Failing {
			status := string(s.Status)
			if s.PausedReason != "" && s.Status == runtype.SchedulePaused {
				status += " " + s.PausedReason
			}
			t.row(s.ScheduleID, orDash(s.Name), s.Agent, status, strconv.Itoa(s.ConsecutiveFailures)+" in a row", nextFireText(now, s.NextFireAt))
		}
		t.write(w, "           ", st)
	}
}
