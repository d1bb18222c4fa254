package store

import (
	"context"
	"slices"

	"github.com/agentrt/agentrt/runtype"
)

// Notifier is a Store that hears what other handles on the same database
// (other processes, other nodes) commit, so that a runtime need not wait
// for its next poll to see it. A store without notifications (SQLite,
// memory) is not one; its runtimes poll.
type Notifier interface {
	// Listen calls fn with what each transaction of another handle
	// committed, in commit order, from one goroutine, until ctx ends;
	// then it returns ctx's cause. It does not report this handle's own
	// commits: its process knows of them. Whenever it may have missed
	// some (its first connection, a reconnection) it reports one with
	// All set. fn must not block for long: notifications wait for it.
	Listen(ctx context.Context, fn func(*Notification)) error
}

// Notification says what a committed transaction of another handle
// changed, coarsely: enough to know which caches to drop and which loops
// to wake, never the records themselves (read them from the store).
type Notification struct {
	// All: anything may have changed. The change was too big to
	// describe, or the notifier may have missed notifications.
	All bool
	// Events: events were appended.
	Events bool
	// Tasks: tasks were queued, made due (a wake) or let go of (a
	// released lease).
	Tasks bool
	// Rested are the turns, by ID, that came to rest (see
	// runtype.TaskStatus.Resting) or whose task was let go of: whoever
	// waits for one of them to settle looks again.
	Rested []string
	// AnyRested: a task was let go of whose turn the transaction did not
	// write: any turn may have come to rest.
	AnyRested bool
	// Controls are the tasks whose control changed (a cancel, pause,
	// resume, retry or rollback request), by ID.
	Controls []string
	// Policy: sessions' permission modes or standing grants changed.
	Policy bool
	// Limits: budget limits changed.
	Limits bool
	// Tokens: API tokens were created or revoked.
	Tokens bool
	// Schedules: schedules were written, woken or fired.
	Schedules bool
}

// Empty reports whether n says nothing changed.
func (n *Notification) Empty() bool {
	return !n.All && !n.Events && !n.Tasks && len(n.Rested) == 0 && !n.AnyRested && len(n.Controls) == 0 &&
		!n.Policy && !n.Limits && !n.Tokens && !n.Schedules
}

// NotificationOf describes what the batches of one transaction change,
// for a Notifier to tell other handles.
func NotificationOf(applied []*Batch) *Notification {
	n := &Notification{}
	for _, b := range applied {
		n.Events = n.Events || len(b.Events) > 0
		n.Policy = n.Policy || len(b.SessionModes) > 0 || len(b.Grants) > 0
		n.Limits = n.Limits || len(b.Limits) > 0
		n.Schedules = n.Schedules || len(b.Schedules) > 0 || len(b.ScheduleWakes) > 0 || len(b.Fires) > 0
		for _, u := range b.TokenUpdates {
			n.Tokens = n.Tokens || u.RevokedAt != nil // a last use changes nothing anyone decides by
		}
		n.Tokens = n.Tokens || len(b.Tokens) > 0
		for _, t := range b.Tasks {
			n.Tasks = n.Tasks || t.Status == runtype.StatusQueued
		}
		for _, u := range b.Turns {
			if u.Status.Resting() && !slices.Contains(n.Rested, u.ID) {
				n.Rested = append(n.Rested, u.ID)
			}
		}
		for _, l := range b.Leases {
			if l.Claim || l.Owner != "" {
				continue // claims and renewals (many) say nothing
			}
			// A release: a run's last write names its turn.
			n.Tasks = true
			named := false
			for _, u := range b.Turns {
				if u.TaskID == l.TaskID {
					named = true
					if !slices.Contains(n.Rested, u.ID) {
						n.Rested = append(n.Rested, u.ID)
					}
				}
			}
			n.AnyRested = n.AnyRested || !named
		}
		for _, u := range b.TaskUpdates {
			n.Tasks = n.Tasks || u.DueAt != nil && !u.DueAt.IsZero()
			if u.Control != nil && !slices.Contains(n.Controls, u.TaskID) {
				n.Controls = append(n.Controls, u.TaskID)
			}
		}
	}
	return n
}
