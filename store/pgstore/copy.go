package pgstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/agentrt/agentrt/store"
)

// sqliteVersionOf maps each schema version of this package to the SQLite
// schema version (store/sqlitestore's migrations) it mirrors table for
// table: CopyFromSQLite copies only between the two. A migration added on
// either side needs its counterpart and an entry here.
var sqliteVersionOf = map[int]int{1: 24}

// projections are the tables the schema's triggers keep from the others
// (thread totals, queue and action counts), and memory_stats, which the
// memory writes keep. Copying the other tables fires the triggers; these
// are then emptied and copied as they are, last.
var projections = []string{"action_counts", "memory_stats", "task_queue_counts", "task_queue_total", "thread_totals", "thread_turn_counts"}

// seeded are the tables migration 001 gives their one row; an empty
// database holds those rows only.
var seeded = []string{"memory_stats", "task_queue_total"}

// Counts is how many rows CopyFromSQLite copied, by table.
type Counts map[string]int64

// CopyFromSQLite copies an agentrt SQLite database (src, read in one
// transaction, so a consistent snapshot of a store in use) into an empty
// PostgreSQL database migrated by this package (dst), in one PostgreSQL
// transaction: every table's rows as they are (events with their
// cursors, scopes, blobs, receipts…), memories_fts rebuilt from the
// memories' words (SQLite's FTS5 index keeps none), then each identity
// sequence set past its table's largest value so that new rows continue
// the numbering. It refuses a target that holds data, and a pair of
// schema versions that do not mirror each other: the source must be at
// the SQLite schema version the target's mirrors (sqliteVersionOf), that
// is, opened and migrated by an agentrt of the same version first.
func CopyFromSQLite(ctx context.Context, src, dst *sql.DB) (Counts, error) {
	stx, err := src.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("copying from sqlite: reading the source: %w", err)
	}
	defer stx.Rollback()
	conn, err := dst.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("copying from sqlite: connecting to the target: %w", err)
	}
	defer conn.Close()
	var counts Counts
	err = conn.Raw(func(dc any) error {
		c, ok := dc.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("the target is not a pgx connection (%T)", dc)
		}
		tx, err := c.Conn().Begin(ctx)
		if err != nil {
			return fmt.Errorf("beginning the target's transaction: %w", err)
		}
		defer tx.Rollback(ctx)
		if counts, err = copyTx(ctx, stx, tx); err != nil {
			return err
		}
		if err := tx.Commit(ctx); err != nil {
			return fmt.Errorf("committing: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("copying from sqlite: %w", err)
	}
	return counts, nil
}

// pgColumn is a column of the target, in table order.
type pgColumn struct{ name, typ string }

func copyTx(ctx context.Context, src *sql.Tx, dst pgx.Tx) (Counts, error) {
	if err := checkVersions(ctx, src, dst); err != nil {
		return nil, err
	}
	// Nobody else writes while the copy runs (and a second copy waits),
	// as in every write transaction.
	if _, err := dst.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(writeLock)); err != nil {
		return nil, fmt.Errorf("locking the target: %w", err)
	}
	cols, err := targetColumns(ctx, dst)
	if err != nil {
		return nil, err
	}
	tables, err := sourceTables(ctx, src)
	if err != nil {
		return nil, err
	}
	var missing []string
	for t := range cols {
		if !slices.Contains(tables, t) {
			missing = append(missing, t)
		}
	}
	for _, t := range tables {
		if _, ok := cols[t]; !ok {
			missing = append(missing, t)
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return nil, fmt.Errorf("the source's and the target's tables differ (%s): their schemas do not mirror each other", strings.Join(missing, ", "))
	}
	if err := checkEmpty(ctx, dst, tables); err != nil {
		return nil, err
	}
	// The projections last, so that what the triggers made of the other
	// tables is replaced by the source's rows.
	slices.SortStableFunc(tables, func(a, b string) int {
		return boolInt(slices.Contains(projections, a)) - boolInt(slices.Contains(projections, b))
	})
	counts := Counts{}
	for _, t := range tables {
		if slices.Contains(projections, t) {
			if _, err := dst.Exec(ctx, `DELETE FROM `+pgx.Identifier{t}.Sanitize()); err != nil {
				return nil, fmt.Errorf("emptying %s: %w", t, err)
			}
		}
		n, err := copyTable(ctx, src, dst, t, cols[t])
		if err != nil {
			return nil, fmt.Errorf("copying %s: %w", t, err)
		}
		counts[t] = n
	}
	n, err := indexMemories(ctx, src, dst)
	if err != nil {
		return nil, fmt.Errorf("indexing memories: %w", err)
	}
	counts["memories_fts"] = n
	if err := advanceIdentities(ctx, dst); err != nil {
		return nil, err
	}
	return counts, nil
}

// checkVersions refuses a source and a target whose schemas do not
// mirror each other.
func checkVersions(ctx context.Context, src *sql.Tx, dst pgx.Tx) error {
	var migrated bool
	if err := dst.QueryRow(ctx, `SELECT to_regclass('agentrt_schema_migrations') IS NOT NULL`).Scan(&migrated); err != nil {
		return fmt.Errorf("reading the target's schema version: %w", err)
	}
	if !migrated {
		return errors.New("the target database is not migrated: migrate it with this agentrt first")
	}
	var pgVersion int
	if err := dst.QueryRow(ctx, `SELECT COALESCE(MAX(version), 0) FROM agentrt_schema_migrations`).Scan(&pgVersion); err != nil {
		return fmt.Errorf("reading the target's schema version: %w", err)
	}
	want, ok := sqliteVersionOf[pgVersion]
	if !ok {
		return fmt.Errorf("the target's schema is at version %d, which this agentrt does not know: %w", pgVersion, store.ErrSchemaTooNew)
	}
	var n, sqliteVersion int
	if err := src.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'agentrt_schema_migrations'`).Scan(&n); err != nil {
		return fmt.Errorf("reading the source's schema version: %w", err)
	}
	if n == 0 {
		return errors.New("the source is not an agentrt store (no schema version)")
	}
	if err := src.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM agentrt_schema_migrations`).Scan(&sqliteVersion); err != nil {
		return fmt.Errorf("reading the source's schema version: %w", err)
	}
	if sqliteVersion != want {
		return fmt.Errorf("the source's SQLite schema is at version %d, and the target's PostgreSQL schema %d mirrors SQLite's %d: open the source with this agentrt (which migrates it) and copy again", sqliteVersion, pgVersion, want)
	}
	return nil
}

