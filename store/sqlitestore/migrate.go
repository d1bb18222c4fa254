package sqlitestore

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/agentrt/agentrt/store"
)

//go:embed migration/*.sql
var migrationFS embed.FS

// migration is one numbered schema step.
type migration struct {
	version  int
	name     string
	up, down string
}

// migrations are the embedded migrations by version, from 1 without gaps.
var migrations = mustLoadMigrations(migrationFS)

func mustLoadMigrations(fsys fs.FS) []migration {
	ms, err := loadMigrations(fsys)
	if err != nil {
		panic(err) // the embedded files are part of the build; a test loads them
	}
	return ms
}

func loadMigrations(fsys fs.FS) ([]migration, error) {
	names, err := fs.Glob(fsys, "migration/*.sql")
	if err != nil {
		return nil, fmt.Errorf("listing migrations: %w", err)
	}
	byVersion := make(map[int]*migration)
	for _, path := range names {
		base := strings.TrimPrefix(path, "migration/")
		stem, dir, ok := strings.Cut(strings.TrimSuffix(base, ".sql"), ".")
		num, name, ok2 := strings.Cut(stem, "_")
		v, err := strconv.Atoi(num)
		if !ok || !ok2 || err != nil || v <= 0 || (dir != "up" && dir != "down") {
			return nil, fmt.Errorf("loading migrations: unexpected file name %s, want NNN_name.up.sql or NNN_name.down.sql", base)
		}
		text, err := fs.ReadFile(fsys, path)
		if err != nil {
			return nil, fmt.Errorf("loading migration %s: %w", base, err)
		}
		m := byVersion[v]
		if m == nil {
			m = &migration{version: v, name: name}
			byVersion[v] = m
		}
		if m.name != name {
			return nil, fmt.Errorf("loading migrations: version %d has two names, %s and %s", v, m.name, name)
		}
		if dir == "up" {
			m.up = string(text)
		} else {
			m.down = string(text)
		}
	}
	ms := make([]migration, 0, len(byVersion))
	for _, m := range byVersion {
		ms = append(ms, *m)
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	for i, m := range ms {
		if m.version != i+1 {
			return nil, fmt.Errorf("loading migrations: version %d is missing", i+1)
		}
		if m.up == "" || m.down == "" {
			return nil, fmt.Errorf("loading migrations: version %d needs both an up and a down file", m.version)
		}
	}
	return ms, nil
}

// latestVersion is the schema version this driver migrates to.
func latestVersion() int { return len(migrations) }

const createMigrationTable = `CREATE TABLE IF NOT EXISTS agentrt_schema_migrations (
    version    INTEGER NOT NULL PRIMARY KEY,
    name       TEXT    NOT NULL,
    applied_at INTEGER NOT NULL
)`

// Migrate applies the migrations the database lacks, in one transaction. It
// returns store.ErrSchemaTooNew, changing nothing, when the database is at
// a version this driver does not know.
func (s *Store) Migrate(ctx context.Context) error {
	if s.closed.Load() {
		return store.ErrClosed
	}
	return s.migrateUp(ctx, len(s.migs))
}

// migrateUp applies the migrations the database lacks up to version, in
// one transaction. Tests use it to build a database of an older version.
func (s *Store) migrateUp(ctx context.Context, version int) error {
	latest := len(s.migs)
	err := s.inWriteTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, s.d.sql(createMigrationTable)); err != nil {
			return fmt.Errorf("creating migration table: %w", translate(err))
		}
		current, err := s.schemaVersion(ctx, tx)
		if err != nil {
			return err
		}
		if current > latest {
			return fmt.Errorf("database schema is at version %d, this driver knows up to %d: %w", current, latest, store.ErrSchemaTooNew)
		}
		for _, m := range s.migs[min(current, version):version] {
			if _, err := tx.ExecContext(ctx, m.up); err != nil {
				return fmt.Errorf("applying migration %03d_%s: %w", m.version, m.name, translate(err))
			}
			if _, err := tx.ExecContext(ctx, s.d.sql(`INSERT INTO agentrt_schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`),
				m.version, m.name, time.Now().UnixNano()); err != nil {
				return fmt.Errorf("recording migration %03d_%s: %w", m.version, m.name, translate(err))
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("migrating %s store: %w", s.d.Name, err)
	}
	return s.refreshInfo(ctx)
}

// migrateDown reverts the migrations above version, newest first, in one
// transaction.
func (s *Store) migrateDown(ctx context.Context, version int) error {
	err := s.inWriteTx(ctx, func(tx *sql.Tx) error {
		current, err := s.schemaVersion(ctx, tx)
		if err != nil {
			return err
		}
		if current > len(s.migs) {
			return fmt.Errorf("database schema is at version %d, this driver knows up to %d: %w", current, len(s.migs), store.ErrSchemaTooNew)
		}
		s.lastSeq, s.heads, s.scopes = nil, nil, nil // the events may be gone
		for v := current; v > version; v-- {
			m := s.migs[v-1]
			if _, err := tx.ExecContext(ctx, m.down); err != nil {
				return fmt.Errorf("reverting migration %03d_%s: %w", m.version, m.name, err)
			}
			if _, err := tx.ExecContext(ctx, s.d.sql(`DELETE FROM agentrt_schema_migrations WHERE version = ?`), v); err != nil {
				return fmt.Errorf("recording revert of migration %03d_%s: %w", m.version, m.name, err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("reverting %s store migrations: %w", s.d.Name, err)
	}
	// Statements prepared against dropped tables are useless now.
	if err := s.w.close(); err != nil {
		return err
	}
	if err := s.r.close(); err != nil {
		return err
	}
	return s.refreshInfo(ctx)
}

func (s *Store) inWriteTx(ctx context.Context, f func(*sql.Tx) error) error {
	tx, err := s.beginWrite(ctx)
	if err != nil {
		return err
	}
	if err := f(tx); err != nil {
		if rerr := tx.Rollback(); rerr != nil {
			return fmt.Errorf("%w (rolling back: %w)", err, rerr)
		}
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("committing transaction: %w", translate(err))
	}
	return nil
}

type queryRower interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// schemaVersion returns the highest applied migration, 0 for a database
// agentrt never migrated.
func (s *Store) schemaVersion(ctx context.Context, db queryRower) (int, error) {
	var n int
	err := db.QueryRowContext(ctx, s.d.HasSchemaTableSQL).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("reading schema version: %w", translate(err))
	}
	if n == 0 {
		return 0, nil
	}
	var v int
	if err := db.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM agentrt_schema_migrations`).Scan(&v); err != nil {
		return 0, fmt.Errorf("reading schema version: %w", translate(err))
	}
	return v, nil
}
