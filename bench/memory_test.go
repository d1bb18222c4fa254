package bench

import (
	"context"
	"testing"

	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/sqlitestore"
)

// TestMemory fills a small store on both variants and searches it: every
// search finds memories of the measured tenant, up to the limit.
func TestMemory(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"mem", "sqlite"} {
		t.Run(v, func(t *testing.T) {
			t.Parallel()
			res, err := Memory(context.Background(), MemoryOptions{Variant: v, Entries: 300, Searches: 21, Dir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			if res.Entries != 300 || res.Others != 30 || res.Searches != 21 || res.MeanHits < 1 || res.MeanHits > 5 || res.MedianMs <= 0 {
				t.Errorf("result = %+v", res)
			}
			if v == "sqlite" && res.DBBytes == 0 {
				t.Errorf("result = %+v, want the database's size", res)
			}
		})
	}
	if _, err := Memory(context.Background(), MemoryOptions{Variant: "pg"}); err == nil {
		t.Error("variant pg: no error")
	}
}

// BenchmarkMemorySearch times one search of 5 hits over 5000 memories
// of English-like text in a SQLite file (agentrt bench memory runs the
// same search at scale).
func BenchmarkMemorySearch(b *testing.B) {
	ctx := context.Background()
	s, err := sqlitestore.Open(ctx, b.TempDir()+"/agentrt.db", sqlitestore.Options{Synchronous: "NORMAL"})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	if err := s.Migrate(ctx); err != nil {
		b.Fatal(err)
	}
	text, ids := newMemoryText(1), runtype.NewIDGen(nil)
	for range 5000 {
		if err := s.MemorySave(ctx, &runtype.Memory{ID: ids.New(runtype.PrefixMemory), Owner: runtype.Owner{TenantID: "bench"},
			Agent: "support", Content: text.sentence(8, 40), Source: runtype.MemorySourceModel}); err != nil {
			b.Fatal(err)
		}
	}
	queries := make([]string, 64)
	for i := range queries {
		queries[i] = text.sentence(4, 14)
	}
	scope := store.MemoryScope{TenantID: "bench", Agent: "support"}
	for i := 0; b.Loop(); i++ {
		if _, err := s.MemorySearch(ctx, &store.MemorySearchParams{MemoryScope: scope, Query: queries[i%len(queries)], Limit: 5}); err != nil {
			b.Fatal(err)
		}
	}
}
