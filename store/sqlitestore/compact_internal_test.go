package sqlitestore

import (
	"bytes"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/store"
)

// fullEvent is a tool.result of session ses_1 with every correlation id.
func fullEvent(id string, seq int64) *event.Event {
	return &event.Event{
		Type: event.ToolResult, EventID: id, Timestamp: time.Unix(1_700_000_000, 123).UTC(),
		SchemaVersion: event.SchemaVersion, RuntimeID: "rt_1", Sequence: seq, SessionID: "ses_1", ThreadID: "thr_1",
		TurnID: "turn_1", TaskID: "task_1", RunID: "run_1", AttemptID: "run_1", StepID: "step_1",
		TraceID: "0123456789abcdef0123456789abcdef", SpanID: "0123456789abcdef",
		Payload: &event.ToolResultPayload{Name: "shell", Preview: "ok " + id}, TenantID: "t",
	}
}

// TestCompactBody: a compact body leaves out every field the scope and
// sequence give, and reads back as the JSON byte for byte; a JSON that
// holds a control byte is stored whole.
func TestCompactBody(t *testing.T) {
	t.Parallel()
	e := fullEvent("evt_1", 42)
	data, err := e.JSON()
	if err != nil {
		t.Fatal(err)
	}
	sc := scopeOf(e)
	body := compactBody(nil, data, &sc, e.Sequence)
	if body[0] != bodyCompact {
		t.Fatalf("body starts with %#x, want %#x", body[0], bodyCompact)
	}
	for _, leftOut := range []string{`"schemaVersion"`, `"runtimeId"`, `"sequence"`, `"sessionId"`, `"threadId"`,
		`"turnId"`, `"taskId"`, `"runId"`, `"attemptId"`, `"traceId"`} {
		if bytes.Contains(body, []byte(leftOut)) {
			t.Errorf("compact body %q holds %s", body, leftOut)
		}
	}
	if len(body) > len(data)*6/10 {
		t.Errorf("compact body is %d bytes of %d, want at most 60%%", len(body), len(data))
	}
	for _, tc := range []struct {
		name       string
		data       []byte
		seq        int64
		sc         eventScope
		wantLength int // of the body, 0 for any
	}{
		{"full", data, e.Sequence, sc, 0},
		{"another sequence", data, 7, sc, 0},
		{"another scope", data, e.Sequence, eventScope{session: "ses_2", run: "run_1"}, 0},
		{"control byte", []byte(`{"type":"x",` + "\x05" + `"sessionId":"ses_1","payload":{}}`), 0, sc, 46},
		{"not an envelope", []byte(`[1,2]`), 0, sc, 6},
	} {
		body := compactBody(nil, tc.data, &tc.sc, tc.seq)
		if tc.wantLength != 0 && len(body) != tc.wantLength {
			t.Errorf("%s: compact body %q is %d bytes, want %d", tc.name, body, len(body), tc.wantLength)
		}
		got, err := expandBody(nil, body, &tc.sc, tc.seq)
		if err != nil || !bytes.Equal(got, tc.data) {
			t.Errorf("%s: expandBody(compactBody(%s)) = %s, %v; want it back", tc.name, tc.data, got, err)
		}
	}
	if _, err := expandBody(nil, []byte{bodyCompact, '{', 0x1f, '}'}, &sc, 1); err == nil {
		t.Errorf("expandBody of an unknown code: no error")
	}
}

