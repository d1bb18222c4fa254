package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"

	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

// Memories (migration 17): one row each in memories, and its words
// (store.MemoryWords) in the contentless FTS5 table memories_fts under the
// same seq, written in one transaction on the write connection, between
// the Writer's. A search ranks by FTS5's bm25() the memories holding any
// of the query's rarest words, then keeps the scope's rows.
//
// Which words: those of the query (store.MemoryTerms) that some memory
// holds, the rarest first (memory_words counts the memories holding
// each), at most searchWords of them, without those in more than one
// memory in twenty (and more than commonWordMemories) unless no rarer one
// is left. A common word costs a
// search its every memory and changes the ranking little (BM25 weighs a
// word by its rarity), so it is left out; this is what keeps a search
// over 100000 memories within milliseconds. Word counts and BM25's other
// statistics are the whole file's, so other scopes' memories shift
// scores and which words are searched, never which memories a scope
// sees.

var _ store.Memories = (*Store)(nil)

const memCols = `m.id, m.tenant_id, m.principal_id, m.agent, m.instance, m.source, m.session_id, m.turn_id, m.run_id,
	m.tool_call_id, m.content, m.created_at`

// MemorySave implements store.Memories.
func (s *Store) MemorySave(ctx context.Context, m *runtype.Memory) error {
	if s.closed.Load() {
		return store.ErrClosed
	}
	if err := store.CheckMemory(m); err != nil {
		return fmt.Errorf("saving memory: %w", err)
	}
	err := s.memoryTx(ctx, func(tx *sql.Tx) error {
		var seq int64
		err := tx.QueryRowContext(ctx, `INSERT INTO memories
			(id, tenant_id, principal_id, agent, instance, source, session_id, turn_id, run_id, tool_call_id, content, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING seq`,
			m.ID, m.TenantID, m.PrincipalID, m.Agent, m.Instance, string(m.Source), m.SessionID, m.TurnID, m.RunID,
			m.ToolCallID, m.Content, nanos(m.CreatedAt)).Scan(&seq)
		if err != nil {
			return err
		}
		words := store.MemoryWords(m.Content)
		if _, err = tx.ExecContext(ctx, `INSERT INTO memories_fts (rowid, words) VALUES (?, ?)`, seq, strings.Join(words, " ")); err != nil {
			return err
		}
		return countWords(ctx, tx, words, 1)
	})
	if err != nil {
		return fmt.Errorf("saving memory %s: %w", m.ID, translate(err))
	}
	return nil
}

// countWords adds delta to the count of memories holding each of words
// (a memory's words; each counts once), dropping the words no memory
// holds any more.
func countWords(ctx context.Context, tx *sql.Tx, words []string, delta int) error {
	slices.Sort(words)
	for _, w := range slices.Compact(words) {
		if _, err := tx.ExecContext(ctx, `INSERT INTO memory_words (word, memories) VALUES (?, ?)
			ON CONFLICT (word) DO UPDATE SET memories = memories + excluded.memories`, w, delta); err != nil {
			return err
		}
	}
	if delta < 0 {
		_, err := tx.ExecContext(ctx, `DELETE FROM memory_words WHERE memories <= 0`)
		return err
	}
	return nil
}

