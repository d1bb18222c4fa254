package sqlitestore

import (
	"bytes"
	"database/sql"
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
