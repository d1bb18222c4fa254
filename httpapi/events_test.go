package httpapi_test

import (
	"context"
	"net/http"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/sqlitestore"
)

// twoSessions submits one turn in each of two sessions and waits for both.
func twoSessions(t *testing.T, b *testBundle) (a, other apitype.SubmitTurnResult) {
	t.Helper()
	a = b.submit(t, apitype.SubmitTurnRequest{Input: "first"})
	other = b.submit(t, apitype.SubmitTurnRequest{Input: "second"})
	b.wait(t, a.TurnID)
	b.wait(t, other.TurnID)
	return a, other
}

// readAll reads GET /v1/events?follow=false&query to its end.
func (b *testBundle) readAll(t *testing.T, query string, header map[string]string) []sseEvent {
	t.Helper()
	s := b.openEvents(t, "follow=false&"+query, header)
	defer s.close()
	return s.all()
}

// TestEventsCatchUp: ?follow=false streams the whole log, every message
// well-formed and valid against the standard, and then ends.
func TestEventsCatchUp(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	a, other := twoSessions(t, b)
	evs := b.readAll(t, "", nil)
	if diff := cmp.Diff(b.logIDs(t, apitype.SubscribeParams{}), eventIDs(evs)); diff != "" {
		t.Errorf("stream vs the runtime's log (-log +stream):\n%s", diff)
	}
	ended := map[string]string{}
	for _, e := range evs {
		if e.Type == "turn.completed" || e.Type == "turn.failed" {
			ended[e.TurnID] = e.Type
		}
	}
	if diff := cmp.Diff(map[string]string{a.TurnID: "turn.completed", other.TurnID: "turn.completed"}, ended); diff != "" {
		t.Errorf("turn endings in the stream (-want +got):\n%s", diff)
	}
	// follow=0 is the same.
	s := b.openEvents(t, "follow=0", nil)
	defer s.close()
	if diff := cmp.Diff(eventIDs(evs), eventIDs(s.all())); diff != "" {
		t.Errorf("follow=0 vs follow=false (-false +0):\n%s", diff)
	}
}

