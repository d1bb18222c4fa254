package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/agentrt/agentrt/runtype"
)

// Memories is a store that keeps agents' long-term memories
// (runtype.Memory). It is optional: a Store that keeps none does not
// implement it, and the memory tools then say so.
//
// Every method is scoped to one tenant, agent and instance: a memory of
// another tenant (or agent) is never found, listed or forgotten, and
// forgetting it reports ErrNotFound as for one that does not exist.
//
// Memories are written directly, each in a transaction of its own, not
// through a Batch: saving one is a tool's effect, like writing a file,
// recorded by the tool call's own facts.
type Memories interface {
	// MemorySave stores m (its ID and CreatedAt set by the caller). The
	// content must pass CheckMemoryContent.
	MemorySave(ctx context.Context, m *runtype.Memory) error
	// MemorySearch returns the memories matching p.Query, best first, at
	// most p.Limit (ClampLimit). The query must pass CheckMemoryQuery. A
	// query none of whose words index anything (punctuation only) is an
	// error too; one whose words match nothing returns no hits.
	MemorySearch(ctx context.Context, p *MemorySearchParams) ([]runtype.MemoryHit, error)
	// MemoryForget deletes one memory; ErrNotFound when the tenant's
	// agent has none with that ID.
	MemoryForget(ctx context.Context, p *MemoryForgetParams) error
	// MemoryList lists memories newest first, at most p.Limit.
	MemoryList(ctx context.Context, p *MemoryListParams) ([]*runtype.Memory, error)
}

// MemoryScope names whose memories a call sees.
type MemoryScope struct {
	TenantID string
	Agent    string
	Instance string
}

func (s MemoryScope) check() error {
	if s.TenantID == "" || s.Agent == "" {
		return fmt.Errorf("%w: a memory scope needs a tenant and an agent", ErrInvalidMemory)
	}
	return nil
}

// MemorySearchParams selects memories by a text query.
type MemorySearchParams struct {
	MemoryScope
	Query string
	Limit int
}

// MemoryForgetParams names a memory to delete.
type MemoryForgetParams struct {
	MemoryScope
	ID string
}

// MemoryListParams pages memories newest first.
type MemoryListParams struct {
	MemoryScope
	Limit int
}

// Limits of memories.
const (
	// MaxMemoryBytes bounds one memory's content.
	MaxMemoryBytes = 16 << 10
	// MaxMemoryQueryBytes bounds a search query.
	MaxMemoryQueryBytes = 4 << 10
	// MaxMemoryQueryTerms bounds the words of a query a search uses; the
	// rest are ignored.
	MaxMemoryQueryTerms = 32
)

// ErrInvalidMemory: a memory or a memory query the store refuses (empty,
// too large, not text). Errors wrapping it say why.
var ErrInvalidMemory = errors.New("invalid memory")

// CheckMemoryContent returns an error wrapping ErrInvalidMemory when
// content is not something a memory may hold: empty (or only spaces),
// over MaxMemoryBytes, or not valid UTF-8.
func CheckMemoryContent(content string) error {
	switch {
	case strings.TrimSpace(content) == "":
		return fmt.Errorf("%w: the content is empty", ErrInvalidMemory)
	case len(content) > MaxMemoryBytes:
		return fmt.Errorf("%w: the content is %d bytes, over the limit of %d", ErrInvalidMemory, len(content), MaxMemoryBytes)
	case !utf8.ValidString(content):
		return fmt.Errorf("%w: the content is not valid UTF-8", ErrInvalidMemory)
	}
	return nil
}

// CheckMemoryQuery returns an error wrapping ErrInvalidMemory when q is
// not a query a search takes: empty (or only spaces), over
// MaxMemoryQueryBytes, or not valid UTF-8.
func CheckMemoryQuery(q string) error {
	switch {
	case strings.TrimSpace(q) == "":
		return fmt.Errorf("%w: the query is empty", ErrInvalidMemory)
	case len(q) > MaxMemoryQueryBytes:
		return fmt.Errorf("%w: the query is %d bytes, over the limit of %d", ErrInvalidMemory, len(q), MaxMemoryQueryBytes)
	case !utf8.ValidString(q):
		return fmt.Errorf("%w: the query is not valid UTF-8", ErrInvalidMemory)
	}
	return nil
}

