package agentrt

import (
	"context"
	"fmt"
	"time"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/store"
)

// Subscription reads committed events in cursor order: first those already
// in the store after the starting cursor, then new ones as they commit. It
// never misses or repeats an event and never slows the runtime: it reads
// from the store, and the bus only wakes it. Use it from one goroutine.
type Subscription struct {
	rt     *Runtime
	filter event.Filter
	cursor int64
	waiter *event.Waiter
	buf    []*event.Event
}

// subscribeBatch is how many events one store read fetches.
const subscribeBatch = 256

// Subscribe starts a subscription. Close it when done.
func (rt *Runtime) Subscribe(ctx context.Context, p *apitype.SubscribeParams) (*Subscription, error) {
	if !rt.running() {
		return nil, apitype.ErrStopped
	}
	f := event.Filter{TenantID: tenantOf(p.Owner), SessionID: p.SessionID, TurnID: p.TurnID}
	// Register with the bus before the first read so no commit falls between.
	return &Subscription{rt: rt, filter: f, cursor: p.AfterCursor, waiter: rt.bus.Subscribe(f)}, nil
}

// Next returns the next event, waiting for one to commit. It returns
// ctx's cause when ctx ends and ErrStopped when the runtime stops.
func (s *Subscription) Next(ctx context.Context) (*event.Event, error) {
	for len(s.buf) == 0 {
		evs, err := s.read(ctx)
		if err != nil {
			return nil, err
		}
		if len(evs) > 0 {
			s.buf = evs
			break
		}
		select {
		case <-s.waiter.C():
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		case <-s.rt.baseCtx.Done():
			return nil, apitype.ErrStopped
		}
	}
	e := s.buf[0]
	s.buf = s.buf[1:]
	s.cursor = e.Cursor
	return e, nil
}

// Buffered reports whether Next can return without reading the store.
func (s *Subscription) Buffered() bool { return len(s.buf) > 0 }

// Cursor is the cursor of the last event Next returned.
func (s *Subscription) Cursor() int64 { return s.cursor }

// Close ends the subscription.
func (s *Subscription) Close() { s.waiter.Close() }

// TryNext is Next that does not wait: it returns nil, nil when no event is
// available yet.
func (s *Subscription) TryNext(ctx context.Context) (*event.Event, error) {
	if len(s.buf) == 0 {
		evs, err := s.read(ctx)
		if err != nil {
			return nil, err
		}
		if len(evs) == 0 {
			return nil, nil
		}
		s.buf = evs
	}
	e := s.buf[0]
	s.buf = s.buf[1:]
	s.cursor = e.Cursor
	return e, nil
}

// read fetches the next events from the store. Errors caused by ctx or by
// the runtime stopping (which closes the store) are reported as such.
func (s *Subscription) read(ctx context.Context) ([]*event.Event, error) {
	evs, err := s.rt.store.EventListAfter(ctx, &store.EventListAfterParams{Filter: s.filter, AfterCursor: s.cursor, Limit: subscribeBatch})
	switch {
	case err == nil:
		return evs, nil
	case ctx.Err() != nil:
		return nil, context.Cause(ctx)
	case !s.rt.running():
		return nil, apitype.ErrStopped
	}
	return nil, fmt.Errorf("reading events: %w", err)
}

// notify tells this process's subscribers of events it committed, and
// notes the newest cursor it committed.
func (rt *Runtime) notify(events []*event.Event) {
	var last int64
	for _, e := range events {
		last = max(last, e.Cursor)
	}
	for {
		cur := rt.ownCursor.Load()
		if last <= cur || rt.ownCursor.CompareAndSwap(cur, last) {
			break
		}
	}
	rt.bus.Notify(events)
}

// watchLog wakes this process's subscribers when another process on the
// same store committed events, which the bus never hears of: every poll
// it reads the log's last cursor, and a cursor that moved past what
// this process committed wakes every subscriber to look again.
func (rt *Runtime) watchLog(ctx context.Context) {
	defer close(rt.watchDone)
	tick := time.NewTicker(rt.cfg.PollInterval)
	defer tick.Stop()
	var seen int64
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		cur, err := rt.store.EventLastCursor(ctx)
		if err != nil {
			continue // the health read reports a store that fails
		}
		if cur > seen && cur > rt.ownCursor.Load() {
			rt.bus.WakeAll()
		}
		seen = cur
	}
}
