package sqlitestore_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/sqlitestore"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// The fixture database testdata/fixture-v10.db was made by agentrt at
// schema version 10 (before the compact step record), with `agentrt run`
// of the support example (a plain turn, a second turn in its session), the
// governed example (one turn approved, one denied) and a turn whose model
// failed. testdata/fixture-v10.golden.json is what that agentrt's store
// read back from it: every session, thread, turn, task, run, message,
// tool call, action, event (its wire JSON, byte for byte) and receipt.

// fixtureReadBack is everything the store returns for the fixture.
type fixtureReadBack struct {
	Sessions []json.RawMessage `json:"sessions"`
	Threads  []json.RawMessage `json:"threads"`
	Turns    []json.RawMessage `json:"turns"`
	Tasks    []json.RawMessage `json:"tasks"`
	Runs     []json.RawMessage `json:"runs"`
	Messages []json.RawMessage `json:"messages"`
	Calls    []json.RawMessage `json:"toolCalls"`
	Actions  []json.RawMessage `json:"actions"`
	Grants   []json.RawMessage `json:"grants"`
	Receipts []json.RawMessage `json:"receipts"`
	// Events are the wire bytes of each event, with the cursor and tenant
	// the store gave it; EventsBySession the same read session by session.
	Events          []fixtureEvent `json:"events"`
	EventsBySession []fixtureEvent `json:"eventsBySession"`
	LastEvents      []fixtureEvent `json:"lastEvents"`
}

type fixtureEvent struct {
	Cursor int64  `json:"cursor"`
	Tenant string `json:"tenant"`
	Wire   string `json:"wire"`
}

func raws[T any](t *testing.T, xs []T) []json.RawMessage {
	t.Helper()
	out := make([]json.RawMessage, 0, len(xs))
	for _, x := range xs {
		b, err := json.Marshal(x)
		if err != nil {
			t.Fatalf("Marshal: %v", err)
		}
		out = append(out, b)
	}
	return out
}

func wires(t *testing.T, es []*event.Event) []fixtureEvent {
	t.Helper()
	out := make([]fixtureEvent, 0, len(es))
	for _, e := range es {
		b, err := e.JSON()
		if err != nil {
			t.Fatalf("JSON: %v", err)
		}
		// The events' JSON methods and encoding/json must agree.
		m, err := json.Marshal(e)
		if err != nil || !bytes.Equal(m, b) {
			t.Fatalf("Marshal(event %d) = %s, %v; want %s", e.Cursor, m, err, b)
		}
		out = append(out, fixtureEvent{Cursor: e.Cursor, Tenant: e.TenantID, Wire: string(b)})
	}
	return out
}

// readFixture reads back everything in s.
func readFixture(t *testing.T, s store.Store) *fixtureReadBack {
	t.Helper()
	ctx := context.Background()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	var fx fixtureReadBack
	const tenant = "default"
	sessions, err := s.SessionList(ctx, &store.SessionListParams{TenantID: tenant, Limit: store.MaxListLimit})
	must(err)
	fx.Sessions = raws(t, sessions)
	for _, sess := range sessions {
		threads, err := s.ThreadList(ctx, &store.ThreadListParams{TenantID: tenant, SessionID: sess.ID})
		must(err)
		fx.Threads = append(fx.Threads, raws(t, threads)...)
		turns, err := s.TurnList(ctx, &store.TurnListParams{TenantID: tenant, SessionID: sess.ID, Limit: store.MaxListLimit})
		must(err)
		fx.Turns = append(fx.Turns, raws(t, turns)...)
		tasks, err := s.TaskList(ctx, &store.TaskListParams{TenantID: tenant, SessionID: sess.ID})
		must(err)
		fx.Tasks = append(fx.Tasks, raws(t, tasks)...)
		runs, err := s.RunList(ctx, &store.RunListParams{TenantID: tenant, SessionID: sess.ID})
		must(err)
		fx.Runs = append(fx.Runs, raws(t, runs)...)
		for _, th := range threads {
			msgs, err := s.MessageList(ctx, &store.MessageListParams{TenantID: tenant, ThreadID: th.ID, Limit: store.MaxListLimit})
			must(err)
			fx.Messages = append(fx.Messages, raws(t, msgs)...)
		}
		calls, err := s.ToolCallList(ctx, &store.ToolCallListParams{TenantID: tenant, SessionID: sess.ID})
		must(err)
		fx.Calls = append(fx.Calls, raws(t, calls)...)
		grants, err := s.GrantList(ctx, &store.GrantListParams{TenantID: tenant, SessionID: sess.ID})
		must(err)
		fx.Grants = append(fx.Grants, raws(t, grants)...)
		receipts, err := s.ReceiptList(ctx, &store.ReceiptListParams{TenantID: tenant, SessionID: sess.ID, Limit: store.MaxListLimit})
		must(err)
		if err := store.VerifyReceipts(receipts); err != nil {
			t.Errorf("VerifyReceipts(session %s): %v", sess.ID, err)
		}
		fx.Receipts = append(fx.Receipts, raws(t, receipts)...)
		es, err := s.EventListAfter(ctx, &store.EventListAfterParams{
			Filter: event.Filter{TenantID: tenant, SessionID: sess.ID}, Limit: store.MaxListLimit,
		})
		must(err)
		fx.EventsBySession = append(fx.EventsBySession, wires(t, es)...)
		last, err := s.EventLast(ctx, &store.EventLastParams{TenantID: tenant, SessionID: sess.ID})
		must(err)
		fx.LastEvents = append(fx.LastEvents, wires(t, []*event.Event{last})...)
	}
	actions, err := s.ActionList(ctx, &store.ActionListParams{TenantID: tenant, Limit: store.MaxListLimit})
	must(err)
	fx.Actions = raws(t, actions)
	es, err := s.EventListAfter(ctx, &store.EventListAfterParams{Limit: store.MaxListLimit})
	must(err)
	fx.Events = wires(t, es)
	return &fx
}

