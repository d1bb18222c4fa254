package pgstore

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/internal/testenv"
	"github.com/agentrt/agentrt/store/sqlitestore"
)

// migratedSQLite returns a new SQLite database at sqlitestore's latest
// schema, and that version.
func migratedSQLite(t *testing.T) (*sql.DB, int) {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "agentrt.db")
	s, err := sqlitestore.Open(ctx, path, sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	latest := s.Info().SchemaLatest
	s.Close()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db, latest
}

// TestSchemaMirrorsSQLite holds migration 001 to the SQLite schema it
// mirrors: the same tables with the same columns in the same order, of
// the mapped types, and the same indexes by name; and the schema
// versions to the map CopyFromSQLite checks them by.
func TestSchemaMirrorsSQLite(t *testing.T) {
	t.Parallel()
	lite, latest := migratedSQLite(t)
	ups, err := filepath.Glob("migration/*.up.sql")
	if err != nil {
		t.Fatal(err)
	}
	if got := sqliteVersionOf[len(ups)]; got != latest {
		t.Fatalf("sqliteVersionOf[%d] = %d, but sqlitestore's schema is at %d: write the PostgreSQL migration that mirrors "+
			"SQLite's new ones and map the versions", len(ups), got, latest)
	}
	db, err := sql.Open("pgx", testenv.Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, up := range ups {
		b, err := os.ReadFile(up)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(string(b)); err != nil {
			t.Fatalf("%s: %v", up, err)
		}
	}

	types := map[string]string{"INTEGER": "bigint", "TEXT": "text", "BLOB": "bytea", "REAL": "double precision"}
	var want []string
	for _, table := range strings.Fields(query1(t, lite, `SELECT group_concat(name, ' ') FROM (SELECT name FROM sqlite_schema
		WHERE type = 'table' AND name NOT LIKE 'sqlite%' AND name NOT LIKE 'memories_fts%' AND name <> 'agentrt_schema_migrations' ORDER BY name)`)) {
		// A primary key's columns are never NULL (SQLite's rowid alias
		// and WITHOUT ROWID keys say so only by being keys).
		rows, err := lite.Query(`SELECT name, type, "notnull" OR pk > 0 FROM pragma_table_info(?) ORDER BY cid`, table)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var name, typ string
			var notNull bool
			rows.Scan(&name, &typ, &notNull)
			col := table + "." + name + " " + types[typ]
			if notNull {
				col += " NOT NULL"
			}
			want = append(want, col)
		}
		rows.Close()
	}
	got := strings.Split(query1(t, db, `SELECT string_agg(table_name || '.' || column_name || ' ' || data_type
		|| CASE is_nullable WHEN 'NO' THEN ' NOT NULL' ELSE '' END, E'\n' ORDER BY table_name, ordinal_position) FROM information_schema.columns
		WHERE table_schema = current_schema() AND table_name <> 'memories_fts'`), "\n")
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("columns differ (-sqlite +postgres):\n%s", d)
	}

	wantIdx := query1(t, lite, `SELECT group_concat(name, ' ') FROM (SELECT name FROM sqlite_schema
		WHERE type = 'index' AND sql IS NOT NULL ORDER BY name)`)
	gotIdx := query1(t, db, `SELECT string_agg(indexname, ' ' ORDER BY indexname) FROM pg_indexes
		WHERE schemaname = current_schema() AND indexname NOT LIKE '%\_pkey'
		AND indexname NOT IN ('events_session_id_sequence_key', 'memories_id_key', 'job_items_id_key', 'memories_fts_words', 'tasks_lease_key')`)
	if wantIdx != gotIdx {
		t.Errorf("indexes differ:\nsqlite   %s\npostgres %s", wantIdx, gotIdx)
	}
	wantTrig := query1(t, lite, `SELECT group_concat(name, ' ') FROM (SELECT name FROM sqlite_schema WHERE type = 'trigger' ORDER BY name)`)
	gotTrig := query1(t, db, `SELECT string_agg(tgname, ' ' ORDER BY tgname) FROM pg_trigger WHERE NOT tgisinternal`)
	if wantTrig != gotTrig {
		t.Errorf("triggers differ:\nsqlite   %s\npostgres %s", wantTrig, gotTrig)
	}

	// Down drops everything up made.
	down, err := os.ReadFile("migration/001_initial.down.sql")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(string(down)); err != nil {
		t.Fatalf("001_initial.down.sql: %v", err)
	}
	if left := query1(t, db, `SELECT (SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = current_schema())
		+ (SELECT count(*) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = current_schema())`); left != "0" {
		t.Errorf("after down, %s relations and functions are left", left)
	}
}

func query1(t *testing.T, db *sql.DB, q string, args ...any) string {
	t.Helper()
	var s string
	if err := db.QueryRow(q, args...).Scan(&s); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return s
}
