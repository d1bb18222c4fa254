package sqlitestore_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"

	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/internal/dbtest"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/sqlitestore"
	"github.com/agentrt/agentrt/store/storetest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// open opens (and migrates) the store in file path and closes it at
// cleanup.
func open(tb testing.TB, path string, opts sqlitestore.Options) *sqlitestore.Store {
	tb.Helper()
	ctx := context.Background()
	s, err := sqlitestore.Open(ctx, path, opts)
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	tb.Cleanup(func() {
		if err := s.Close(); err != nil {
			tb.Errorf("Close: %v", err)
		}
	})
	if err := s.Migrate(ctx); err != nil {
		tb.Fatalf("Migrate: %v", err)
	}
	return s
}

func newStore(tb testing.TB) store.Store {
	return open(tb, filepath.Join(tb.TempDir(), "agentrt.db"), sqlitestore.Options{})
}

func TestStore(t *testing.T) {
	t.Parallel()
	storetest.Exercise(t.Context(), t, func(t *testing.T) store.Store { return newStore(t) })
}

func BenchmarkApply(b *testing.B) {
	storetest.BenchmarkApply(b, func(b *testing.B) store.Store { return newStore(b) })
}

func BenchmarkWrite(b *testing.B) {
	storetest.BenchmarkWrite(b, func(b *testing.B) store.Store { return newStore(b) })
}

