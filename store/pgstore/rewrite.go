package pgstore

import (
	"regexp"
	"strconv"
	"strings"
)

// rewrite turns one of the SQL core's statements, written for SQLite,
// into PostgreSQL's dialect. Most of it is mechanical (placeholders,
// index hints, JSON functions); the few statements that differ beyond
// that are matched whole below. TestRewrite prepares every statement on
// a real server.
func rewrite(sqlite string) string {
	q := sqlite
	for _, r := range rewrites {
		q = r.re.ReplaceAllString(q, r.with)
	}
	q = fragments.Replace(q)
	return placeholders(q)
}

// rewrites are the patterns, in order.
var rewrites = []struct {
	re   *regexp.Regexp
	with string
}{
	// SQLite's index hints: PostgreSQL's planner picks for itself.
	{regexp.MustCompile(`\s+INDEXED BY \w+`), ``},
	// Usage sums. The JSON is TEXT and may be empty; SUM of BIGINT is
	// NUMERIC, cast back. TOTAL is a float SUM that is 0 on no rows.
	{regexp.MustCompile(`COALESCE\(SUM\(json_extract\((\w+), '\$\.(\w+)'\)\), 0\)`),
		`COALESCE(CAST(SUM(CAST(NULLIF($1, '')::jsonb->>'$2' AS BIGINT)) AS BIGINT), 0)`},
	{regexp.MustCompile(`TOTAL\(json_extract\((\w+), '\$\.(\w+)'\)\)`),
		`COALESCE(SUM(CAST(NULLIF($1, '')::jsonb->>'$2' AS DOUBLE PRECISION)), 0)`},
	// A JSON array of a subquery's column: json_agg is NULL on no rows,
	// and a subquery in FROM needs a name.
	{regexp.MustCompile(`json_group_array\((\w+)\) FROM \(([^()]*)\)\)`),
		`COALESCE(json_agg($1), '[]')::text FROM ($2) AS a)`},
	// The fenced insert of events selects from VALUES: the columns need
	// types there, and the subquery a name.
	{regexp.MustCompile(`SELECT \* FROM \(VALUES \(\?, \?, \?, \?\)`),
		`SELECT * FROM (VALUES (CAST(? AS TEXT), CAST(? AS BIGINT), CAST(? AS BIGINT), CAST(? AS BYTEA))`},
	{regexp.MustCompile(`\)\s+WHERE EXISTS \(SELECT 1 FROM tasks WHERE id = \?`),
		`) AS v WHERE EXISTS (SELECT 1 FROM tasks WHERE id = ?`},
	// LIMIT -1 is SQLite's "no limit"; PostgreSQL's is LIMIT NULL.
	{regexp.MustCompile(`LIMIT \?`), `LIMIT NULLIF(CAST(? AS BIGINT), -1)`},
}

// fragments are replaced as they are.
var fragments = strings.NewReplacer(
	// SQLite's CROSS JOIN fixes the join order; PostgreSQL's takes no ON.
	` CROSS JOIN `, ` JOIN `,
	`SELECT value FROM json_each(?)`, `SELECT jsonb_array_elements_text(CAST(? AS jsonb))`,
	// Two-argument max is GREATEST.
	`max(last_used_at, ?)`, `GREATEST(last_used_at, ?)`,
	// The migration runner's table: times are nanoseconds.
	`applied_at INTEGER NOT NULL`, `applied_at BIGINT NOT NULL`,
	// An upsert's SET names its table's column unqualified, the new
	// row's as excluded's.
	`SET memories = memories + excluded.memories`, `SET memories = memory_words.memories + excluded.memories`,
	// A receipt's hash is BYTEA, a legacy prev_hash hex TEXT.
	`(SELECT p.hash FROM receipts p`, `(SELECT encode(p.hash, 'hex') FROM receipts p`,
	// An integer is no boolean.
	`(0 OR `, `(FALSE OR `,
	// Memories' words (see migration 001): a tsvector of the words as
	// they are, and a search for one quoted word a tsquery of it.
	`INSERT INTO memories_fts (rowid, words) VALUES (?, ?)`,
	`INSERT INTO memories_fts (rowid, words) VALUES (?, array_to_tsvector(string_to_array(CAST(? AS TEXT), ' ')))`,
	`SELECT rowid FROM memories_fts WHERE memories_fts MATCH ?`,
	`SELECT rowid FROM memories_fts WHERE words @@ CAST(btrim(CAST(? AS TEXT), '"') AS tsquery)`,
)

// placeholders numbers the ? placeholders ($1, $2, …), leaving quoted
// text alone.
func placeholders(q string) string {
	var b strings.Builder
	b.Grow(len(q) + 16)
	n, quoted := 0, false
	for i := 0; i < len(q); i++ {
		c := q[i]
		switch {
		case c == '\'':
			quoted = !quoted
		case c == '?' && !quoted:
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}
