package pgstore_test

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/internal/testenv"
	"github.com/agentrt/agentrt/model/replay"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/pgstore"
	"github.com/agentrt/agentrt/store/sqlitestore"
)

// populated returns a data directory whose SQLite store a runtime filled
// (two sessions of turns that list a directory: permission decisions and
// tool results, sealed by receipts) and this test added memories, a blob
// and a limit to, with the store closed.
func populated(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	s, err := replay.Parse("s.replay.yaml", []byte(`responses:
  - text: "Looking."
    tool_calls: [{name: list_dir, input: {path: "."}}]
  - text: "Done."
  - tool_calls: [{name: list_dir, input: {path: "."}}]
  - text: "Done again."
`))
	if err != nil {
		t.Fatal(err)
	}
	rt, err := agentrt.New(agentrt.Config{DataDir: dir, Agents: map[string]*agentrt.Agent{"a": {
		Provider: replay.New(s), Tools: []string{"list_dir"}, Workspace: t.TempDir(),
	}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Start(ctx); err != nil {
		t.Fatal(err)
	}
	var sessions []string
	for i := range 3 {
		p := &apitype.SubmitTurnParams{Agent: "a", Input: fmt.Sprintf("look %d", i)}
		if i == 2 {
			p.SessionID = sessions[0] // a second turn in the first session
		}
		res, err := rt.SubmitTurn(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		turn, err := rt.WaitTurn(ctx, runtype.Owner{}, res.TurnID)
		if err != nil {
			t.Fatal(err)
		}
		if turn.Status != runtype.StatusCompleted {
			t.Fatalf("turn %d %s (%s), want completed", i, turn.Status, turn.StatusReason)
		}
		if i < 2 {
			sessions = append(sessions, res.SessionID)
		}
	}
	if err := rt.Stop(ctx); err != nil {
		t.Fatal(err)
	}

	ss, err := sqlitestore.Open(ctx, filepath.Join(dir, "agentrt.db"), sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	for i, content := range []string{"The deploys run on Fridays.", "Über-deploy failed twice", "Nothing here"} {
		m := &runtype.Memory{ID: fmt.Sprintf("mem_%d", i), Owner: runtype.Owner{TenantID: "default"}, Agent: "a", Source: runtype.MemorySourceOperator,
			Content: content, CreatedAt: time.Unix(int64(1000+i), 0)}
		if err := ss.MemorySave(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	if err := ss.MemoryForget(ctx, &store.MemoryForgetParams{MemoryScope: store.MemoryScope{TenantID: "default", Agent: "a"}, ID: "mem_2"}); err != nil {
		t.Fatal(err)
	}
	data := []byte{0, 1, 2, 255}
	sum := sha256.Sum256(data)
	b := &runtype.Blob{Owner: runtype.Owner{TenantID: "default"}, Ref: "sha256:" + hex.EncodeToString(sum[:]), MediaType: "application/octet-stream", Data: data, CreatedAt: time.Unix(5, 0)}
	tx, err := ss.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Apply(ctx, &store.Batch{Blobs: []*runtype.Blob{b}}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// openSource opens a data directory's SQLite database read-only.
func openSource(t *testing.T, dir string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "agentrt.db")+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// migratedTarget returns a new PostgreSQL database migrated by pgstore,
// its URL and a handle on it.
func migratedTarget(t *testing.T) (string, *sql.DB) {
	t.Helper()
	url := testenv.Postgres(t)
	ps, err := pgstore.Open(context.Background(), url, pgstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := ps.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	ps.Close()
	db, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return url, db
}

// tables are the tables both stores hold, but the migrations' and the
// full-text index.
func tables(t *testing.T, src *sql.DB) []string {
	t.Helper()
	rows, err := src.Query(`SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite%'
		AND name NOT LIKE 'memories_fts%' AND name <> 'agentrt_schema_migrations' ORDER BY name`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var ts []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		ts = append(ts, n)
	}
	return ts
}

// dump reads a table's rows, each as its values' text in column order,
// sorted: the same rows dump the same from either database.
func dump(t *testing.T, db *sql.DB, table string, cols []string) []string {
	t.Helper()
	rows, err := db.Query(`SELECT ` + strings.Join(cols, ", ") + ` FROM ` + table)
	if err != nil {
		t.Fatalf("reading %s: %v", table, err)
	}
	defer rows.Close()
	var out []string
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for _, v := range vals {
			switch v := v.(type) {
			case []byte:
				fmt.Fprintf(&b, "%x|", v)
			case nil:
				b.WriteString("NULL|")
			default:
				fmt.Fprintf(&b, "%v|", v)
			}
		}
		out = append(out, b.String())
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

func columns(t *testing.T, src *sql.DB, table string) []string {
	t.Helper()
	rows, err := src.Query(`SELECT name FROM pragma_table_info(?)`, table)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var cols []string
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			t.Fatal(err)
		}
		cols = append(cols, `"`+c+`"`)
	}
	return cols
}

// TestCopyFromSQLite copies a store a runtime filled: every table's rows
// arrive as they were, memories are searchable, new rows continue the
// numbering, and the receipt chains verify.
func TestCopyFromSQLite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := populated(t)
	src := openSource(t, dir)
	url, dst := migratedTarget(t)

	counts, err := pgstore.CopyFromSQLite(ctx, src, dst)
	if err != nil {
		t.Fatalf("CopyFromSQLite: %v", err)
	}
	for _, table := range tables(t, src) {
		cols := columns(t, src, table)
		want, got := dump(t, src, table, cols), dump(t, dst, table, cols)
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("%s differs after the copy (-sqlite +postgres):\n%s", table, d)
		}
		if counts[table] != int64(len(want)) {
			t.Errorf("Counts[%s] = %d, want %d", table, counts[table], len(want))
		}
	}
	for _, table := range []string{"events", "receipts", "event_scopes", "turns", "tool_calls", "memories", "blobs", "thread_totals"} {
		if counts[table] == 0 {
			t.Errorf("the source has no %s: the test copies nothing of them", table)
		}
	}

	// memories_fts holds the words of the memories there are.
	var hits []int64
	rows, err := dst.Query(`SELECT f.rowid FROM memories_fts f JOIN memories m ON m.seq = f.rowid
		WHERE f.words @@ $1::tsquery ORDER BY 1`, "deploy")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var seq int64
		rows.Scan(&seq)
		hits = append(hits, seq)
	}
	rows.Close()
	if counts["memories_fts"] != 2 || len(hits) != 2 {
		t.Errorf("memories_fts: %d rows, %d hold \"deploy\"; want 2 and 2", counts["memories_fts"], len(hits))
	}

	// A new event, scope and memory continue after the copied ones.
	for _, q := range []struct{ max, insert string }{
		{`SELECT MAX(cursor) FROM events`, `INSERT INTO events (session_id, sequence, scope, body) VALUES ('ses_new', 1, 1, '\x01') RETURNING cursor`},
		{`SELECT MAX(id) FROM event_scopes`, `INSERT INTO event_scopes (tenant_id, session_id, thread_id, turn_id, task_id, run_id, trace_id, runtime_id)
			VALUES ('t', 's', '', '', '', '', '', '') RETURNING id`},
		{`SELECT MAX(seq) FROM memories`, `INSERT INTO memories (id, tenant_id, agent, source, content, created_at)
			VALUES ('mem_new', 't', 'a', 'user', 'x', 1) RETURNING seq`},
	} {
		var max, next int64
		if err := src.QueryRow(q.max).Scan(&max); err != nil {
			t.Fatal(err)
		}
		if err := dst.QueryRow(q.insert).Scan(&next); err != nil {
			t.Fatal(err)
		}
		if next != max+1 {
			t.Errorf("%s: the next row got %d, want %d", q.insert[:strings.Index(q.insert, "(")], next, max+1)
		}
	}

	// Through the stores: each session's receipt chain reads back from
	// PostgreSQL as from SQLite and verifies, with its events; and the
	// memories are searched alike.
	ss, err := sqlitestore.Open(ctx, filepath.Join(dir, "agentrt.db"), sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	ps, err := pgstore.Open(ctx, url, pgstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ps.Close()
	sealed := 0
	for _, row := range dump(t, src, "sessions", []string{"tenant_id", "id"}) {
		tenant, id, _ := strings.Cut(strings.TrimSuffix(row, "|"), "|")
		rp := &store.ReceiptListParams{TenantID: tenant, SessionID: id, Limit: store.MaxListLimit}
		want, err := ss.ReceiptList(ctx, rp)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ps.ReceiptList(ctx, rp)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("session %s's receipts differ (-sqlite +postgres):\n%s", id, d)
		}
		if err := store.VerifyReceipts(got); err != nil {
			t.Errorf("session %s's receipts on PostgreSQL: %v", id, err)
		}
		sealed += len(got)
		ep := &store.EventListAfterParams{Filter: event.Filter{TenantID: tenant, SessionID: id}, Limit: store.MaxListLimit}
		wantEv, err := ss.EventListAfter(ctx, ep)
		if err != nil {
			t.Fatal(err)
		}
		gotEv, err := ps.EventListAfter(ctx, ep)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(eventJSON(t, wantEv), eventJSON(t, gotEv)); d != "" {
			t.Errorf("session %s's events differ (-sqlite +postgres):\n%s", id, d)
		}
	}
	if sealed == 0 {
		t.Error("no receipts in the source")
	}

	// What agentrt verify --session checks, by a runtime on the copy:
	// every chain, and every sealed event against its receipt.
	script, err := replay.Parse("idle.replay.yaml", []byte("responses: [{text: hi}]"))
	if err != nil {
		t.Fatal(err)
	}
	rt, err := agentrt.New(agentrt.Config{Store: ps, NoWorkers: true, Agents: map[string]*agentrt.Agent{"a": {Provider: replay.New(script)}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer rt.Stop(ctx)
	for _, id := range dump(t, src, "sessions", []string{"id"}) {
		id = strings.TrimSuffix(id, "|")
		res, err := rt.VerifySession(ctx, runtype.Owner{}, id)
		if err != nil {
			t.Fatal(err)
		}
		if !res.OK || res.Receipts == 0 {
			t.Errorf("VerifySession(%s) on the copy = %+v, want OK with receipts", id, res)
		}
	}
	mp := &store.MemorySearchParams{MemoryScope: store.MemoryScope{TenantID: "default", Agent: "a"}, Query: "deploying"}
	wantHits, err := ss.MemorySearch(ctx, mp)
	if err != nil {
		t.Fatal(err)
	}
	gotHits, err := ps.MemorySearch(ctx, mp)
	if err != nil {
		t.Fatal(err)
	}
	if len(wantHits) != 2 {
		t.Errorf("SQLite finds %d memories, want 2", len(wantHits))
	}
	if d := cmp.Diff(wantHits, gotHits); d != "" {
		t.Errorf("memory search differs (-sqlite +postgres):\n%s", d)
	}
}

// TestCopyFromSQLiteRefuses: a target that holds data, is not migrated
// or is at a schema this agentrt does not know, and a source at another
// SQLite schema version, are refused, and nothing is written.
func TestCopyFromSQLiteRefuses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := populated(t)
	src := openSource(t, dir)

	t.Run("TargetHoldsData", func(t *testing.T) {
		t.Parallel()
		_, dst := migratedTarget(t)
		if _, err := dst.Exec(`INSERT INTO api_tokens VALUES ('tok', 't', 'p', 'admin', 'n', 'pre', 'h', 1, 0, 0)`); err != nil {
			t.Fatal(err)
		}
		_, err := pgstore.CopyFromSQLite(ctx, src, dst)
		if err == nil || !strings.Contains(err.Error(), "holds data (table api_tokens") {
			t.Fatalf("CopyFromSQLite = %v, want refused: the target holds data", err)
		}
		wantRows(t, dst, "events", 0)
	})
	t.Run("SecondCopy", func(t *testing.T) {
		t.Parallel()
		_, dst := migratedTarget(t)
		if _, err := pgstore.CopyFromSQLite(ctx, src, dst); err != nil {
			t.Fatal(err)
		}
		var n int64
		dst.QueryRow(`SELECT count(*) FROM events`).Scan(&n)
		if _, err := pgstore.CopyFromSQLite(ctx, src, dst); err == nil || !strings.Contains(err.Error(), "holds data") {
			t.Fatalf("second CopyFromSQLite = %v, want refused", err)
		}
		wantRows(t, dst, "events", n)
	})
	t.Run("TargetNotMigrated", func(t *testing.T) {
		t.Parallel()
		dst, err := sql.Open("pgx", testenv.Postgres(t))
		if err != nil {
			t.Fatal(err)
		}
		defer dst.Close()
		if _, err := pgstore.CopyFromSQLite(ctx, src, dst); err == nil || !strings.Contains(err.Error(), "not migrated") {
			t.Fatalf("CopyFromSQLite = %v, want refused: not migrated", err)
		}
	})
	t.Run("TargetSchemaNewer", func(t *testing.T) {
		t.Parallel()
		_, dst := migratedTarget(t)
		if _, err := dst.Exec(`INSERT INTO agentrt_schema_migrations VALUES (2, 'future', 0)`); err != nil {
			t.Fatal(err)
		}
		if _, err := pgstore.CopyFromSQLite(ctx, src, dst); !errors.Is(err, store.ErrSchemaTooNew) {
			t.Fatalf("CopyFromSQLite = %v, want store.ErrSchemaTooNew", err)
		}
		wantRows(t, dst, "events", 0)
	})
	t.Run("SourceSchemaOlder", func(t *testing.T) {
		t.Parallel()
		old := t.TempDir()
		b, err := os.ReadFile(filepath.Join(dir, "agentrt.db"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(old, "agentrt.db"), b, 0o600); err != nil {
			t.Fatal(err)
		}
		w, err := sql.Open("sqlite", filepath.Join(old, "agentrt.db"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Exec(`DELETE FROM agentrt_schema_migrations WHERE version = (SELECT MAX(version) FROM agentrt_schema_migrations)`); err != nil {
			t.Fatal(err)
		}
		w.Close()
		_, dst := migratedTarget(t)
		_, err = pgstore.CopyFromSQLite(ctx, openSource(t, old), dst)
		if err == nil || !strings.Contains(err.Error(), "open the source with this agentrt") {
			t.Fatalf("CopyFromSQLite = %v, want refused: the source's schema is older", err)
		}
		wantRows(t, dst, "events", 0)
	})
}

func wantRows(t *testing.T, db *sql.DB, table string, want int64) {
	t.Helper()
	var n int64
	if err := db.QueryRow(`SELECT count(*) FROM ` + table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != want {
		t.Errorf("%s has %d rows, want %d", table, n, want)
	}
}

// eventJSON is each event's envelope, as the wire carries it, with its
// cursor.
func eventJSON(t *testing.T, evs []*event.Event) []string {
	t.Helper()
	var out []string
	for _, e := range evs {
		b, err := e.JSON()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%d %s", e.Cursor, b))
	}
	return out
}
