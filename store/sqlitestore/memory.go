package sqlitestore

import (
	"context"
	"fmt"
	"strings"

	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

// Memories (migration 17): one row each in memories, indexed for search
// by the FTS5 table memories_fts and ranked by its bm25(). A search
// matches any of the query's words (store.MemoryTerms, each quoted, so
// nothing in a query is FTS5 syntax) with porter stemming, then keeps
// the scope's rows. BM25's statistics (how rare a word is, how long a
// memory is on average) are the whole file's, so other scopes' memories
// shift scores, never which memories a scope sees. Writes are single
// statements on the write connection, between the Writer's transactions.

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
	_, err := s.write.ExecContext(ctx, `INSERT INTO memories
		(id, tenant_id, principal_id, agent, instance, source, session_id, turn_id, run_id, tool_call_id, content, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		m.ID, m.TenantID, m.PrincipalID, m.Agent, m.Instance, string(m.Source), m.SessionID, m.TurnID, m.RunID,
		m.ToolCallID, m.Content, nanos(m.CreatedAt))
	if err != nil {
		return fmt.Errorf("saving memory %s: %w", m.ID, translate(err))
	}
	return nil
}

// MemoryForget implements store.Memories.
func (s *Store) MemoryForget(ctx context.Context, p *store.MemoryForgetParams) error {
	if s.closed.Load() {
		return store.ErrClosed
	}
	if err := store.CheckMemoryScope(p.MemoryScope); err != nil {
		return fmt.Errorf("forgetting memory %s: %w", p.ID, err)
	}
	res, err := s.write.ExecContext(ctx, `DELETE FROM memories WHERE id = ? AND tenant_id = ? AND agent = ? AND instance = ?`,
		p.ID, p.TenantID, p.Agent, p.Instance)
	var n int64
	if err == nil {
		n, err = res.RowsAffected()
	}
	if err != nil {
		return fmt.Errorf("forgetting memory %s: %w", p.ID, translate(err))
	}
	if n == 0 {
		return fmt.Errorf("forgetting memory %s: %w", p.ID, store.ErrNotFound)
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
	rows, err := s.read.QueryContext(ctx, `SELECT `+memCols+` FROM memories_fts f JOIN memories m ON m.seq = f.rowid
		WHERE memories_fts MATCH ? AND m.tenant_id = ? AND m.agent = ? AND m.instance = ?
		ORDER BY bm25(memories_fts), m.seq DESC LIMIT ?`,
		ftsQuery(store.MemoryTerms(p.Query)), p.TenantID, p.Agent, p.Instance, store.ClampLimit(p.Limit))
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
