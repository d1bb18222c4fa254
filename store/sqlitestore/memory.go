package sqlitestore

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

// Memories (migration 17): one row each in memories, and its words
// (store.MemoryWords) in the contentless FTS5 table memories_fts under the
// same seq; memory_words counts the memories holding each word and
// memory_stats the memories and their words. All are written in one
// transaction on the write connection, between the Writer's.
//
// A search ranks by BM25 (k1 1.2, b 0.75), in two stages, because FTS5's
// own bm25() costs microseconds a row here and a word common in a large
// store is in thousands of memories:
//
//  1. Candidates. The query's words (store.MemoryTerms) that some memory
//     holds, the rarest first, at most searchWords and, after the first,
//     while they are in at most stage1Memories memories together, leaving
//     out a word in more than one memory in twenty (and more than
//     commonWordMemories). FTS5 lists the memories holding each;
//     each memory scores the summed inverse document frequency of those
//     it holds (BM25 with k1 = 0, which needs no text). The best of the
//     scope's (its rows read by the memories_scope index, best first,
//     until rerankFactor times the limit) go on.
//  2. Ranking. BM25 with every word of the query some memory holds,
//     computed from the candidates' text, best first, newer first among
//     equals.
//
// A memory holding only words stage 1 left out is not found, and one
// that stage 1 ranks below many others is not reranked: the price of
// answering in milliseconds over 100 000 memories. Word counts and the
// other statistics are the whole file's, so other scopes' memories shift
// scores and the choice of words, never which memories a scope sees: only
// rows of the scope's columns are read.

var _ store.Memories = (*Store)(nil)

const memCols = `m.id, m.tenant_id, m.principal_id, m.agent, m.instance, m.source, m.session_id, m.turn_id, m.run_id,
	m.tool_call_id, m.content, m.created_at`

// Search limits (see the top of this file).
const (
	// searchWords is the most words of a query stage 1 looks for.
	searchWords = 6
	// commonWordMemories: a word in more memories than this, and in more
	// than one in twenty, is common.
	commonWordMemories = 500
	// stage1Memories bounds the memories stage 1 reads: it looks for no
	// further word once the words it has are in this many memories.
	stage1Memories = 2500
	// rerankFactor times the limit is how many candidates stage 2 ranks.
	rerankFactor = 8
	// scopeChunk is how many candidates a read of the scope's rows asks
	// for at once.
	scopeChunk = 100
)

// BM25's parameters, as FTS5's bm25() has them.
const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

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
		err := tx.QueryRowContext(ctx, s.d.sql(`INSERT INTO memories
			(id, tenant_id, principal_id, agent, instance, source, session_id, turn_id, run_id, tool_call_id, content, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING seq`),
			m.ID, m.TenantID, m.PrincipalID, m.Agent, m.Instance, string(m.Source), m.SessionID, m.TurnID, m.RunID,
			m.ToolCallID, m.Content, nanos(m.CreatedAt)).Scan(&seq)
		if err != nil {
			return err
		}
		words := store.MemoryWords(m.Content)
		if _, err = tx.ExecContext(ctx, s.d.sql(`INSERT INTO memories_fts (rowid, words) VALUES (?, ?)`), seq, strings.Join(words, " ")); err != nil {
			return err
		}
		return s.countWords(ctx, tx, words, 1)
	})
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
	err := s.memoryTx(ctx, func(tx *sql.Tx) error {
		var (
			seq     int64
			content string
		)
		err := tx.QueryRowContext(ctx, s.d.sql(`DELETE FROM memories WHERE id = ? AND tenant_id = ? AND agent = ? AND instance = ?
			RETURNING seq, content`), p.ID, p.TenantID, p.Agent, p.Instance).Scan(&seq, &content)
		if err != nil {
			return err
		}
		if _, err = tx.ExecContext(ctx, s.d.sql(`DELETE FROM memories_fts WHERE rowid = ?`), seq); err != nil {
			return err
		}
		return s.countWords(ctx, tx, store.MemoryWords(content), -1)
	})
	if err != nil {
		return fmt.Errorf("forgetting memory %s: %w", p.ID, translate(err))
	}
	return nil
}

