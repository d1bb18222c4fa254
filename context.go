package agentrt

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/output"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

// This file rebuilds the context a model call sent from the log: the
// fingerprint its model.requested event recorded names the system prompt
// and tool list blobs and the thread's messages by Seq range; reading
// them and hashing them again checks that the log still holds what the
// model saw.

// GetContext returns the context of the model call of request turnID at
// hop (0: the request's last), the last attempt of that hop, rebuilt
// from the log and checked against the call's fingerprint. A context
// that does not verify is no error: the view says why (Reason). Another
// tenant's request is not found; a hop the request made no call at is
// invalid.
func (rt *Runtime) GetContext(ctx context.Context, owner runtype.Owner, turnID string, hop int) (*apitype.ContextView, error) {
	if hop < 0 {
		return nil, invalid("hop", "must be a positive hop number (or 0 for the last), not %d", hop)
	}
	tenant := tenantOf(owner)
	t, err := rt.store.TurnGet(ctx, &store.TurnGetParams{TenantID: tenant, ID: turnID})
	if err != nil {
		return nil, fmt.Errorf("reading request %s: %w", turnID, err)
	}
	call, hops, err := rt.modelCall(ctx, tenant, turnID, hop)
	if err != nil {
		return nil, err
	}
	if call == nil {
		if len(hops) == 0 {
			return nil, fmt.Errorf("request %s has made no model call with a recorded context: %w", turnID, store.ErrNotFound)
		}
		return nil, invalid("hop", "request %s made model calls at hops %s; %d is not one of them", turnID, hopList(hops), hop)
	}
	p := call.Payload.(*event.ModelRequestedPayload)
	fp := p.Context
	v := &apitype.ContextView{
		RequestID: t.ID, SessionID: t.SessionID, ThreadID: fp.ThreadID, Hop: p.Hop, Attempt: p.Attempt, Hops: hops,
		Provider: p.Provider, RequestedAt: ts(call.Timestamp), Fingerprint: *fp,
		Tools: []apitype.ContextTool{}, Messages: []apitype.ContextMessage{},
	}
	reason, err := rt.rebuildContext(ctx, tenant, v)
	if err != nil {
		return nil, err
	}
	v.Verified, v.Reason = reason == "", reason
	return v, nil
}

// modelCall finds the last model.requested event with a context of
// request turnID at hop (0: the last hop), and the hops of all of them.
// Model calls a tool made (MCP sampling) carry no context of the thread
// and are left out.
func (rt *Runtime) modelCall(ctx context.Context, tenant, turnID string, hop int) (*event.Event, []int, error) {
	var found *event.Event
	var hops []int
	var after int64
	for {
		evs, err := rt.store.EventListAfter(ctx, &store.EventListAfterParams{
			Filter: event.Filter{TenantID: tenant, TurnID: turnID}, AfterCursor: after, Limit: store.MaxListLimit,
		})
		if err != nil {
			return nil, nil, fmt.Errorf("reading the events of request %s: %w", turnID, err)
		}
		for _, e := range evs {
			p, ok := e.Payload.(*event.ModelRequestedPayload)
			if !ok || e.Type != event.ModelRequested || p.Context == nil || e.ToolCallID != "" {
				continue
			}
			if len(hops) == 0 || hops[len(hops)-1] != p.Hop {
				hops = append(hops, p.Hop)
			}
			if hop == 0 || p.Hop == hop {
				found = e // the last attempt of the hop wins
			}
		}
		if len(evs) < store.MaxListLimit {
			return found, hops, nil
		}
		after = evs[len(evs)-1].Cursor
	}
}

