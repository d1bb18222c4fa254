package store_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

// TestNotificationOf: what a transaction's batches say to other
// processes. Claims and renewals, a step's records and a last-use update
// say nothing another process waits for; the rest does.
func TestNotificationOf(t *testing.T) {
	now := time.Now()
	cancel, pause := runtype.ControlCancel, runtype.ControlPause
	for _, tt := range []struct {
		name string
		bs   []*store.Batch
		want store.Notification
	}{
		{"claim and renewal", []*store.Batch{{Leases: []*store.LeaseChange{{TaskID: "t1", Claim: true, Owner: "w"}, {TaskID: "t2", Owner: "w", ExpiresAt: now}}}}, store.Notification{}},
		{"a step's records", []*store.Batch{{Runs: []*runtype.Run{{}}, Turns: []*runtype.Turn{{}}, Tasks: []*runtype.Task{{Status: runtype.StatusRunning}}}}, store.Notification{}},
		{"a token's last use", []*store.Batch{{TokenUpdates: []*store.TokenUpdate{{ID: "k", LastUsedAt: &now}}}}, store.Notification{}},
		{"a release alone", []*store.Batch{{Leases: []*store.LeaseChange{{TaskID: "t1"}}}}, store.Notification{Tasks: true, AnyRested: true}},
		{"a run's last write: its turn ended, its task let go of", []*store.Batch{{
			Turns:  []*runtype.Turn{{ID: "u1", TaskID: "t1", Status: runtype.StatusCompleted}},
			Leases: []*store.LeaseChange{{TaskID: "t1"}},
		}}, store.Notification{Tasks: true, Rested: []string{"u1"}}},
		{"a yield: its task let go of, due again", []*store.Batch{{
			Turns:  []*runtype.Turn{{ID: "u1", TaskID: "t1", Status: runtype.StatusQueued}},
			Leases: []*store.LeaseChange{{TaskID: "t1", DueAt: now}},
		}}, store.Notification{Tasks: true, Rested: []string{"u1"}}},
		{"turns at rest, once each", []*store.Batch{
			{Turns: []*runtype.Turn{{ID: "u1", Status: runtype.StatusCancelled}, {ID: "u2", Status: runtype.StatusRunning}}},
			{Turns: []*runtype.Turn{{ID: "u1", Status: runtype.StatusCancelled}, {ID: "u3", Status: runtype.StatusWaitingPermission}}},
		}, store.Notification{Rested: []string{"u1", "u3"}}},
		{"a queued task", []*store.Batch{{Tasks: []*runtype.Task{{Status: runtype.StatusQueued}}}}, store.Notification{Tasks: true}},
		{"controls, once each", []*store.Batch{
			{TaskUpdates: []*store.TaskUpdate{{TaskID: "t1", Control: &cancel}, {TaskID: "t2", DueAt: &now}}},
			{TaskUpdates: []*store.TaskUpdate{{TaskID: "t1", Control: &pause}, {TaskID: "t3", Control: &pause}}},
		}, store.Notification{Tasks: true, Controls: []string{"t1", "t3"}}},
		{"everything else", []*store.Batch{
			{Events: []*event.Event{{}}, SessionModes: []*store.SessionMode{{}}},
			{Limits: []*runtype.Limit{{}}, TokenUpdates: []*store.TokenUpdate{{ID: "k", RevokedAt: &now}}, ScheduleWakes: []*store.ScheduleWake{{}}},
		}, store.Notification{Events: true, Policy: true, Limits: true, Tokens: true, Schedules: true}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := store.NotificationOf(tt.bs)
			if diff := cmp.Diff(&tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if got.Empty() != cmp.Equal(tt.want, store.Notification{}) {
				t.Errorf("Empty() = %v for %+v", got.Empty(), got)
			}
		})
	}
}
