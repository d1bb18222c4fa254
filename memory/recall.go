package memory

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

// Recaller finds the memories to put into a turn's conversation: those of
// the turn's tenant and agent that its input matches, best first.
type Recaller struct {
	Store store.Memories
	// Inject is how many memories a turn of each agent gets, by agent
	// name; an agent missing (or 0) gets none and costs no search.
	Inject map[string]int
}

// Recall searches the agent's memories with input (clipped to
// store.MaxMemoryQueryBytes) and returns at most Inject[agent] of them.
// An input with no word to search for finds nothing, without an error.
// It has the signature of loop.Config.Recall.
func (r *Recaller) Recall(ctx context.Context, owner runtype.Owner, agent, _ string, input string) ([]runtype.MemoryHit, error) {
	n := r.Inject[agent]
	if n <= 0 || r.Store == nil {
		return nil, nil
	}
	q := Query(input)
	if q == "" {
		return nil, nil
	}
	return r.Store.MemorySearch(ctx, &store.MemorySearchParams{
		MemoryScope: store.MemoryScope{TenantID: owner.TenantID, Agent: agent}, Query: q, Limit: n,
	})
}

// Query is the search query a turn's input makes: the input clipped to
// store.MaxMemoryQueryBytes (on a character boundary), or "" when it has
// no word to search for.
func Query(input string) string {
	if len(input) > store.MaxMemoryQueryBytes {
		input = input[:store.MaxMemoryQueryBytes]
		for !utf8.ValidString(input) {
			input = input[:len(input)-1]
		}
	}
	if !utf8.ValidString(input) || len(store.MemoryTerms(input)) == 0 {
		return ""
	}
	return input
}

// Format is the text of the system message that carries hits into a
// turn: one line per memory with its id, continuation lines indented.
func Format(hits []runtype.MemoryHit) string {
	var b strings.Builder
	b.WriteString("Memories saved in earlier conversations that may bear on the next message (best match first; they may be out of date):")
	for _, h := range hits {
		fmt.Fprintf(&b, "\n- [%s] %s", h.ID, strings.ReplaceAll(strings.TrimSpace(h.Content), "\n", "\n  "))
	}
	return b.String()
}