// compactJSON is r without the golden file's indentation.
func compactJSON(r json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Compact(&b, r); err != nil {
		return "invalid JSON: " + string(r)
	}
	return b.String()
}

// TestFixtureReadBack opens a database made by an older agentrt, migrates
// it, and reads back every record as that agentrt did.
func TestFixtureReadBack(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile(filepath.Join("testdata", "fixture-v10.db"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "agentrt.db")
	if err := os.WriteFile(path, src, 0o600); err != nil {
		t.Fatal(err)
	}
	s := open(t, path, sqlitestore.Options{})
	got := readFixture(t, s)
	if len(got.Sessions) != 4 || len(got.Events) == 0 || len(got.Receipts) == 0 || len(got.Actions) != 2 {
		t.Fatalf("read %d sessions, %d events, %d receipts, %d actions; want 4, some, some, 2",
			len(got.Sessions), len(got.Events), len(got.Receipts), len(got.Actions))
	}
	goldenPath := filepath.Join("testdata", "fixture-v10.golden.json")
	if *update {
		b, err := json.MarshalIndent(got, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(goldenPath, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(goldenPath)
	if err != nil {
		t.Fatal(err)
	}
	var want fixtureReadBack
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&want, got, cmp.Transformer("compact", compactJSON)); diff != "" {
		t.Errorf("read back (-golden +got):\n%s", diff)
	}
}

// TestFixtureEventsWrittenAgain: the fixture's events, written by this
// agentrt into a new database (compacted as it stores them), read back as
// the very bytes the older agentrt sent, and their receipts verify.
func TestFixtureEventsWrittenAgain(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	b, err := os.ReadFile(filepath.Join("testdata", "fixture-v10.golden.json"))
	if err != nil {
		t.Fatal(err)
	}
	var golden fixtureReadBack
	if err := json.Unmarshal(b, &golden); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "agentrt.db")
	s := open(t, path, sqlitestore.Options{})
	var sessions []string
	for _, fe := range golden.Events {
		e, err := event.Decode([]byte(fe.Wire))
		if err != nil {
			t.Fatalf("Decode: %v", err)
		}
		e.TenantID = fe.Tenant
		tx, err := s.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := tx.Apply(ctx, &store.Batch{Events: []*event.Event{e}}); err != nil {
			t.Fatalf("Apply(event %d): %v", fe.Cursor, err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(sessions, e.SessionID) {
			sessions = append(sessions, e.SessionID)
		}
	}
	got, err := s.EventListAfter(ctx, &store.EventListAfterParams{Limit: store.MaxListLimit})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(golden.Events, wires(t, got)); diff != "" {
		t.Errorf("events written again and read back (-older agentrt's +now):\n%s", diff)
	}
	// And they were stored compact.
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var stored, wire int
	if err := db.QueryRowContext(ctx, `SELECT sum(length(body)) FROM events`).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	for _, fe := range golden.Events {
		wire += len(fe.Wire)
	}
	if stored > wire*7/10 {
		t.Errorf("events stored in %d bytes, their JSON is %d; want at most 70%%", stored, wire)
	}
	for _, id := range sessions {
		rs, err := s.ReceiptList(ctx, &store.ReceiptListParams{TenantID: "default", SessionID: id, Limit: store.MaxListLimit})
		if err != nil {
			t.Fatal(err)
		}
		if err := store.VerifyReceipts(rs); err != nil {
			t.Errorf("VerifyReceipts(session %s): %v", id, err)
		}
	}
}
