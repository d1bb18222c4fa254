package bench

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

// TestStore fills a small store on both variants and times its reads:
// the reads check what they find (the failed requests, the pending
// approvals), so a fill that lost sessions fails.
func TestStore(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"mem", "sqlite"} {
		t.Run(v, func(t *testing.T) {
			t.Parallel()
			overviews := 0
			res, err := Store(context.Background(), StoreOptions{Variant: v, Sessions: 300, Reads: 3, Dir: t.TempDir(),
				Overview: func(ctx context.Context, rt *agentrt.Runtime, dir string) error { overviews++; return nil }})
			if err != nil {
				t.Fatal(err)
			}
			if res.Sessions != 300 || res.Waiting != 4 || res.Failed != 4 || overviews != 3 {
				t.Errorf("result = %+v, %d overviews", res, overviews)
			}
			if v == "sqlite" && (res.BytesPerSession < 1000 || res.DataDir != "") {
				t.Errorf("result = %+v", res)
			}
		})
	}
}

// TestStoreReuse times the reads of a kept store again without a fill.
func TestStoreReuse(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	res, err := Store(ctx, StoreOptions{Sessions: 120, Reads: 1, Dir: t.TempDir(), Keep: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.DataDir == "" {
		t.Fatalf("kept no directory: %+v", res)
	}
	again, err := Store(ctx, StoreOptions{Sessions: 120, Reads: 1, Reuse: res.DataDir})
	if err != nil {
		t.Fatal(err)
	}
	if again.FillS != 0 || again.DBBytes < res.DBBytes {
		t.Errorf("reused: %+v, filled: %+v", again, res)
	}
}

// TestClone checks that a clone is its template with the identifiers and
// times replaced: the same JSON once the replacement is undone, and not
// sharing an event's cached encoding.
func TestClone(t *testing.T) {
	t.Parallel()
	ids := runtype.NewIDGen(nil)
	sid, tid := "bench-template-x", ids.New(runtype.PrefixTurn)
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	e := &event.Event{Type: "turn.created", EventID: ids.New(runtype.PrefixEvent), Timestamp: at, SessionID: sid, TurnID: tid,
		RuntimeID: "rt_01KAAAAAAAAAAAAAAAAAAAAAAA", Sequence: 1, Refs: map[string]string{"turn": tid}}
	if _, err := e.JSON(); err != nil { // caches the encoding
		t.Fatal(err)
	}
	b := &store.Batch{
		Turns:  []*runtype.Turn{{ID: tid, SessionID: sid, Input: "in " + tid, CreatedAt: at}},
		Events: []*event.Event{e},
	}
	tmpl := newTemplate(sid, []*store.Batch{b})
	if len(tmpl.ulids) != 2 || len(tmpl.batches) != 1 {
		t.Fatalf("template: %d ulids, %d batches, want 2 and 1", len(tmpl.ulids), len(tmpl.batches))
	}
	var clock time.Time
	got := tmpl.clone("s-9", runtype.NewIDGen(func() time.Time { return clock }), &clock, -time.Hour)[0]
	if got.Turns[0].ID == tid || !strings.HasPrefix(got.Turns[0].ID, runtype.PrefixTurn) || got.Turns[0].SessionID != "s-9" {
		t.Errorf("clone's turn = %+v", got.Turns[0])
	}
	if !got.Turns[0].CreatedAt.Equal(at.Add(-time.Hour)) || !got.Events[0].Timestamp.Equal(at.Add(-time.Hour)) {
		t.Errorf("clone's times = %v, %v, want an hour before %v", got.Turns[0].CreatedAt, got.Events[0].Timestamp, at)
	}
	// Undo the replacement: the JSON is the template's.
	back := &cloner{r: strings.NewReplacer("s-9", sid, got.Turns[0].ID[len(runtype.PrefixTurn):], tid[len(runtype.PrefixTurn):],
		got.Events[0].EventID[len(runtype.PrefixEvent):], e.EventID[len(runtype.PrefixEvent):]), shift: time.Hour}
	orig := back.copy(reflect.ValueOf(got)).Interface().(*store.Batch)
	want, _ := json.Marshal(b)
	have, _ := json.Marshal(orig)
	if d := cmp.Diff(string(want), string(have)); d != "" {
		t.Errorf("clone, undone, differs from its template (-want +got):\n%s", d)
	}
	if raw, _ := got.Events[0].JSON(); strings.Contains(string(raw), sid) || !strings.Contains(string(raw), "rt_01KAAAAAAAAAAAAAAAAAAAAAAA") {
		t.Errorf("clone's event encodes as %s", raw)
	}
}