func TestDataSurvivesReopen(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "agentrt.db")
	s, err := sqlitestore.Open(ctx, path, sqlitestore.Options{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	owner := runtype.Owner{TenantID: "t", PrincipalID: "p"}
	sess := &runtype.Session{ID: "ses_1", Owner: owner, Agent: "a"}
	e := &event.Event{Type: event.SessionCreated, EventID: "evt_1", SchemaVersion: event.SchemaVersion, SessionID: "ses_1", Payload: &event.SessionPayload{Agent: "a"}, TenantID: "t"}
	w := store.NewWriter(s, store.WriterConfig{})
	if err := w.Write(ctx, &store.Batch{Sessions: []*runtype.Session{sess}, Events: []*event.Event{e}}); err != nil {
		t.Fatalf("Write: %v", err)
	}
	if err := w.Stop(ctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	s = open(t, path, sqlitestore.Options{})
	if _, err := s.SessionGet(ctx, &store.SessionGetParams{TenantID: "t", ID: "ses_1"}); err != nil {
		t.Errorf("SessionGet after reopen: %v", err)
	}
	evs, err := s.EventListAfter(ctx, &store.EventListAfterParams{})
	if err != nil || len(evs) != 1 || evs[0].EventID != "evt_1" || evs[0].Cursor != e.Cursor || evs[0].Sequence != 1 {
		t.Errorf("EventListAfter after reopen = %v, %v; want evt_1 at cursor %d, sequence 1", evs, err, e.Cursor)
	}
	if got := s.Info(); got.SchemaVersion != sqlitestore.LatestVersion() || got.Driver != "sqlite" || !got.Durable || got.Version == "" {
		t.Errorf("Info after reopen = %+v", got)
	}
}

func TestMigrateIsIdempotent(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := newStore(t).(*sqlitestore.Store)
	before := s.Info().SchemaVersion
	for range 3 {
		if err := s.Migrate(ctx); err != nil {
			t.Fatalf("Migrate again: %v", err)
		}
	}
	if after, latest := s.Info().SchemaVersion, sqlitestore.LatestVersion(); before != latest || after != before {
		t.Errorf("SchemaVersion = %d after the first Migrate and %d after more; want %d and %d", before, after, latest, latest)
	}
	// A migrated, used store migrates again without losing anything.
	tx, err := s.Begin(ctx)
	if err != nil {
		t.Fatalf("Begin: %v", err)
	}
	if err := tx.Apply(ctx, &store.Batch{Sessions: []*runtype.Session{{ID: "ses_1", Owner: runtype.Owner{TenantID: "t"}}}}); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	if _, err := s.SessionGet(ctx, &store.SessionGetParams{TenantID: "t", ID: "ses_1"}); err != nil {
		t.Errorf("SessionGet after Migrate: %v", err)
	}
}

func TestNewerSchemaIsRefused(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "agentrt.db")
	open(t, path, sqlitestore.Options{})

	// A newer agentrt migrated the file further.
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatalf("sql.Open: %v", err)
	}
	defer db.Close()
	future := sqlitestore.LatestVersion() + 1
	if _, err := db.ExecContext(ctx, `INSERT INTO agentrt_schema_migrations (version, name, applied_at) VALUES (?, 'from_the_future', 0)`, future); err != nil {
		t.Fatalf("marking the schema newer: %v", err)
	}

	s, err := sqlitestore.Open(ctx, path, sqlitestore.Options{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer s.Close()
	if err := s.Migrate(ctx); !errors.Is(err, store.ErrSchemaTooNew) {
		t.Errorf("Migrate on a newer schema = %v, want store.ErrSchemaTooNew", err)
	}
	if got := s.Info().SchemaVersion; got != future {
		t.Errorf("Info().SchemaVersion = %d, want %d", got, future)
	}
}

// sealedEvent returns a tool.result event of session ses_1 of tenant t;
// the Writer or the caller sets its sequence.
func sealedEvent(id string, seq int64) *event.Event {
	return &event.Event{
		Type: event.ToolResult, EventID: id, SchemaVersion: event.SchemaVersion, Sequence: seq, SessionID: "ses_1",
		Payload: &event.ToolResultPayload{Name: "shell", Preview: "ok " + id}, TenantID: "t",
	}
}

// receipts returns the whole chain of ses_1 of tenant t.
func receipts(t *testing.T, r store.Reader) []*runtype.Receipt {
	t.Helper()
	rs, err := r.ReceiptList(t.Context(), &store.ReceiptListParams{TenantID: "t", SessionID: "ses_1", Limit: store.MaxListLimit})
	if err != nil {
		t.Fatalf("ReceiptList: %v", err)
	}
	return rs
}

// applyOne applies b in its own transaction on s.
func applyOne(t *testing.T, s store.Store, b *store.Batch) {
	t.Helper()
	tx, err := s.Begin(t.Context())
	if err != nil {
		t.Fatalf("Begin: %v", err)
	}
	if err := tx.Apply(t.Context(), b); err != nil {
		_ = tx.Rollback()
		t.Fatalf("Apply: %v", err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatalf("Commit: %v", err)
	}
}

func TestReceiptChainContinuesAfterReopen(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "agentrt.db")
	write := func(s *sqlitestore.Store, ids ...string) {
		t.Helper()
		w := store.NewWriter(s, store.WriterConfig{})
		for _, id := range ids {
			if err := w.Write(ctx, &store.Batch{Events: []*event.Event{sealedEvent(id, 0)}}); err != nil {
				t.Fatalf("Write: %v", err)
			}
		}
		if err := w.Stop(ctx); err != nil {
			t.Fatalf("Stop: %v", err)
		}
	}
	s, err := sqlitestore.Open(ctx, path, sqlitestore.Options{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	write(s, "evt_1", "evt_2")
	before := receipts(t, s)
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	s = open(t, path, sqlitestore.Options{})
	write(s, "evt_3")
	rs := receipts(t, s)
	if err := store.VerifyReceipts(rs); err != nil || len(rs) != 3 || rs[2].EventID != "evt_3" || rs[2].PrevHash != before[1].Hash {
		t.Errorf("receipts after reopening = %+v, VerifyReceipts %v; want evt_3 chained after the 2 before", rs, err)
	}
}

// TestTwoStoresShareAChain: a second handle (another process) appending
// to a session between two writes of the first does not fork its chain.
func TestTwoStoresShareAChain(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "agentrt.db")
	a, b := open(t, path, sqlitestore.Options{}), open(t, path, sqlitestore.Options{})
	applyOne(t, a, &store.Batch{Events: []*event.Event{sealedEvent("evt_1", 1)}})
	applyOne(t, b, &store.Batch{Events: []*event.Event{sealedEvent("evt_2", 2)}})
	applyOne(t, a, &store.Batch{Events: []*event.Event{sealedEvent("evt_3", 3), sealedEvent("evt_4", 4)}})
	rs := receipts(t, a)
	if err := store.VerifyReceipts(rs); err != nil || len(rs) != 4 {
		t.Errorf("receipts = %d, VerifyReceipts %v; want a sound chain of 4", len(rs), err)
	}
}

func TestTamperedReceiptIsNamed(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "agentrt.db")
	s := open(t, path, sqlitestore.Options{})
	var events []*event.Event
	for i := range 5 {
		events = append(events, sealedEvent(fmt.Sprintf("evt_%d", i+1), int64(i+1)))
	}
	applyOne(t, s, &store.Batch{Events: events})
	if err := store.VerifyReceipts(receipts(t, s)); err != nil {
		t.Fatalf("VerifyReceipts before tampering: %v", err)
	}

	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatalf("sql.Open: %v", err)
	}
	defer db.Close()
	// A receipt's body is its sealed event's, which the event row keeps.
	res, err := db.ExecContext(ctx, `UPDATE events SET body = CAST(replace(CAST(body AS TEXT), 'ok evt_3', 'ok evt_X') AS BLOB) WHERE session_id = 'ses_1' AND sequence = 3`)
	if n, _ := res.RowsAffected(); err != nil || n != 1 {
		t.Fatalf("tampering with receipt 3: %v (%d rows)", err, n)
	}
	var re *store.ReceiptError
	if err := store.VerifyReceipts(receipts(t, s)); !errors.As(err, &re) || re.Seq != 3 || re.EventID != "evt_3" {
		t.Errorf("VerifyReceipts after tampering with receipt 3 = %v, want a *store.ReceiptError naming receipt 3", err)
	}
}

// TestCheckIntegrity: quick_check passes a sound database, finds a damaged
// page (an error wrapping store.ErrCorrupt), and stops when its context
// ends.
func TestCheckIntegrity(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "agentrt.db")
	s := open(t, path, sqlitestore.Options{})
	if err := s.CheckIntegrity(ctx); err != nil {
		t.Fatalf("CheckIntegrity on a sound database: %v", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := s.CheckIntegrity(cancelled); !errors.Is(err, context.Canceled) {
		t.Errorf("CheckIntegrity with a cancelled context = %v, want context.Canceled", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	dbtest.DamageTable(t, path, "tool_calls")
	damaged, err := sqlitestore.Open(ctx, path, sqlitestore.Options{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer damaged.Close()
	err = damaged.CheckIntegrity(ctx)
	if !errors.Is(err, store.ErrCorrupt) || !errors.Is(err, store.ErrStorage) {
		t.Errorf("CheckIntegrity on a damaged database = %v, want an error wrapping store.ErrCorrupt", err)
	}
}

// TestFilesArePrivate: the database, its WAL and its shared-memory file
// are readable by their owner only, whether Open creates the database or
// finds it, and its WAL, open to others.
func TestFilesArePrivate(t *testing.T) {
	t.Parallel()
	for _, existing := range []bool{false, true} {
		t.Run(fmt.Sprint("existing=", existing), func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "agentrt.db")
			if existing {
				for _, p := range []string{path, path + "-wal"} {
					if err := os.WriteFile(p, nil, 0o666); err != nil {
						t.Fatal(err)
					}
					if err := os.Chmod(p, 0o666); err != nil { // past the umask
						t.Fatal(err)
					}
				}
			}
			s := open(t, path, sqlitestore.Options{})
			w := store.NewWriter(s, store.WriterConfig{})
			sess := &runtype.Session{ID: "ses_1", Owner: runtype.Owner{TenantID: "t"}, Agent: "a"}
			if err := w.Write(t.Context(), &store.Batch{Sessions: []*runtype.Session{sess}}); err != nil {
				t.Fatal(err)
			}
			if err := w.Stop(t.Context()); err != nil {
				t.Fatal(err)
			}
			for _, p := range []string{path, path + "-wal", path + "-shm"} {
				fi, err := os.Stat(p)
				if err != nil {
					t.Fatal(err)
				}
				if got := fi.Mode().Perm(); got != 0o600 {
					t.Errorf("%s has mode %v, want -rw-------", filepath.Base(p), got)
				}
			}
		})
	}
}
