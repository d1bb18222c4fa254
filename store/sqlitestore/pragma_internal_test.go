package sqlitestore

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestPragmas checks that the write connection really runs in WAL mode with
// the synchronous level asked for, and that the read pool cannot write.
func TestPragmas(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		opts Options
		want int // PRAGMA synchronous: 1 is NORMAL, 2 is FULL
	}{
		{Options{}, 2},
		{Options{Synchronous: "FULL"}, 2},
		{Options{Synchronous: "normal"}, 1},
	} {
		t.Run(tt.opts.Synchronous, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			s, err := Open(ctx, filepath.Join(t.TempDir(), "agentrt.db"), tt.opts)
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			t.Cleanup(func() { s.Close() })
			var journal string
			var sync, busy int
			if err := s.write.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&journal); err != nil {
				t.Fatalf("PRAGMA journal_mode: %v", err)
			}
			if err := s.write.QueryRowContext(ctx, `PRAGMA synchronous`).Scan(&sync); err != nil {
				t.Fatalf("PRAGMA synchronous: %v", err)
			}
			if err := s.write.QueryRowContext(ctx, `PRAGMA busy_timeout`).Scan(&busy); err != nil {
				t.Fatalf("PRAGMA busy_timeout: %v", err)
			}
			if journal != "wal" || sync != tt.want || busy != 5000 {
				t.Errorf("write connection: journal_mode %q, synchronous %d, busy_timeout %d; want wal, %d, 5000", journal, sync, busy, tt.want)
			}
			if err := s.read.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&journal); err != nil || journal != "wal" {
				t.Errorf("read connection: journal_mode %q, %v; want wal", journal, err)
			}
			if _, err := s.read.ExecContext(ctx, `CREATE TABLE scratch (x)`); err == nil {
				t.Errorf("read pool created a table; want it read-only")
			}
		})
	}
}

func TestOpenRejectsBadOptions(t *testing.T) {
	t.Parallel()
	for _, opts := range []Options{{Synchronous: "OFF"}, {Synchronous: "EXTRA"}} {
		_, err := Open(t.Context(), filepath.Join(t.TempDir(), "agentrt.db"), opts)
		if err == nil || !strings.Contains(err.Error(), "synchronous") {
			t.Errorf("Open(%+v) error = %v, want an invalid synchronous error", opts, err)
		}
	}
}

func TestMigrationsLoad(t *testing.T) {
	t.Parallel()
	ms, err := loadMigrations(migrationFS)
	if err != nil {
		t.Fatalf("loadMigrations: %v", err)
	}
	if len(ms) == 0 || ms[0].version != 1 || ms[0].name != "initial" {
		t.Errorf("migrations = %+v, want 001_initial first", ms)
	}
}

// TestMigrateDownAndUp checks that the down migrations undo the up ones:
// after reverting to 0 the schema is empty, and migrating again works.
func TestMigrateDownAndUp(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "agentrt.db"), Options{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	if err := s.migrateDown(ctx, 0); err != nil {
		t.Fatalf("migrateDown: %v", err)
	}
	var tables []string
	rows, err := s.read.QueryContext(ctx, `SELECT name FROM sqlite_master WHERE type IN ('table', 'index') AND name NOT LIKE 'sqlite_%' ORDER BY name`)
	if err != nil {
		t.Fatalf("listing tables: %v", err)
	}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatalf("Scan: %v", err)
		}
		tables = append(tables, name)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("listing tables: %v", err)
	}
	if len(tables) != 1 || tables[0] != "agentrt_schema_migrations" || s.Info().SchemaVersion != 0 {
		t.Errorf("after reverting everything: tables %v, schema version %d; want only agentrt_schema_migrations and 0", tables, s.Info().SchemaVersion)
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("Migrate after revert: %v", err)
	}
	tx, err := s.Begin(ctx)
	if err != nil {
		t.Fatalf("Begin after migrating again: %v", err)
	}
	if err := tx.Rollback(); err != nil {
		t.Errorf("Rollback: %v", err)
	}
}
