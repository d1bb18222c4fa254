package pgstore_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	neturl "net/url"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/runtype"

	"github.com/agentrt/agentrt/internal/testenv"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/pgstore"
	"github.com/agentrt/agentrt/store/storetest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// open opens (and migrates) a store on the database at url and closes it
// at cleanup.
func open(tb testing.TB, url string, opts pgstore.Options) *pgstore.Store {
	tb.Helper()
	ctx := context.Background()
	s, err := pgstore.Open(ctx, url, opts)
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
	return open(tb, testenv.Postgres(tb), pgstore.Options{})
}

func TestStore(t *testing.T) {
	storetest.Exercise(t.Context(), t, func(t *testing.T) store.Store { return newStore(t) })
}

func BenchmarkApply(b *testing.B) {
	storetest.BenchmarkApply(b, func(b *testing.B) store.Store { return newStore(b) })
}

func BenchmarkWrite(b *testing.B) {
	storetest.BenchmarkWrite(b, func(b *testing.B) store.Store { return newStore(b) })
}

// node opens a second Store ("node") on the database at url.
func node(t *testing.T, url string) *pgstore.Store { return open(t, url, pgstore.Options{MaxConns: 2}) }

// password is what the tests put in URLs and look for in errors.
const password = "s3cret-Pa55word"

// withPassword returns url with user postgres and the password.
func withPassword(t *testing.T, url string) string {
	t.Helper()
	u, err := neturl.Parse(url)
	if err != nil {
		t.Fatal(err)
	}
	u.User = neturl.UserPassword("postgres", password)
	return u.String()
}

func TestOpenBadInput(t *testing.T) {
	admin := testenv.PostgresAdmin(t)
	ctx := t.Context()
	noDB, err := neturl.Parse(withPassword(t, admin))
	if err != nil {
		t.Fatal(err)
	}
	noDB.Path = "/agentrt_no_such_database"
	for _, tt := range []struct {
		name, url string
		want      string // in the error
		storage   bool   // wraps store.ErrStorage
	}{
		{"not a postgres URL", "mysql://root:" + password + "@localhost/db", "invalid URL", false},
		{"unparsable", "postgres://postgres:" + password + "@localhost:notaport/db", "invalid URL", false},
		{"unreachable server", "postgres://postgres:" + password + "@127.0.0.1:1/db?connect_timeout=2", "127.0.0.1", true},
		{"no such database", noDB.String(), "agentrt_no_such_database", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, err := pgstore.Open(ctx, tt.url, pgstore.Options{})
			if err == nil {
				s.Close()
				t.Fatalf("Open(%s) succeeded, want an error", tt.name)
			}
			msg := err.Error()
			t.Logf("%s: %s", tt.name, msg)
			if strings.Contains(msg, password) {
				t.Errorf("Open error holds the password: %s", msg)
			}
			if !strings.Contains(msg, tt.want) {
				t.Errorf("Open error = %s, want it to name %q", msg, tt.want)
			}
			if errors.Is(err, store.ErrStorage) != tt.storage {
				t.Errorf("Open error = %v, wraps store.ErrStorage: %v, want %v", err, !tt.storage, tt.storage)
			}
		})
	}
}