// memoryTx runs fn in a transaction on the write connection.
func (s *Store) memoryTx(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := s.write.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

// MemoryForget implements store.Memories.
func (s *Store) MemoryForget(ctx context.Context, p *store.MemoryForgetParams) error {
	if s.closed.Load() {
		return store.ErrClosed
	}
	if err := store.CheckMemoryScope(p.MemoryScope); err != nil {
		return fmt.Errorf("forgetting memory %s: %w", p.ID, err)
	}
	err := s.memoryTx(ctx, func(tx *sql.Tx) error {
		var (
			seq     int64
			content string
		)
		err := tx.QueryRowContext(ctx, `DELETE FROM memories WHERE id = ? AND tenant_id = ? AND agent = ? AND instance = ?
			RETURNING seq, content`, p.ID, p.TenantID, p.Agent, p.Instance).Scan(&seq, &content)
		if err != nil {
			return err
		}
		if _, err = tx.ExecContext(ctx, `DELETE FROM memories_fts WHERE rowid = ?`, seq); err != nil {
			return err
		}
		return countWords(ctx, tx, store.MemoryWords(content), -1)
	})
	if err != nil {
		return fmt.Errorf("forgetting memory %s: %w", p.ID, translate(err))
	}
	return nil
}

// MemoryList implements store.Memories.
func (s *Store) MemoryList(ctx context.Context, p *store.MemoryListParams) ([]*runtype.Memory, error) {
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	if err := store.CheckMemoryScope(p.MemoryScope); err != nil {
		return nil, fmt.Errorf("listing memories: %w", err)
	}
	rows, err := s.read.QueryContext(ctx, `SELECT `+memCols+` FROM memories m
		WHERE m.tenant_id = ? AND m.agent = ? AND m.instance = ? ORDER BY m.seq DESC LIMIT ?`,
		p.TenantID, p.Agent, p.Instance, store.ClampLimit(p.Limit))
	if err != nil {
		return nil, fmt.Errorf("listing memories: %w", translate(err))
	}
	defer rows.Close()
	var out []*runtype.Memory
	for rows.Next() {
		m, err := scanMemory(rows)
		if err != nil {
			return nil, fmt.Errorf("listing memories: %w", translate(err))
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing memories: %w", translate(err))
	}
	return out, nil
}

// MemorySearch implements store.Memories.
func (s *Store) MemorySearch(ctx context.Context, p *store.MemorySearchParams) ([]runtype.MemoryHit, error) {
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	if err := store.CheckMemorySearch(p); err != nil {
		return nil, fmt.Errorf("searching memories: %w", err)
	}
	words, err := s.searchWords(ctx, store.MemoryTerms(p.Query))
	if err != nil || len(words) == 0 {
		return nil, err
	}
	rows, err := s.read.QueryContext(ctx, `SELECT `+memCols+` FROM memories_fts f JOIN memories m ON m.seq = f.rowid
		WHERE memories_fts MATCH ? AND m.tenant_id = ? AND m.agent = ? AND m.instance = ?
		ORDER BY bm25(memories_fts), m.seq DESC LIMIT ?`,
		ftsQuery(words), p.TenantID, p.Agent, p.Instance, store.ClampLimit(p.Limit))
	if err != nil {
		return nil, fmt.Errorf("searching memories: %w", translate(err))
	}
	defer rows.Close()
	var out []runtype.MemoryHit
	for rows.Next() {
		m, err := scanMemory(rows)
		if err != nil {
			return nil, fmt.Errorf("searching memories: %w", translate(err))
		}
		out = append(out, runtype.MemoryHit{Memory: *m, Rank: len(out) + 1})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("searching memories: %w", translate(err))
	}
	return out, nil
}

// searchWords is the most searchWords words a search looks for, the
// rarest of terms that some memory holds (see the top of this file).
const searchWords = 6

// commonWordMemories: a word in more memories than this (and in more than
// one in twenty) is common.
const commonWordMemories = 500

func (s *Store) searchWords(ctx context.Context, terms []string) ([]string, error) {
	args := make([]any, len(terms))
	for i, t := range terms {
		args[i] = t
	}
	rows, err := s.read.QueryContext(ctx, `SELECT word, memories, (SELECT max(seq) FROM memories) FROM memory_words
		WHERE word IN (?`+strings.Repeat(", ?", len(terms)-1)+`) ORDER BY memories`, args...)
	if err != nil {
		return nil, fmt.Errorf("searching memories: %w", translate(err))
	}
	defer rows.Close()
	var (
		words     []string
		docs, all int64
	)
	for rows.Next() && len(words) < searchWords {
		var w string
		if err := rows.Scan(&w, &docs, &all); err != nil {
			return nil, fmt.Errorf("searching memories: %w", translate(err))
		}
		if len(words) > 0 && docs*20 > all && docs > commonWordMemories {
			break // common, and rarer words were found
		}
		words = append(words, w)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("searching memories: %w", translate(err))
	}
	return words, nil
}

// ftsQuery matches any of terms. Each is a run of letters and digits,
// quoted so that FTS5 reads it as a string, never as an operator.
func ftsQuery(terms []string) string {
	var b strings.Builder
	for i, t := range terms {
		if i > 0 {
			b.WriteString(" OR ")
		}
		b.WriteString(`"` + t + `"`)
	}
	return b.String()
}

func scanMemory(sc scanner) (*runtype.Memory, error) {
	var (
		m       runtype.Memory
		source  string
		created int64
	)
	if err := sc.Scan(&m.ID, &m.TenantID, &m.PrincipalID, &m.Agent, &m.Instance, &source, &m.SessionID, &m.TurnID,
		&m.RunID, &m.ToolCallID, &m.Content, &created); err != nil {
		return nil, err
	}
	m.Source, m.CreatedAt = runtype.MemorySource(source), fromNanos(created)
	return &m, nil
}
