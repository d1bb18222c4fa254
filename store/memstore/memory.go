package memstore

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

// Memories: the store keeps them in a map of its own, outside the
// transactions (store.Memories writes each on its own). A search scans the
// scope's memories and ranks them by BM25 (k1 1.2, b 0.75) over that scope
// alone, with every word of the query (store.MemoryTerms) and the words of
// each memory as store.MemoryWords splits them.

var _ store.Memories = (*Store)(nil)

// memories holds every scope's memories, oldest first.
type memories struct {
	mu      sync.Mutex
	byScope map[store.MemoryScope][]*runtype.Memory // guarded by mu
}

func (s *Store) memScope(m *runtype.Memory) store.MemoryScope {
	return store.MemoryScope{TenantID: m.TenantID, Agent: m.Agent, Instance: m.Instance}
}

func (s *Store) memOpen() error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return store.ErrClosed
	}
	return nil
}

// MemorySave implements store.Memories.
func (s *Store) MemorySave(_ context.Context, m *runtype.Memory) error {
	if err := s.memOpen(); err != nil {
		return err
	}
	if err := store.CheckMemory(m); err != nil {
		return fmt.Errorf("saving memory: %w", err)
	}
	s.mem.mu.Lock()
	defer s.mem.mu.Unlock()
	for _, ms := range s.mem.byScope {
		if slices.ContainsFunc(ms, func(o *runtype.Memory) bool { return o.ID == m.ID }) {
			return fmt.Errorf("saving memory %s: %w", m.ID, store.ErrConflict)
		}
	}
	if s.mem.byScope == nil {
		s.mem.byScope = map[store.MemoryScope][]*runtype.Memory{}
	}
	cp := *m
	k := s.memScope(m)
	s.mem.byScope[k] = append(s.mem.byScope[k], &cp)
	return nil
}

// MemoryForget implements store.Memories.
func (s *Store) MemoryForget(_ context.Context, p *store.MemoryForgetParams) error {
	if err := s.memOpen(); err != nil {
		return err
	}
	if err := store.CheckMemoryScope(p.MemoryScope); err != nil {
		return fmt.Errorf("forgetting memory %s: %w", p.ID, err)
	}
	s.mem.mu.Lock()
	defer s.mem.mu.Unlock()
	ms := s.mem.byScope[p.MemoryScope]
	i := slices.IndexFunc(ms, func(m *runtype.Memory) bool { return m.ID == p.ID })
	if i < 0 {
		return fmt.Errorf("forgetting memory %s: %w", p.ID, store.ErrNotFound)
	}
	s.mem.byScope[p.MemoryScope] = slices.Delete(ms, i, i+1)
	return nil
}

// MemoryList implements store.Memories.
func (s *Store) MemoryList(_ context.Context, p *store.MemoryListParams) ([]*runtype.Memory, error) {
	if err := s.memOpen(); err != nil {
		return nil, err
	}
	if err := store.CheckMemoryScope(p.MemoryScope); err != nil {
		return nil, fmt.Errorf("listing memories: %w", err)
	}
	s.mem.mu.Lock()
	defer s.mem.mu.Unlock()
	ms := s.mem.byScope[p.MemoryScope]
	out := make([]*runtype.Memory, 0, min(len(ms), store.ClampLimit(p.Limit)))
	for i := len(ms) - 1; i >= 0 && len(out) < store.ClampLimit(p.Limit); i-- {
		cp := *ms[i]
		out = append(out, &cp)
	}
	return out, nil
}

// MemorySearch implements store.Memories.
func (s *Store) MemorySearch(_ context.Context, p *store.MemorySearchParams) ([]runtype.MemoryHit, error) {
	if err := s.memOpen(); err != nil {
		return nil, err
	}
	if err := store.CheckMemorySearch(p); err != nil {
		return nil, fmt.Errorf("searching memories: %w", err)
	}
	terms := store.MemoryTerms(p.Query)
	s.mem.mu.Lock()
	ms := slices.Clone(s.mem.byScope[p.MemoryScope])
	s.mem.mu.Unlock()

	docs := make([]map[string]int, len(ms))
	df := map[string]int{}
	total := 0
	for i, m := range ms {
		tf := map[string]int{}
		for _, w := range store.MemoryWords(m.Content) {
			tf[w]++
			total++
		}
		docs[i] = tf
		for _, t := range terms {
			if tf[t] > 0 {
				df[t]++
			}
		}
	}
	type scored struct {
		i     int
		score float64
	}
	var hits []scored
	n := float64(len(ms))
	avg := float64(total) / max(n, 1)
	const k1, b = 1.2, 0.75
	for i, tf := range docs {
		length := 0
		for _, c := range tf {
			length += c
		}
		score := 0.0
		for _, t := range terms {
			f := float64(tf[t])
			if f == 0 {
				continue
			}
			idf := math.Log(1 + (n-float64(df[t])+0.5)/(float64(df[t])+0.5))
			score += idf * f * (k1 + 1) / (f + k1*(1-b+b*float64(length)/avg))
		}
		if score > 0 {
			hits = append(hits, scored{i, score})
		}
	}
	// Best first; among equals the newer.
	slices.SortStableFunc(hits, func(x, y scored) int { return cmp.Or(cmp.Compare(y.score, x.score), cmp.Compare(y.i, x.i)) })
	out := make([]runtype.MemoryHit, 0, min(len(hits), store.ClampLimit(p.Limit)))
	for _, h := range hits[:min(len(hits), store.ClampLimit(p.Limit))] {
		out = append(out, runtype.MemoryHit{Memory: *ms[h.i], Rank: len(out) + 1})
	}
	return out, nil
}