// TestPasswordNotInErrors checks that a store opened with a password in
// its URL names it in no error, even once the server is gone.
func TestPasswordNotInErrors(t *testing.T) {
	ctx := t.Context()
	url := withPassword(t, testenv.Postgres(t))
	s := open(t, url, pgstore.Options{})
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("Migrate again: %v", err)
	}
	// Cut the store's connections from the server's side.
	db, err := sql.Open("pgx", testenv.PostgresAdmin(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	u, _ := neturl.Parse(url)
	if _, err := db.ExecContext(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()`,
		strings.TrimPrefix(u.Path, "/")); err != nil {
		t.Fatalf("terminating the store's connections: %v", err)
	}
	tx, err := s.Begin(ctx)
	if err == nil {
		err = tx.Apply(ctx, &store.Batch{Sessions: []*runtype.Session{{ID: "ses_x", Owner: runtype.Owner{TenantID: "t", PrincipalID: "p"}, Agent: "a"}}})
		if cerr := tx.Commit(); err == nil {
			err = cerr
		}
	}
	// database/sql retries a connection it finds closed, so the write
	// may well succeed on a new one; if not, its error is clean.
	if err != nil && strings.Contains(err.Error(), password) {
		t.Errorf("write error holds the password: %v", err)
	}
	if _, err := s.SessionGet(ctx, &store.SessionGetParams{TenantID: "t", ID: "ses_none"}); err == nil || strings.Contains(err.Error(), password) {
		t.Errorf("SessionGet(missing) = %v, want a not-found error without the password", err)
	}
}

func TestNewerSchemaIsRefused(t *testing.T) {
	ctx := t.Context()
	url := testenv.Postgres(t)
	open(t, url, pgstore.Options{})
	db, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var latest int
	if err := db.QueryRowContext(ctx, `SELECT max(version) FROM agentrt_schema_migrations`).Scan(&latest); err != nil {
		t.Fatalf("reading the schema version: %v", err)
	}
	// A newer agentrt migrated the database further.
	if _, err := db.ExecContext(ctx, `INSERT INTO agentrt_schema_migrations (version, name, applied_at) VALUES ($1, 'from_the_future', 0)`, latest+1); err != nil {
		t.Fatalf("marking the schema newer: %v", err)
	}
	s, err := pgstore.Open(ctx, url, pgstore.Options{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer s.Close()
	if err := s.Migrate(ctx); !errors.Is(err, store.ErrSchemaTooNew) {
		t.Errorf("Migrate on a newer schema = %v, want store.ErrSchemaTooNew", err)
	}
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM agentrt_schema_migrations`).Scan(&n); err != nil || n != latest+1 {
		t.Errorf("migrations recorded after the refusal = %d, %v; want %d", n, err, latest+1)
	}
}

// TestInterruptedMigrationCompletes fails the migration half-way (a table
// it creates late is in the way): nothing of it is left, and once the
// obstacle is gone a second run completes it.
func TestInterruptedMigrationCompletes(t *testing.T) {
	ctx := t.Context()
	url := testenv.Postgres(t)
	db, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, `CREATE TABLE memory_stats (in_the_way INT)`); err != nil {
		t.Fatalf("creating the obstacle: %v", err)
	}
	s, err := pgstore.Open(ctx, url, pgstore.Options{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer s.Close()
	if err := s.Migrate(ctx); err == nil {
		t.Fatal("Migrate with a table in the way succeeded, want it to fail")
	}
	var tables []string
	rows, err := db.QueryContext(ctx, `SELECT tablename FROM pg_tables WHERE schemaname = current_schema() ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, name)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"memory_stats"}, tables); diff != "" {
		t.Errorf("tables after the failed migration (-want +got):\n%s", diff)
	}
	if _, err := db.ExecContext(ctx, `DROP TABLE memory_stats`); err != nil {
		t.Fatal(err)
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("Migrate again: %v", err)
	}
	if got := s.Info(); got.SchemaVersion == 0 || got.SchemaVersion != got.SchemaLatest || got.Driver != "postgres" || got.Version == "" {
		t.Errorf("Info after the second run = %+v, want the latest schema", got)
	}
}

// TestNodesMigrateOnce starts several nodes on one new database at once.
func TestNodesMigrateOnce(t *testing.T) {
	ctx := t.Context()
	url := testenv.Postgres(t)
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i := range errs {
		s, err := pgstore.Open(ctx, url, pgstore.Options{MaxConns: 1})
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		defer s.Close()
		wg.Go(func() { errs[i] = s.Migrate(ctx) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("node %d: Migrate: %v", i, err)
		}
	}
	db, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n, distinct int
	if err := db.QueryRowContext(ctx, `SELECT count(*), count(DISTINCT version) FROM agentrt_schema_migrations`).Scan(&n, &distinct); err != nil || n != distinct || n == 0 {
		t.Errorf("migrations recorded = %d (%d versions), %v; want each once", n, distinct, err)
	}
}

// TestTwoNodes writes through two Stores on one database at once, each
// with its Writer: each sees the other's commits, in one cursor order
// that keeps each session's sequences in order.
func TestTwoNodes(t *testing.T) {
	ctx := t.Context()
	url := testenv.Postgres(t)
	nodes := []*pgstore.Store{node(t, url), node(t, url)}
	const sessions, steps = 4, 10
	var wg sync.WaitGroup
	errs := make(chan error, len(nodes)*sessions)
	for n, s := range nodes {
		w := store.NewWriter(s, store.WriterConfig{})
		for i := range sessions {
			id := fmt.Sprintf("ses_%d_%d", n, i)
			wg.Go(func() {
				owner := runtype.Owner{TenantID: "t", PrincipalID: "p"}
				for seq := int64(1); seq <= steps; seq++ {
					b := &store.Batch{Events: []*event.Event{{
						Type: event.SessionCreated, EventID: fmt.Sprintf("evt_%s_%d", id, seq), SchemaVersion: event.SchemaVersion,
						SessionID: id, Sequence: seq, Payload: &event.SessionPayload{Agent: "a"}, TenantID: "t",
					}}}
					if seq == 1 {
						b.Sessions = []*runtype.Session{{ID: id, Owner: owner, Agent: "a"}}
					}
					if err := w.Write(ctx, b); err != nil {
						errs <- fmt.Errorf("session %s, step %d: %w", id, seq, err)
						return
					}
				}
			})
		}
		defer func() {
			if err := w.Stop(ctx); err != nil {
				t.Errorf("Stop: %v", err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	var lists [][]string
	for n, s := range nodes {
		evs, err := s.EventListAfter(ctx, &store.EventListAfterParams{Limit: 1000})
		if err != nil {
			t.Fatalf("node %d: EventListAfter: %v", n, err)
		}
		if len(evs) != len(nodes)*sessions*steps {
			t.Errorf("node %d sees %d events, want %d", n, len(evs), len(nodes)*sessions*steps)
		}
		var list []string
		last := map[string]int64{}
		for i, e := range evs {
			if i > 0 && e.Cursor <= evs[i-1].Cursor {
				t.Errorf("node %d: cursor %d after %d", n, e.Cursor, evs[i-1].Cursor)
			}
			if e.Sequence != last[e.SessionID]+1 {
				t.Errorf("node %d: session %s: sequence %d after %d in cursor order", n, e.SessionID, e.Sequence, last[e.SessionID])
			}
			last[e.SessionID] = e.Sequence
			list = append(list, fmt.Sprintf("%d %s", e.Cursor, e.EventID))
		}
		lists = append(lists, list)
		for i := range sessions {
			other := fmt.Sprintf("ses_%d_%d", 1-n, i)
			if _, err := s.SessionGet(ctx, &store.SessionGetParams{TenantID: "t", ID: other}); err != nil {
				t.Errorf("node %d: SessionGet(%s), written by the other node: %v", n, other, err)
			}
		}
	}
	if diff := cmp.Diff(lists[0], lists[1]); diff != "" {
		t.Errorf("the nodes see different events (-node 0 +node 1):\n%s", diff)
	}
	// A sequence another node took conflicts, though this node holds no
	// sequence of that session.
	tx, err := nodes[1].Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	err = tx.Apply(ctx, &store.Batch{Events: []*event.Event{{
		Type: event.SessionCreated, EventID: "evt_again", SchemaVersion: event.SchemaVersion,
		SessionID: "ses_0_0", Sequence: steps, Payload: &event.SessionPayload{Agent: "a"}, TenantID: "t",
	}}})
	if !errors.Is(err, store.ErrConflict) {
		t.Errorf("Apply of a sequence the other node wrote = %v, want store.ErrConflict", err)
	}
}

// TestTwoNodesExtendOneChain seals events of one session on two nodes in
// turn: each node's write starts from the chain's end as the database has
// it, not as the node last left it, so the chain stays one.
func TestTwoNodesExtendOneChain(t *testing.T) {
	ctx := t.Context()
	url := testenv.Postgres(t)
	nodes := []*pgstore.Store{node(t, url), node(t, url)}
	const id, steps = "ses_chain", 6
	for seq := int64(1); seq <= steps; seq++ {
		e := &event.Event{
			Type: event.PermissionEvaluated, EventID: fmt.Sprintf("evt_%d", seq), SchemaVersion: event.SchemaVersion,
			SessionID: id, Sequence: seq, TenantID: "t", Payload: &event.PermissionPayload{ToolName: "shell", Hop: 1},
			PermissionDecision: &event.PermissionDecision{Decision: "allow", Source: "rule", ReasonCode: "allowed", ToolName: "shell"},
		}
		b := &store.Batch{Events: []*event.Event{e}}
		if seq == 1 {
			b.Sessions = []*runtype.Session{{ID: id, Owner: runtype.Owner{TenantID: "t", PrincipalID: "p"}, Agent: "a"}}
		}
		s := nodes[seq%2]
		tx, err := s.Begin(ctx)
		if err != nil {
			t.Fatalf("Begin: %v", err)
		}
		if err := tx.Apply(ctx, b); err != nil {
			tx.Rollback()
			t.Fatalf("step %d on node %d: Apply: %v", seq, seq%2, err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatalf("step %d: Commit: %v", seq, err)
		}
	}
	rs, err := nodes[0].ReceiptList(ctx, &store.ReceiptListParams{TenantID: "t", SessionID: id, Limit: store.MaxListLimit})
	if err != nil {
		t.Fatalf("ReceiptList: %v", err)
	}
	if len(rs) != steps {
		t.Errorf("%d receipts, want %d", len(rs), steps)
	}
	if err := store.VerifyReceipts(rs); err != nil {
		t.Errorf("VerifyReceipts: %v", err)
	}
}

// TestCheckIntegrity: the check a runtime runs at start passes on
// PostgreSQL (it is SQLite's quick_check in the core).
func TestCheckIntegrity(t *testing.T) {
	var c store.IntegrityChecker = open(t, testenv.Postgres(t), pgstore.Options{})
	if err := c.CheckIntegrity(t.Context()); err != nil {
		t.Errorf("CheckIntegrity: %v", err)
	}
}