// rebuildContext fills v's instructions, tools and messages from the
// blobs and messages its fingerprint names and hashes them. It returns
// why the context does not verify ("" when it does); an error only when
// the store could not be read.
func (rt *Runtime) rebuildContext(ctx context.Context, tenant string, v *apitype.ContextView) (string, error) {
	fp := &v.Fingerprint
	var problems []string
	instr, why, err := rt.contextBlob(ctx, tenant, fp.InstructionsRef, "system prompt")
	if err != nil {
		return "", err
	}
	if why != "" {
		problems = append(problems, why)
	}
	v.Instructions = string(instr)
	tools, why, err := rt.contextBlob(ctx, tenant, fp.ToolsRef, "tool list")
	if err != nil {
		return "", err
	}
	if why != "" {
		problems = append(problems, why)
	} else if err := json.Unmarshal(tools, &v.Tools); err != nil {
		problems = append(problems, fmt.Sprintf("the tool list blob %s is not a JSON list of tools: %v", fp.ToolsRef, err))
	}
	var d model.ContextDigest
	redacted := false
	for _, r := range fp.Messages {
		from, through := r[0], r[1]
		if from <= 0 || through < from {
			problems = append(problems, fmt.Sprintf("the fingerprint names messages %d–%d, which is no range of seqs", from, through))
			continue
		}
		ms, err := rt.store.MessageList(ctx, &store.MessageListParams{TenantID: tenant, ThreadID: fp.ThreadID, AfterSeq: from - 1, BeforeSeq: through + 1})
		if err != nil {
			return "", fmt.Errorf("reading messages %d–%d of thread %s: %w", from, through, fp.ThreadID, err)
		}
		if want := through - from + 1; int64(len(ms)) != want {
			problems = append(problems, fmt.Sprintf("messages %d–%d of thread %s: the log holds %d of the %d", from, through, fp.ThreadID, len(ms), want))
		}
		for _, m := range ms {
			d.Add(m)
			redacted = redacted || output.Redacted(m.Content)
			v.Messages = append(v.Messages, apitype.ContextMessage{
				Seq: m.Seq, Role: m.Role, TurnID: m.TurnID, Content: m.Content, ToolCalls: m.ToolCalls,
				ToolCallID: m.ToolCallID, IsError: m.IsError, Reasoning: m.Reasoning, Boundary: m.Boundary,
			})
		}
	}
	if len(v.Messages) != fp.MessageCount {
		problems = append(problems, fmt.Sprintf("the call sent %d messages; the ranges name %d in the log", fp.MessageCount, len(v.Messages)))
	}
	v.Hash = d.Sum(fp.InstructionsRef, fp.ToolsRef)
	if len(problems) == 0 && v.Hash != fp.Hash {
		why := fmt.Sprintf("the messages in the log hash to %s, but the call recorded %s: a message the model saw was changed after the call", v.Hash, fp.Hash)
		if redacted {
			why += " (some are stored redacted: a secret removed before storage also changes the hash)"
		}
		problems = append(problems, why)
	}
	return strings.Join(problems, "; "), nil
}

// contextBlob reads the blob ref (the call's system prompt or tool
// list, what) and checks that its content still hashes to its ref. It
// returns the data, or why it cannot stand for what the model saw.
func (rt *Runtime) contextBlob(ctx context.Context, tenant, ref, what string) ([]byte, string, error) {
	if ref == "" {
		return nil, fmt.Sprintf("the fingerprint names no %s", what), nil
	}
	b, err := rt.store.BlobGet(ctx, &store.BlobGetParams{TenantID: tenant, Ref: ref})
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, fmt.Sprintf("the %s blob %s is not in the store", what, ref), nil
	case err != nil:
		return nil, "", fmt.Errorf("reading the %s blob %s: %w", what, ref, err)
	}
	sum := sha256.Sum256(b.Data)
	if got := "sha256:" + hex.EncodeToString(sum[:]); got != ref {
		return b.Data, fmt.Sprintf("the %s blob %s now hashes to %s: it was changed after the call", what, ref, got), nil
	}
	return b.Data, "", nil
}

func hopList(hops []int) string {
	s := make([]string, len(hops))
	for i, h := range hops {
		s[i] = fmt.Sprint(h)
	}
	return strings.Join(s, ", ")
}