// TestEventsResume: a reconnection with Last-Event-ID (or ?after=) gets
// exactly the events after that id.
func TestEventsResume(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	twoSessions(t, b)
	full := b.readAll(t, "", nil)
	if len(full) < 4 {
		t.Fatalf("the log holds %d events", len(full))
	}
	mid := full[len(full)/2]
	after := eventIDs(full[len(full)/2+1:])
	last := strconv.FormatInt(full[len(full)-1].Cursor, 10)
	midID := strconv.FormatInt(mid.Cursor, 10)
	tests := []struct {
		name   string
		query  string
		header map[string]string
		want   []string
	}{
		{"Last-Event-ID", "", map[string]string{"Last-Event-ID": midID}, after},
		{"after", "after=" + midID, nil, after},
		{"Last-Event-ID wins over after", "after=0", map[string]string{"Last-Event-ID": midID}, after},
		{"from the start", "after=0", nil, eventIDs(full)},
		{"after the last", "", map[string]string{"Last-Event-ID": last}, nil},
		{"after the first", "after=" + strconv.FormatInt(full[0].Cursor, 10), nil, eventIDs(full[1:])},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := b.readAll(t, tt.query, tt.header)
			if diff := cmp.Diff(tt.want, eventIDs(got), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("resumed stream (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEventsBadParameters(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	tests := []struct {
		name   string
		query  string
		header map[string]string
		words  []string
	}{
		{"Last-Event-ID not a number", "", map[string]string{"Last-Event-ID": "abc"}, []string{"resume cursor", `"abc"`}},
		{"negative Last-Event-ID", "", map[string]string{"Last-Event-ID": "-1"}, []string{"resume cursor", `"-1"`}},
		{"Last-Event-ID overflow", "", map[string]string{"Last-Event-ID": "99999999999999999999"}, []string{"resume cursor"}},
		{"after not a number", "after=x", nil, []string{"resume cursor", `"x"`}},
		{"after a fraction", "after=1.5", nil, []string{"resume cursor", `"1.5"`}},
		{"follow neither", "follow=maybe", nil, []string{"follow", `"maybe"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			resp, body := b.do(t, call{method: http.MethodGet, path: "/v1/events?" + tt.query, header: tt.header})
			wantError(t, resp, body, http.StatusBadRequest, "invalid_parameter", tt.words...)
		})
	}
}

// TestEventsFilters: ?sessionId and ?turnId select one session's or
// turn's events, exactly as the runtime's filter does.
func TestEventsFilters(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	a, other := twoSessions(t, b)
	tests := []struct {
		query string
		want  apitype.SubscribeParams
		check func(sseEvent) bool
	}{
		{"sessionId=" + a.SessionID, apitype.SubscribeParams{SessionID: a.SessionID}, func(e sseEvent) bool { return e.SessionID == a.SessionID }},
		{"sessionId=" + other.SessionID, apitype.SubscribeParams{SessionID: other.SessionID}, func(e sseEvent) bool { return e.SessionID == other.SessionID }},
		{"turnId=" + a.TurnID, apitype.SubscribeParams{TurnID: a.TurnID}, func(e sseEvent) bool { return e.TurnID == a.TurnID }},
		{"sessionId=" + a.SessionID + "&turnId=" + other.TurnID, apitype.SubscribeParams{SessionID: a.SessionID, TurnID: other.TurnID}, nil},
		{"sessionId=ses_nope", apitype.SubscribeParams{SessionID: "ses_nope"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			t.Parallel()
			got := b.readAll(t, tt.query, nil)
			want := b.logIDs(t, tt.want)
			if diff := cmp.Diff(want, eventIDs(got), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("filtered stream vs the runtime's filter (-log +stream):\n%s", diff)
			}
			if tt.check == nil {
				if len(got) != 0 {
					t.Errorf("%d events match %s", len(got), tt.query)
				}
				return
			}
			if len(got) == 0 {
				t.Errorf("no events match %s", tt.query)
			}
			for _, e := range got {
				if !tt.check(e) {
					t.Errorf("event %s (%s, session %s, turn %s) passed the filter", e.EventID, e.Type, e.SessionID, e.TurnID)
				}
			}
		})
	}
}

// TestEventsFollowLive: a following stream, resumed in the middle of the
// log, delivers the rest of the log and then a turn submitted while it is
// open, as it commits, without missing or repeating an event.
func TestEventsFollowLive(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	first := b.submit(t, apitype.SubmitTurnRequest{Input: "before"})
	b.wait(t, first.TurnID)
	backlog := b.readAll(t, "", nil)
	mid := backlog[len(backlog)/2]

	s := b.openEvents(t, "", map[string]string{"Last-Event-ID": strconv.FormatInt(mid.Cursor, 10)})
	defer s.close()
	// The stream is open: the turn below commits after it subscribed.
	res := b.submit(t, apitype.SubmitTurnRequest{Input: "live"})
	got := s.until(turnEnded(res.TurnID))
	s.close()
	end := got[len(got)-1]
	if end.Type != "turn.completed" {
		t.Errorf("the live turn ended with %s (%s)", end.Type, end.StatusReason)
	}
	var want []string
	for _, e := range b.readAll(t, "", nil) {
		if e.Cursor > mid.Cursor && e.Cursor <= end.Cursor {
			want = append(want, e.EventID)
		}
	}
	if diff := cmp.Diff(want, eventIDs(got)); diff != "" {
		t.Errorf("live stream vs the log (-log +live):\n%s", diff)
	}
	live := 0
	for _, e := range got {
		if e.TurnID == res.TurnID {
			live++
		}
	}
	if live == 0 || live == len(got) {
		t.Errorf("of %d events, %d are the live turn's: want both backlog and live events", len(got), live)
	}
}

// TestEventsHeartbeat: an idle following stream carries keep-alive
// comments, and still delivers events after them.
func TestEventsHeartbeat(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{heartbeat: 10 * time.Millisecond})
	s := b.openEvents(t, "", nil)
	defer s.close()
	for range 2 {
		f, ok := s.frame()
		if !ok {
			t.Fatal("the idle stream ended")
		}
		if diff := cmp.Diff(sseFrame{Comments: []string{"keep-alive"}}, f); diff != "" {
			t.Fatalf("idle stream message (-want +got):\n%s", diff)
		}
	}
	res := b.submit(t, apitype.SubmitTurnRequest{Input: "hello"})
	got := s.until(turnEnded(res.TurnID))
	if diff := cmp.Diff(b.logIDs(t, apitype.SubscribeParams{}), eventIDs(got)); diff != "" {
		t.Errorf("events after keep-alives (-log +stream):\n%s", diff)
	}
}

// gatedStore holds event reads at a gate while armed, and counts the reads
// cancelled while held.
type gatedStore struct {
	store.Store
	armed     atomic.Bool
	entered   chan struct{} // closed when the first gated read starts
	enterOnce sync.Once
	release   chan struct{}
	cancelled atomic.Int32
}

func (g *gatedStore) EventListAfter(ctx context.Context, p *store.EventListAfterParams) ([]*event.Event, error) {
	if g.armed.Load() {
		g.enterOnce.Do(func() { close(g.entered) })
		select {
		case <-g.release:
		case <-ctx.Done():
			g.cancelled.Add(1)
			return nil, context.Cause(ctx)
		}
	}
	return g.Store.EventListAfter(ctx, p)
}

// TestEventsHeartbeatDoesNotCancelReads: keep-alives flow while a store
// read is slow, and do not cut the read off (which on a store slower than
// the heartbeat would restart it forever).
func TestEventsHeartbeatDoesNotCancelReads(t *testing.T) {
	t.Parallel()
	st, err := sqlitestore.Open(context.Background(), filepath.Join(t.TempDir(), "agentrt.db"), sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := st.Close(); err != nil {
			t.Errorf("closing the store: %v", err)
		}
	})
	g := &gatedStore{Store: st, entered: make(chan struct{}), release: make(chan struct{})}
	g.armed.Store(true)
	b := setup(t, setupOpts{store: g, heartbeat: 5 * time.Millisecond})
	s := b.openEvents(t, "", nil)
	defer s.close()
	<-g.entered
	for i := range 3 {
		f, ok := s.frame()
		if !ok {
			t.Fatal("the stream ended")
		}
		if diff := cmp.Diff(sseFrame{Comments: []string{"keep-alive"}}, f); diff != "" {
			t.Fatalf("message %d while the read is held (-want +got):\n%s", i, diff)
		}
	}
	if n := g.cancelled.Load(); n != 0 {
		t.Errorf("keep-alives cancelled the held store read %d times", n)
	}
	g.armed.Store(false)
	close(g.release)
	res := b.submit(t, apitype.SubmitTurnRequest{Input: "hello"})
	s.until(turnEnded(res.TurnID))
	if n := g.cancelled.Load(); n != 0 {
		t.Errorf("store reads were cancelled %d times while the stream was open", n)
	}
}

// TestEventsEndWhenRuntimeStops: stopping the runtime ends open streams.
func TestEventsEndWhenRuntimeStops(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	res := b.submit(t, apitype.SubmitTurnRequest{Input: "hello"})
	b.wait(t, res.TurnID)
	s := b.openEvents(t, "", nil)
	defer s.close()
	backlog := s.until(turnEnded(res.TurnID))
	if err := b.rt.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if e, ok := s.next(); ok {
		t.Errorf("after the runtime stopped the stream sent %s", e.Type)
	}
	if len(backlog) == 0 {
		t.Error("no backlog")
	}
}

// TestEventsConcurrentStreams: many following streams see the same
// events in the same order.
func TestEventsConcurrentStreams(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	const n = 8
	streams := make([]*sseStream, n)
	for i := range streams {
		streams[i] = b.openEvents(t, "", nil)
		defer streams[i].close()
	}
	res := b.submit(t, apitype.SubmitTurnRequest{Input: "hello"})
	// Each handler writes to its own connection, so reading the streams
	// one after another does not hold the others up.
	got := make([][]string, n)
	for i, s := range streams {
		got[i] = eventIDs(s.until(turnEnded(res.TurnID)))
	}
	want := b.logIDs(t, apitype.SubscribeParams{})
	for i := range got {
		if diff := cmp.Diff(want, got[i]); diff != "" {
			t.Errorf("stream %d (-log +stream):\n%s", i, diff)
		}
	}
}