// targetColumns returns the target's tables, but the migration table and
// memories_fts, with their columns in order.
func targetColumns(ctx context.Context, dst pgx.Tx) (map[string][]pgColumn, error) {
	rows, err := dst.Query(ctx, `SELECT c.table_name, c.column_name, c.data_type
		FROM information_schema.columns c JOIN information_schema.tables t
			ON t.table_schema = c.table_schema AND t.table_name = c.table_name
		WHERE c.table_schema = current_schema() AND t.table_type = 'BASE TABLE'
			AND c.table_name NOT IN ('agentrt_schema_migrations', 'memories_fts')
		ORDER BY c.table_name, c.ordinal_position`)
	if err != nil {
		return nil, fmt.Errorf("reading the target's tables: %w", err)
	}
	cols := map[string][]pgColumn{}
	for rows.Next() {
		var t string
		var c pgColumn
		if err := rows.Scan(&t, &c.name, &c.typ); err != nil {
			return nil, fmt.Errorf("reading the target's tables: %w", err)
		}
		cols[t] = append(cols[t], c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading the target's tables: %w", err)
	}
	return cols, nil
}

// sourceTables returns the source's tables but its migration table and
// FTS5's.
func sourceTables(ctx context.Context, src *sql.Tx) ([]string, error) {
	rows, err := src.QueryContext(ctx, `SELECT name FROM sqlite_schema WHERE type = 'table'
		AND name NOT LIKE 'sqlite\_%' ESCAPE '\' AND name NOT LIKE 'memories\_fts%' ESCAPE '\'
		AND name <> 'agentrt_schema_migrations' ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("reading the source's tables: %w", err)
	}
	defer rows.Close()
	var tables []string
	for rows.Next() {
		var t string
		if err := rows.Scan(&t); err != nil {
			return nil, fmt.Errorf("reading the source's tables: %w", err)
		}
		tables = append(tables, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading the source's tables: %w", err)
	}
	return tables, nil
}

// checkEmpty refuses a target with a row in any table (the seeded
// tables' own rows aside).
func checkEmpty(ctx context.Context, dst pgx.Tx, tables []string) error {
	for _, t := range append(slices.Clone(tables), "memories_fts") {
		if slices.Contains(seeded, t) {
			continue
		}
		var has bool
		if err := dst.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM `+pgx.Identifier{t}.Sanitize()+`)`).Scan(&has); err != nil {
			return fmt.Errorf("checking that the target is empty: %w", err)
		}
		if has {
			return fmt.Errorf("the target database holds data (table %s has rows): copy only into a new, empty database", t)
		}
	}
	return nil
}