// TestChainHeadIsHeld: a store reads a chain's head once, then holds it;
// when another store on the file extends the chain, the next batch's
// receipt conflicts, and the store reads the head again and seals on it.
func TestChainHeadIsHeld(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "agentrt.db")
	open := func() *Store {
		s, err := Open(ctx, path, Options{})
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		t.Cleanup(func() { s.Close() })
		if err := s.Migrate(ctx); err != nil {
			t.Fatalf("Migrate: %v", err)
		}
		return s
	}
	a, b := open(), open()
	apply := func(s *Store, events ...*event.Event) {
		t.Helper()
		tx, err := s.Begin(ctx)
		if err != nil {
			t.Fatalf("Begin: %v", err)
		}
		if err := tx.Apply(ctx, &store.Batch{Events: events}); err != nil {
			_ = tx.Rollback()
			t.Fatalf("Apply: %v", err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatalf("Commit: %v", err)
		}
	}
	seq := int64(0)
	next := func() *event.Event { seq++; return fullEvent(fmt.Sprintf("evt_%d", seq), seq) }

	apply(a, next())
	apply(a, next(), next())
	apply(a, next())
	if n := a.receiptReads.Load(); n != 1 {
		t.Errorf("a read the chain's head %d times in 3 batches, want once", n)
	}
	apply(b, next()) // b reads the head, then extends the chain
	apply(a, next()) // a holds a head that is behind: a conflict, a read, a retry
	if n := a.receiptReads.Load(); n != 2 {
		t.Errorf("a read the chain's head %d times, want twice (once more after b wrote)", n)
	}
	apply(a, next())
	if n := a.receiptReads.Load(); n != 2 {
		t.Errorf("a read the chain's head %d times, want still twice", n)
	}
	rs, err := a.ReceiptList(ctx, &store.ReceiptListParams{TenantID: "t", SessionID: "ses_1", Limit: 100})
	if err != nil {
		t.Fatalf("ReceiptList: %v", err)
	}
	if err := store.VerifyReceipts(rs); err != nil || len(rs) != int(seq) {
		t.Errorf("receipts = %d, VerifyReceipts: %v; want a sound chain of %d", len(rs), err, seq)
	}
	for i, r := range rs {
		if want := fmt.Sprintf("evt_%d", i+1); r.EventID != want || r.EventType != string(event.ToolResult) {
			t.Errorf("receipt %d is of %s %s, want %s tool.result", r.Seq, r.EventType, r.EventID, want)
		}
	}
	// A rolled back transaction leaves the held head as it was.
	tx, err := a.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Apply(ctx, &store.Batch{Events: []*event.Event{fullEvent("evt_gone", seq+1)}}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	apply(a, next())
	rs, err = a.ReceiptList(ctx, &store.ReceiptListParams{TenantID: "t", SessionID: "ses_1", Limit: 100})
	if err != nil || store.VerifyReceipts(rs) != nil || len(rs) != int(seq) || a.receiptReads.Load() != 2 {
		t.Errorf("after a rollback: %d receipts (%v), %d head reads; want a sound chain of %d and no read", len(rs), err,
			a.receiptReads.Load(), seq)
	}
}

// TestReceiptsStoreNoCopy: a receipt row keeps its event's cursor and a
// 32-byte hash, not the event's data.
func TestReceiptsStoreNoCopy(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := openAt(t, latestVersion())
	tx, err := s.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	e := fullEvent("evt_1", 1)
	if err := tx.Apply(ctx, &store.Batch{Events: []*event.Event{e}}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	var (
		cursor    int64
		hashBytes int
		copies    sql.NullString
	)
	err = s.read.QueryRowContext(ctx, `SELECT cursor, length(hash), COALESCE(event_id, event_type, body, prev_hash) FROM receipts`).
		Scan(&cursor, &hashBytes, &copies)
	if err != nil || cursor != e.Cursor || hashBytes != 32 || copies.Valid {
		t.Errorf("receipt row: cursor %d, hash of %d bytes, copies %v (%v); want cursor %d, 32 bytes, none", cursor, hashBytes,
			copies, err, e.Cursor)
	}
}

// TestMigration12DownRestoresEvents: reverting 012 gives every event its
// JSON back whole and every receipt its copies, as version 10 stored them.
func TestMigration12DownRestoresEvents(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := openAt(t, latestVersion())
	events := []*event.Event{fullEvent("evt_1", 1), fullEvent("evt_2", 2), fullEvent("evt_3", 3)}
	events[2].AttemptID = "attempt_2" // left in the body
	tx, err := s.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Apply(ctx, &store.Batch{Events: events}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	receipts, err := s.ReceiptList(ctx, &store.ReceiptListParams{TenantID: "t", SessionID: "ses_1", Limit: 10})
	if err != nil || len(receipts) != 3 {
		t.Fatalf("ReceiptList = %d, %v; want 3", len(receipts), err)
	}
	if err := s.migrateDown(ctx, 10); err != nil {
		t.Fatalf("migrateDown(10): %v", err)
	}
	for i, e := range events {
		want, _ := e.JSON()
		var (
			tenant, turn, typ string
			data              []byte
		)
		if err := s.read.QueryRowContext(ctx, `SELECT tenant_id, turn_id, type, data FROM events WHERE cursor = ?`, e.Cursor).
			Scan(&tenant, &turn, &typ, &data); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(data, want) || tenant != "t" || turn != "turn_1" || typ != string(event.ToolResult) {
			t.Errorf("event %d after reverting 012: %s %s %s %s; want t turn_1 tool.result %s", i+1, tenant, turn, typ, data, want)
		}
		var (
			id, prev, hash string
			body           []byte
		)
		if err := s.read.QueryRowContext(ctx, `SELECT event_id, body, prev_hash, hash FROM receipts WHERE seq = ?`, i+1).
			Scan(&id, &body, &prev, &hash); err != nil {
			t.Fatal(err)
		}
		r := receipts[i]
		if id != r.EventID || !bytes.Equal(body, want) || prev != r.PrevHash || hash != r.Hash {
			t.Errorf("receipt %d after reverting 012: %s %s %q %q; want %s, the event's JSON, %q %q", i+1, id, body, prev,
				hash, r.EventID, r.PrevHash, r.Hash)
		}
	}
}

// TestMigration12KeepsOddReceipts: a recorded receipt that does not match
// its event, or links to another hash than the receipt before it, reads
// back after 012 as it was stored, so verifying finds what it found.
func TestMigration12KeepsOddReceipts(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := openAt(t, 10)
	e1, e2 := fullEvent("evt_1", 1), fullEvent("evt_2", 2)
	d1, _ := e1.JSON()
	d2, _ := e2.JSON()
	h1 := store.ReceiptHash("", d1)
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO events (cursor, tenant_id, session_id, sequence, turn_id, type, data) VALUES (1, 't', 'ses_1', 1, 'turn_1', 'tool.result', ?), (2, 't', 'ses_1', 2, 'turn_1', 'tool.result', ?)`, []any{d1, d2}},
		// Receipt 1 sealed other bytes than its event's; receipt 2 links
		// to a hash that is not receipt 1's and has an uppercase hash.
		{`INSERT INTO receipts (tenant_id, session_id, seq, event_id, event_type, body, prev_hash, hash, created_at) VALUES
			('t', 'ses_1', 1, 'evt_1', 'tool.result', 'sealed other bytes', '', ?, 1),
			('t', 'ses_1', 2, 'evt_2', 'tool.result', ?, 'not-h1', 'ABC', 2)`, []any{h1, d2}},
	} {
		if _, err := s.write.ExecContext(ctx, q.sql, q.args...); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	rs, err := s.ReceiptList(ctx, &store.ReceiptListParams{TenantID: "t", SessionID: "ses_1", Limit: 10})
	if err != nil || len(rs) != 2 {
		t.Fatalf("ReceiptList = %d, %v; want 2", len(rs), err)
	}
	if r := rs[0]; string(r.Body) != "sealed other bytes" || r.EventID != "evt_1" || r.Hash != h1 || r.PrevHash != "" {
		t.Errorf("receipt 1 = %+v, want it as stored", r)
	}
	if r := rs[1]; !bytes.Equal(r.Body, d2) || r.EventID != "evt_2" || r.Hash != "ABC" || r.PrevHash != "not-h1" {
		t.Errorf("receipt 2 = %+v, want it as stored", r)
	}
	var re *store.ReceiptError
	if err := store.VerifyReceipts(rs); !errors.As(err, &re) || re.Seq != 1 {
		t.Errorf("VerifyReceipts = %v, want receipt 1 named (its hash does not match its body)", err)
	}
}