// CheckMemory checks a memory about to be saved: its scope, ID, source
// and content.
func CheckMemory(m *runtype.Memory) error {
	if err := (MemoryScope{TenantID: m.TenantID, Agent: m.Agent}).check(); err != nil {
		return err
	}
	if m.ID == "" {
		return fmt.Errorf("%w: the memory has no ID", ErrInvalidMemory)
	}
	if !m.Source.Valid() {
		return fmt.Errorf("%w: unknown source %q: want model, tool_output or operator", ErrInvalidMemory, m.Source)
	}
	return CheckMemoryContent(m.Content)
}

// CheckMemorySearch checks p's scope and query.
func CheckMemorySearch(p *MemorySearchParams) error {
	if err := p.check(); err != nil {
		return err
	}
	if err := CheckMemoryQuery(p.Query); err != nil {
		return err
	}
	if len(MemoryTerms(p.Query)) == 0 {
		return fmt.Errorf("%w: the query %q has no words to search for", ErrInvalidMemory, p.Query)
	}
	return nil
}

// CheckMemoryScope checks that s names a tenant and an agent.
func CheckMemoryScope(s MemoryScope) error { return s.check() }

// MemoryTerms splits a query into the words a search looks for, as
// MemoryWords does, each once, in order, at most MaxMemoryQueryTerms.
func MemoryTerms(q string) []string {
	var terms []string
	seen := map[string]bool{}
	for _, w := range MemoryWords(q) {
		if seen[w] {
			continue
		}
		seen[w] = true
		terms = append(terms, w)
		if len(terms) == MaxMemoryQueryTerms {
			break
		}
	}
	return terms
}

// MemoryWords splits text into the words memories are indexed and
// searched by: runs of letters and digits, lowercased, without the
// commonest English words (which would match nearly every memory and rank
// nothing), each cut to a light English stem so that "deploys",
// "deployed" and "deploying" are one word (see stem).
func MemoryWords(text string) []string {
	var out []string
	for w := range strings.FieldsFuncSeq(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}) {
		if !stopWords[w] {
			out = append(out, stem(w))
		}
	}
	return out
}

// stem cuts an English inflection off w: a plural s or es, ies (to y),
// ing and ed, then a doubled final consonant (running → run) and a final
// e (based, base → bas). It is cruder than Porter's stemmer, and the
// same on both drivers.
func stem(w string) string {
	n := len(w)
	switch {
	case n > 4 && strings.HasSuffix(w, "ies"):
		return w[:n-3] + "y"
	case n > 5 && strings.HasSuffix(w, "ing"):
		w = w[:n-3]
	case n > 4 && strings.HasSuffix(w, "ed"):
		w = w[:n-2]
	case n > 4 && (strings.HasSuffix(w, "ches") || strings.HasSuffix(w, "shes") || strings.HasSuffix(w, "sses") || strings.HasSuffix(w, "xes")):
		return w[:n-2]
	case n > 3 && w[n-1] == 's' && !strings.HasSuffix(w, "ss") && !strings.HasSuffix(w, "us") && !strings.HasSuffix(w, "is"):
		w = w[:n-1]
	}
	if n = len(w); n > 3 && w[n-1] == w[n-2] && strings.IndexByte("bdgmnprt", w[n-1]) >= 0 {
		w = w[:n-1]
	}
	if n = len(w); n > 3 && w[n-1] == 'e' {
		w = w[:n-1]
	}
	return w
}

// stopWords are left out of queries.
var stopWords = func() map[string]bool {
	m := map[string]bool{}
	for w := range strings.FieldsSeq(`a an and are as at be but by can did do does for from had has have he her his i if in into is it its
		me my no not of on or our she so than that the their them then there these they this to was we were what when where which who
		why will with you your`) {
		m[w] = true
	}
	return m
}()