// copyTable copies a table's rows with COPY, converting each value to
// the column's type where SQLite's dynamic typing stored another.
func copyTable(ctx context.Context, src *sql.Tx, dst pgx.Tx, table string, cols []pgColumn) (int64, error) {
	names := make([]string, len(cols))
	quoted := make([]string, len(cols))
	for i, c := range cols {
		names[i], quoted[i] = c.name, `"`+c.name+`"`
	}
	rows, err := src.QueryContext(ctx, `SELECT `+strings.Join(quoted, ", ")+` FROM "`+table+`"`)
	if err != nil {
		return 0, fmt.Errorf("reading the source: %w", err)
	}
	defer rows.Close()
	r := &rowSource{rows: rows, cols: cols, vals: make([]any, len(cols)), ptrs: make([]any, len(cols))}
	for i := range r.vals {
		r.ptrs[i] = &r.vals[i]
	}
	n, err := dst.CopyFrom(ctx, pgx.Identifier{table}, names, r)
	if err != nil {
		return 0, err
	}
	return n, nil
}

// rowSource feeds COPY from the source's rows.
type rowSource struct {
	rows *sql.Rows
	cols []pgColumn
	vals []any
	ptrs []any
	row  int64
	err  error
}

func (r *rowSource) Next() bool {
	if r.err != nil || !r.rows.Next() {
		return false
	}
	r.row++
	if r.err = r.rows.Scan(r.ptrs...); r.err != nil {
		return false
	}
	for i, c := range r.cols {
		v, err := convert(r.vals[i], c.typ)
		if err != nil {
			r.err = fmt.Errorf("row %d, column %s: %w", r.row, c.name, err)
			return false
		}
		r.vals[i] = v
	}
	return true
}

func (r *rowSource) Values() ([]any, error) { return r.vals, nil }

func (r *rowSource) Err() error {
	if r.err != nil {
		return r.err
	}
	return r.rows.Err()
}