// countWords adds delta (1 or -1) memories holding words, one memory's
// words, to memory_words (each word once) and memory_stats, dropping the
// words no memory holds any more.
func (s *Store) countWords(ctx context.Context, tx *sql.Tx, words []string, delta int) error {
	if _, err := tx.ExecContext(ctx, s.d.sql(`UPDATE memory_stats SET memories = memories + ?, words = words + ? WHERE id = 1`),
		delta, delta*len(words)); err != nil {
		return err
	}
	words = slices.Clone(words)
	slices.Sort(words)
	for _, w := range slices.Compact(words) {
		if _, err := tx.ExecContext(ctx, s.d.sql(`INSERT INTO memory_words (word, memories) VALUES (?, ?)
			ON CONFLICT (word) DO UPDATE SET memories = memories + excluded.memories`), w, delta); err != nil {
			return err
		}
	}
	if delta < 0 {
		_, err := tx.ExecContext(ctx, s.d.sql(`DELETE FROM memory_words WHERE memories <= 0`))
		return err
	}
	return nil
}

// memoryTx runs fn in a transaction on the write connection.
func (s *Store) memoryTx(ctx context.Context, fn func(*sql.Tx) error) error {
	return s.inWriteTx(ctx, fn)
}

// MemoryList implements store.Memories.
func (s *Store) MemoryList(ctx context.Context, p *store.MemoryListParams) ([]*runtype.Memory, error) {
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	if err := store.CheckMemoryScope(p.MemoryScope); err != nil {
		return nil, fmt.Errorf("listing memories: %w", err)
	}
	rows, err := s.read.QueryContext(ctx, s.d.sql(`SELECT m.seq, `+memCols+` FROM memories m
		WHERE m.tenant_id = ? AND m.agent = ? AND m.instance = ? ORDER BY m.seq DESC LIMIT ?`),
		p.TenantID, p.Agent, p.Instance, store.ClampLimit(p.Limit))
	if err != nil {
		return nil, fmt.Errorf("listing memories: %w", translate(err))
	}
	var out []*runtype.Memory
	err = scanMemories(rows, func(_ int64, m *runtype.Memory) { out = append(out, m) })
	if err != nil {
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
	hits, err := s.memorySearch(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("searching memories: %w", translate(err))
	}
	return hits, nil
}

// corpus is what BM25 needs to know of all memories: how many, their
// mean length in words, and how many hold each word of a query.
type corpus struct {
	n, avgLen float64
	docs      map[string]float64
}

func (c *corpus) idf(word string) float64 {
	df := c.docs[word]
	// FTS5's bm25() floors a negative idf (a word in most memories) so.
	return max(math.Log((c.n-df+0.5)/(df+0.5)), 1e-6)
}

func (s *Store) memorySearch(ctx context.Context, p *store.MemorySearchParams) ([]runtype.MemoryHit, error) {
	limit := store.ClampLimit(p.Limit)
	c, words, err := s.memoryCorpus(ctx, store.MemoryTerms(p.Query))
	if err != nil || len(words) == 0 {
		return nil, err
	}
	// Stage 1: candidates by the summed idf of the words they hold.
	score := map[int64]float64{}
	for _, w := range stage1Words(c, words) {
		idf := c.idf(w)
		if err := eachSeq(ctx, s.read, func(seq int64) { score[seq] += idf },
			s.d.sql(`SELECT rowid FROM memories_fts WHERE memories_fts MATCH ?`), `"`+w+`"`); err != nil {
			return nil, err
		}
	}
	type cand struct {
		seq   int64
		score float64
	}
	all := make([]cand, 0, len(score))
	for seq, sc := range score {
		all = append(all, cand{seq, sc})
	}
	slices.SortFunc(all, func(a, b cand) int { return cmp.Or(cmp.Compare(b.score, a.score), cmp.Compare(b.seq, a.seq)) })
	cands := make([]int64, len(all))
	for i, c := range all {
		cands[i] = c.seq
	}
	type hit struct {
		seq   int64
		m     *runtype.Memory
		score float64
	}
	var hits []hit
	for len(cands) > 0 && len(hits) < limit*rerankFactor {
		chunk := cands[:min(len(cands), scopeChunk)]
		cands = cands[len(chunk):]
		got := map[int64]*runtype.Memory{}
		if err := s.scopeRows(ctx, p.MemoryScope, chunk, got); err != nil {
			return nil, err
		}
		for _, seq := range chunk {
			if m := got[seq]; m != nil && len(hits) < limit*rerankFactor {
				hits = append(hits, hit{seq: seq, m: m})
			}
		}
	}
	// Stage 2: BM25 over the candidates' text.
	for i := range hits {
		hits[i].score = c.bm25(words, store.MemoryWords(hits[i].m.Content))
	}
	slices.SortStableFunc(hits, func(a, b hit) int { return cmp.Or(cmp.Compare(b.score, a.score), cmp.Compare(b.seq, a.seq)) })
	out := make([]runtype.MemoryHit, 0, min(len(hits), limit))
	for _, h := range hits[:min(len(hits), limit)] {
		out = append(out, runtype.MemoryHit{Memory: *h.m, Rank: len(out) + 1})
	}
	return out, nil
}

// bm25 scores a memory of words for the query's words.
func (c *corpus) bm25(query, words []string) float64 {
	tf := map[string]float64{}
	for _, w := range words {
		tf[w]++
	}
	norm := bm25K1 * (1 - bm25B + bm25B*float64(len(words))/max(c.avgLen, 1))
	score := 0.0
	for _, q := range query {
		if f := tf[q]; f > 0 {
			score += c.idf(q) * f * (bm25K1 + 1) / (f + norm)
		}
	}
	return score
}

// stage1Words are the words stage 1 looks for: the rarest searchWords of
// words (which are by rarity), without common ones once a rarer one is
// in, and no more once they are in stage1Memories memories.
func stage1Words(c *corpus, words []string) []string {
	var (
		out  []string
		rows float64
	)
	for _, w := range words {
		df := c.docs[w]
		if len(out) == searchWords || len(out) > 0 && (df*20 > c.n && df > commonWordMemories || rows+df > stage1Memories) {
			break
		}
		out, rows = append(out, w), rows+df
	}
	return out
}

// memoryCorpus reads the statistics of terms, and returns those some
// memory holds, the rarest first.
func (s *Store) memoryCorpus(ctx context.Context, terms []string) (*corpus, []string, error) {
	args := make([]any, len(terms))
	for i, t := range terms {
		args[i] = t
	}
	rows, err := s.read.QueryContext(ctx, s.d.sql(`SELECT w.word, w.memories, s.memories, s.words FROM memory_words w, memory_stats s
		WHERE w.word IN (?`+strings.Repeat(", ?", len(terms)-1)+`) AND w.memories > 0 ORDER BY w.memories, w.word`), args...)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	c := &corpus{docs: map[string]float64{}}
	var words []string
	for rows.Next() {
		var (
			w            string
			df, n, total int64
		)
		if err := rows.Scan(&w, &df, &n, &total); err != nil {
			return nil, nil, err
		}
		c.docs[w], c.n, c.avgLen = float64(df), float64(n), float64(total)/float64(max(n, 1))
		words = append(words, w)
	}
	return c, words, rows.Err()
}

// scopeRows reads into got the memories of seqs that are the scope's.
func (s *Store) scopeRows(ctx context.Context, scope store.MemoryScope, seqs []int64, got map[int64]*runtype.Memory) error {
	args := []any{scope.TenantID, scope.Agent, scope.Instance}
	for _, q := range seqs {
		args = append(args, q)
	}
	rows, err := s.read.QueryContext(ctx, s.d.sql(`SELECT m.seq, `+memCols+` FROM memories m
		WHERE m.tenant_id = ? AND m.agent = ? AND m.instance = ? AND m.seq IN (?`+strings.Repeat(", ?", len(seqs)-1)+`)`), args...)
	if err != nil {
		return err
	}
	return scanMemories(rows, func(seq int64, m *runtype.Memory) { got[seq] = m })
}

// eachSeq runs q and calls fn with each row's one integer.
func eachSeq(ctx context.Context, db *sql.DB, fn func(int64), q string, args ...any) error {
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var n int64
		if err := rows.Scan(&n); err != nil {
			return err
		}
		fn(n)
	}
	return rows.Err()
}

// scanMemories scans rows of seq and memCols, closing them.
func scanMemories(rows *sql.Rows, fn func(int64, *runtype.Memory)) error {
	defer rows.Close()
	for rows.Next() {
		var (
			m       runtype.Memory
			seq     int64
			source  string
			created int64
		)
		if err := rows.Scan(&seq, &m.ID, &m.TenantID, &m.PrincipalID, &m.Agent, &m.Instance, &source, &m.SessionID, &m.TurnID,
			&m.RunID, &m.ToolCallID, &m.Content, &created); err != nil {
			return err
		}
		m.Source, m.CreatedAt = runtype.MemorySource(source), fromNanos(created)
		fn(seq, &m)
	}
	return rows.Err()
}
