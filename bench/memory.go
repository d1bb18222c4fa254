package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/memstore"
	"github.com/agentrt/agentrt/store/sqlitestore"
)

// MemoryOptions are the parameters of the memory-search benchmark.
type MemoryOptions struct {
	// Variant is sqlite (default) or mem.
	Variant string
	// Entries is how many memories the measured tenant's agent holds
	// (default 100000); Others how many another tenant's agent holds,
	// with text of the same kind (default Entries/10).
	Entries int
	Others  int
	// Searches is how many searches are timed (default 201), each with
	// a different query; Limit the hits each asks for (default 5, what
	// an agent's memory inject asks for).
	Searches int
	Limit    int
	// Dir is the parent of the sqlite variant's temporary directory
	// (default: the system's); Keep keeps it.
	Dir  string
	Keep bool
	// Seed makes the text (default 1).
	Seed uint64
}

// WithDefaults returns o with zero fields set to their defaults.
func (o MemoryOptions) WithDefaults() MemoryOptions {
	if o.Variant == "" {
		o.Variant = "sqlite"
	}
	if o.Entries == 0 {
		o.Entries = 100000
	}
	if o.Others == 0 {
		o.Others = o.Entries / 10
	}
	if o.Searches == 0 {
		o.Searches = 201
	}
	if o.Limit == 0 {
		o.Limit = 5
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	return o
}

// Validate reports options that cannot run, wrapping ErrInvalidOptions.
func (o MemoryOptions) Validate() error {
	switch {
	case o.Variant != "" && o.Variant != "sqlite" && o.Variant != "mem":
		return fmt.Errorf("%w: variant %q: use sqlite or mem", ErrInvalidOptions, o.Variant)
	case o.Entries < 0 || o.Others < 0 || o.Searches < 0 || o.Limit < 0:
		return fmt.Errorf("%w: entries, others, searches and limit cannot be negative", ErrInvalidOptions)
	}
	return nil
}

// MemoryResult is the RESULT line's JSON of the memory benchmark.
type MemoryResult struct {
	Bench    string `json:"bench"`
	Variant  string `json:"variant"`
	Entries  int    `json:"entries"`
	Others   int    `json:"others"`
	Searches int    `json:"searches"`
	Limit    int    `json:"limit"`
	// FillS is how long saving every memory took, one by one.
	FillS float64 `json:"fill_s"`
	// MedianMs, P90Ms and MaxMs are over the timed searches; MeanHits
	// is how many memories a search found on average (at most Limit).
	MedianMs float64 `json:"median_ms"`
	P90Ms    float64 `json:"p90_ms"`
	MaxMs    float64 `json:"max_ms"`
	MeanHits float64 `json:"mean_hits"`
	// DBBytes is the database file's size (sqlite), DataDir its
	// directory when kept.
	DBBytes  int64             `json:"db_bytes,omitempty"`
	DataDir  string            `json:"data_dir,omitempty"`
	Versions map[string]string `json:"versions"`
}

// memoryStore is a store that keeps memories.
type memoryStore interface {
	store.Store
	store.Memories
}

// Memory fills a store with o.Entries memories of one tenant's agent (and
// o.Others of another tenant's), each saved on its own as memory_save
// saves it, then times o.Searches searches of the first agent's memories
// with queries made like a turn's input.
func Memory(ctx context.Context, o MemoryOptions) (*MemoryResult, error) {
	o = o.WithDefaults()
	if err := o.Validate(); err != nil {
		return nil, err
	}
	res := &MemoryResult{Bench: "memory", Variant: o.Variant, Entries: o.Entries, Others: o.Others,
		Searches: o.Searches, Limit: o.Limit, Versions: versions()}
	var (
		s    memoryStore
		path string
	)
	if o.Variant == "mem" {
		s = memstore.New()
	} else {
		dir, err := os.MkdirTemp(o.Dir, "agentrt-bench-memory-")
		if err != nil {
			return nil, fmt.Errorf("creating temp dir: %w", err)
		}
		if o.Keep {
			res.DataDir = dir
		} else {
			defer os.RemoveAll(dir)
		}
		path = filepath.Join(dir, "agentrt.db")
		// NORMAL: the fill is one commit per memory, which FULL would
		// sync each; searches do not depend on it.
		ss, err := sqlitestore.Open(ctx, path, sqlitestore.Options{Synchronous: "NORMAL"})
		if err != nil {
			return nil, err
		}
		s = ss
	}
	defer s.Close()
	if err := s.Migrate(ctx); err != nil {
		return nil, err
	}
	text := newMemoryText(o.Seed)
	ids := runtype.NewIDGen(nil)
	start := time.Now()
	total := o.Entries + o.Others
	for i := range total {
		tenant := "bench"
		if (i+1)*o.Others/total > i*o.Others/total { // the other tenant's, spread evenly
			tenant = "other"
		}
		m := &runtype.Memory{ID: ids.New(runtype.PrefixMemory), Owner: runtype.Owner{TenantID: tenant, PrincipalID: "bench"},
			Agent: "support", Content: text.sentence(8, 40), Source: runtype.MemorySourceModel, CreatedAt: time.Now()}
		if err := s.MemorySave(ctx, m); err != nil {
			return nil, fmt.Errorf("filling memory %d: %w", i, err)
		}
	}
	res.FillS = time.Since(start).Seconds()
	scope := store.MemoryScope{TenantID: "bench", Agent: "support"}
	var took []time.Duration
	hits := 0
	for range o.Searches {
		q := text.sentence(4, 14) + "?"
		for len(store.MemoryTerms(q)) == 0 { // only common words: a turn's recall would not search
			q = text.sentence(4, 14) + "?"
		}
		t0 := time.Now()
		found, err := s.MemorySearch(ctx, &store.MemorySearchParams{MemoryScope: scope, Query: q, Limit: o.Limit})
		took = append(took, time.Since(t0))
		if err != nil {
			return nil, fmt.Errorf("searching %q: %w", q, err)
		}
		hits += len(found)
	}
	if len(took) > 0 {
		sorted := slices.Sorted(slices.Values(took))
		res.MedianMs, res.P90Ms, res.MaxMs = ms(Median(took)), ms(sorted[len(sorted)*9/10]), ms(sorted[len(sorted)-1])
		res.MeanHits = float64(hits) / float64(len(took))
	}
	if path != "" {
		for _, p := range []string{path, path + "-wal"} {
			if fi, err := os.Stat(p); err == nil {
				res.DBBytes += fi.Size()
			}
		}
	}
	return res, nil
}

// memoryText makes English-like text: a third of the words are common
// function words, the rest content words of a 20000-word vocabulary
// drawn by Zipf's law as in English, where they follow the hundred
// commonest words: the word of rank k after them comes with weight
// (100+k)^-1.07, so a few content words are in many memories and most in
// few.
type memoryText struct {
	r     *rand.Rand
	zipf  *rand.Zipf
	vocab []string
}

var commonWords = strings.Fields(`the a to of and in is for on that with it this be as at by from or are was we will customer
	should not you they our their has have`)

func newMemoryText(seed uint64) *memoryText {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	t := &memoryText{r: r}
	onsets := strings.Fields("b c d f g h j k l m n p r s t v w z br cl dr fl gr pl pr st tr sh ch th")
	vowels := strings.Fields("a e i o u ai ea ou io")
	codas := []string{"", "n", "r", "s", "t", "l", "nd", "st", "ck", "ng", "rt"}
	seen := map[string]bool{}
	for len(t.vocab) < 20000 {
		var w strings.Builder
		for range 1 + r.IntN(4) {
			w.WriteString(onsets[r.IntN(len(onsets))] + vowels[r.IntN(len(vowels))])
		}
		w.WriteString(codas[r.IntN(len(codas))])
		if s := w.String(); !seen[s] {
			seen[s] = true
			t.vocab = append(t.vocab, s)
		}
	}
	t.zipf = rand.NewZipf(r, 1.07, 100, uint64(len(t.vocab)-1))
	return t
}

// sentence is between lo and hi words, about a third of them common.
func (t *memoryText) sentence(lo, hi int) string {
	n := lo + t.r.IntN(hi-lo+1)
	words := make([]string, n)
	for i := range words {
		if t.r.IntN(3) == 0 {
			words[i] = commonWords[t.r.IntN(len(commonWords))]
		} else {
			words[i] = t.vocab[t.zipf.Uint64()]
		}
	}
	words[0] = strings.ToUpper(words[0][:1]) + words[0][1:]
	return strings.Join(words, " ") + "."
}