// convert makes a value SQLite returned fit a PostgreSQL column of type
// typ (information_schema's name). SQLite keeps what it was given, so a
// BLOB column may hold text (a receipt hash migration 12 could not
// decode) and a TEXT column bytes.
func convert(v any, typ string) (any, error) {
	if v == nil {
		return nil, nil
	}
	switch typ {
	case "bigint":
		switch x := v.(type) {
		case int64:
			return x, nil
		case float64:
			if x == math.Trunc(x) && math.Abs(x) < 1<<63 {
				return int64(x), nil
			}
		}
	case "double precision":
		switch x := v.(type) {
		case float64:
			return x, nil
		case int64:
			return float64(x), nil
		}
	case "text":
		switch x := v.(type) {
		case string:
			return textValue(x)
		case []byte:
			return textValue(string(x))
		}
	case "bytea":
		switch x := v.(type) {
		case []byte:
			if x == nil {
				// An empty BLOB (pgx would send a nil slice as NULL).
				return []byte{}, nil
			}
			return x, nil
		case string:
			return []byte(x), nil
		}
	default:
		return nil, fmt.Errorf("column type %s is not copied", typ)
	}
	return nil, fmt.Errorf("a %T (%v) does not fit a %s column", v, v, typ)
}

// textValue refuses what PostgreSQL's text cannot hold.
func textValue(s string) (string, error) {
	switch {
	case !utf8.ValidString(s):
		return "", errors.New("text is not valid UTF-8")
	case strings.IndexByte(s, 0) >= 0:
		return "", errors.New("text holds a NUL byte")
	}
	return s, nil
}

// indexMemories fills memories_fts from the copied memories' words
// (store.MemoryWords of their content, under their seq), as saving each
// memory does.
func indexMemories(ctx context.Context, src *sql.Tx, dst pgx.Tx) (int64, error) {
	if _, err := dst.Exec(ctx, `CREATE TEMP TABLE memory_copy_words (seq BIGINT NOT NULL, words TEXT NOT NULL) ON COMMIT DROP`); err != nil {
		return 0, err
	}
	rows, err := src.QueryContext(ctx, `SELECT seq, content FROM memories`)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	w := &wordSource{rows: rows}
	if _, err := dst.CopyFrom(ctx, pgx.Identifier{"memory_copy_words"}, []string{"seq", "words"}, w); err != nil {
		return 0, err
	}
	tag, err := dst.Exec(ctx, `INSERT INTO memories_fts (rowid, words)
		SELECT seq, array_to_tsvector(string_to_array(words, ' ')) FROM memory_copy_words`)
	if err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}

// wordSource feeds COPY each memory's seq and words.
type wordSource struct {
	rows *sql.Rows
	vals [2]any
	err  error
}

func (w *wordSource) Next() bool {
	if w.err != nil || !w.rows.Next() {
		return false
	}
	var (
		seq     int64
		content string
	)
	if w.err = w.rows.Scan(&seq, &content); w.err != nil {
		return false
	}
	w.vals = [2]any{seq, strings.Join(store.MemoryWords(content), " ")}
	return true
}

func (w *wordSource) Values() ([]any, error) { return w.vals[:], nil }

func (w *wordSource) Err() error {
	if w.err != nil {
		return w.err
	}
	return w.rows.Err()
}

// advanceIdentities sets each identity column's sequence past its
// table's largest value (to 1 for an empty table), so that the next row
// gets the next number.
func advanceIdentities(ctx context.Context, dst pgx.Tx) error {
	rows, err := dst.Query(ctx, `SELECT table_name, column_name FROM information_schema.columns
		WHERE table_schema = current_schema() AND is_identity = 'YES' ORDER BY table_name`)
	if err != nil {
		return fmt.Errorf("reading the identity columns: %w", err)
	}
	type ident struct{ table, column string }
	var ids []ident
	for rows.Next() {
		var id ident
		if err := rows.Scan(&id.table, &id.column); err != nil {
			return fmt.Errorf("reading the identity columns: %w", err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("reading the identity columns: %w", err)
	}
	for _, id := range ids {
		t, c := pgx.Identifier{id.table}.Sanitize(), pgx.Identifier{id.column}.Sanitize()
		if _, err := dst.Exec(ctx, `SELECT setval(pg_get_serial_sequence($1, $2), COALESCE(MAX(`+c+`), 0) + 1, false) FROM `+t,
			t, id.column); err != nil {
			return fmt.Errorf("advancing %s.%s: %w", id.table, id.column, err)
		}
	}
	return nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
