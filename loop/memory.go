package loop

import (
	"context"
	"fmt"

	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/memory"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

// RecallFunc finds the memories of an agent a turn's input matches, best
// first; nil hits mean none. memory.Recaller.Recall is one.
type RecallFunc func(ctx context.Context, owner runtype.Owner, agent, sessionID, input string) ([]runtype.MemoryHit, error)

// recallMemories puts the memories the turn's input matches into the
// conversation, as one system message before the turn's own, and records
// which in context.resolved. A recall that fails is a runtime.warning:
// the turn goes on without memories. A turn that will not reach a model
// (cancelled, or no model can take it) recalls nothing.
func (r *run) recallMemories(ctx context.Context, b *store.Batch) {
	if r.cfg.Recall == nil || r.noRecall || ctx.Err() != nil {
		return
	}
	if p := r.agent.Profile; len(model.Decide(&p, r.agent.Candidates).Eligible) == 0 {
		return // routing comes after the turn's message; it will find no model either
	}
	hits, err := r.cfg.Recall(ctx, r.turn.Owner, r.agent.Name, r.turn.SessionID, r.turn.Input)
	if err != nil {
		b.Events = append(b.Events, r.event(event.RuntimeWarning, "", "", &event.DiagnosticPayload{
			Code: "memory_recall_failed", Message: fmt.Sprintf("recalling memories: %v; the turn goes on without them", err),
		}))
		return
	}
	if len(hits) == 0 {
		return
	}
	msg := r.appendMessage(runtype.Message{Role: runtype.RoleSystem, Content: memory.Format(hits)})
	ids := make([]string, len(hits))
	for i, h := range hits {
		ids[i] = h.ID
	}
	b.Messages = append(b.Messages, msg)
	b.Events = append(b.Events, r.event(event.ContextResolved, "", "", &event.ContextResolvedPayload{
		Source: event.ContextSourceMemory, Query: memory.Query(r.turn.Input), MemoryIDs: ids, MessageSeq: msg.Seq,
	}))
}
