package agentrt

import (
	"context"
	"errors"

	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/loop"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

// This file holds how a runtime hears what other processes on its store
// commit. A store that is a store.Notifier (PostgreSQL) tells of each
// commit of another node; the runtime then wakes at once what would
// otherwise wait for its next poll, and drops what it keeps from the
// store. Without one (SQLite, memory) the polls stay the only way: the
// log watcher (subscribe.go), the dispatcher's and scheduler's polls, the
// heartbeat's look at its task's control, WaitTurn's poll.
//
// What a process keeps from the store, and how it stays true:
//   - the governor's session modes and grants (approval.go): dropped on
//     Policy;
//   - the budget ledger's limits and spend of the runs in flight
//     (loop.Ledger): read again on Limits;
//   - a held task's control (claim.pause, its context): read again on
//     Controls naming it;
//   - the writer's event sequences (store.Writer): a batch that used a
//     stale one conflicts and is retried once with sequences read anew;
//   - the session → tenant map (rt.tenants) never changes; tokens are
//     read through (Authenticate); rt.tokenUses only spares writes.

// listen hears the store's notifications until ctx ends, when the store
// is a Notifier; it closes rt.listenDone when it returns.
func (rt *Runtime) listen(ctx context.Context) {
	defer close(rt.listenDone)
	n, ok := rt.store.(store.Notifier)
	if !ok {
		return
	}
	err := n.Listen(ctx, func(n *store.Notification) { rt.heard(ctx, n) })
	if err != nil && ctx.Err() == nil {
		rt.cfg.Logger.Error("listening for other nodes' commits", "err", err)
	}
}

// heard acts on what another process committed.
func (rt *Runtime) heard(ctx context.Context, n *store.Notification) {
	if n.All || n.Events {
		rt.bus.WakeAll() // subscribers, and runs waiting for an answer
	}
	// WaitTurn: the waiters of the turns that came to rest look again,
	// not every waiter at every commit of another node.
	if n.All || n.AnyRested {
		rt.settles.WakeAll()
	} else if len(n.Rested) > 0 {
		rested := make([]*event.Event, len(n.Rested))
		for i, id := range n.Rested {
			rested[i] = &event.Event{TurnID: id}
		}
		rt.settles.Notify(rested)
	}
	if n.All || n.Tasks {
		rt.kick()
	}
	if n.All || n.Schedules {
		rt.kickScheduler()
	}
	if n.All || n.Policy {
		rt.gov.invalidate()
	}
	if n.All || n.Limits {
		if err := rt.ledger.Reload(ctx); err != nil && ctx.Err() == nil {
			rt.cfg.Logger.Error("reading budget limits again", "err", err)
		}
		// A run of this process may have checked the old limit: should it
		// park on it, it is due again at once (the other process's wake
		// found it held).
		rt.mu.Lock()
		for _, c := range rt.claims {
			c.rewake.Store(true)
		}
		rt.mu.Unlock()
	}
	if n.All || len(n.Controls) > 0 {
		rt.heedControls(ctx, n.All, n.Controls)
	}
}

// heedControls reads again the control of the tasks this process's
// workers hold (those of ids, or all) and acts on it at once, as the
// heartbeat would at its next tick.
func (rt *Runtime) heedControls(ctx context.Context, all bool, ids []string) {
	var held []*claim
	rt.mu.Lock()
	if all {
		for _, c := range rt.claims {
			held = append(held, c)
		}
	} else {
		for _, id := range ids {
			if c, ok := rt.claims[id]; ok {
				held = append(held, c)
			}
		}
	}
	rt.mu.Unlock()
	for _, c := range held {
		t, err := rt.store.TaskGet(ctx, &store.TaskGetParams{TenantID: c.task.TenantID, ID: c.task.ID})
		switch {
		case err == nil:
			heedControl(c, t)
		case !errors.Is(err, context.Canceled):
			rt.cfg.Logger.Error("reading a task's control", "taskId", c.task.ID, "err", err)
		}
	}
}

// heedControl makes the attempt a claim runs follow its task's control as
// read from the store: a cancel, rollback or retry request cancels it, a
// pause makes it park paused before its next model call.
func heedControl(c *claim, t *runtype.Task) {
	if cause := loop.ControlCause(t.Control); cause != nil {
		c.cancel(cause)
	} else if t.Control == runtype.ControlPause {
		c.pause.Store(true)
	}
}
