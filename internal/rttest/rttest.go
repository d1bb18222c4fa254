// Package rttest holds what tests of packages that run a whole runtime
// share: submitting a turn and waiting for it, and reading a session's
// events checked against the Agent Runtime standard.
package rttest

import (
	"context"
	"testing"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/internal/spectest"
	"github.com/agentrt/agentrt/runtype"
)

// Submit submits a turn to rt and waits for it to end.
func Submit(t testing.TB, rt *agentrt.Runtime, p *apitype.SubmitTurnParams) (*apitype.SubmitTurnResult, *runtype.Turn) {
	t.Helper()
	res, err := rt.SubmitTurn(context.Background(), p)
	if err != nil {
		t.Fatalf("SubmitTurn: %v", err)
	}
	turn, err := rt.WaitTurn(context.Background(), p.Owner, res.TurnID)
	if err != nil {
		t.Fatalf("WaitTurn: %v", err)
	}
	return res, turn
}

// SessionEvents reads a session's events, validating every one against
// the standard's schema and checking the sequence has no gaps.
func SessionEvents(t testing.TB, rt *agentrt.Runtime, owner runtype.Owner, sessionID string) []*event.Event {
	t.Helper()
	sub, err := rt.Subscribe(context.Background(), &apitype.SubscribeParams{Owner: owner, SessionID: sessionID})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	var evs []*event.Event
	for {
		e, err := sub.TryNext(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if e == nil {
			break
		}
		evs = append(evs, e)
	}
	for i, e := range evs {
		if e.Sequence != int64(i+1) {
			t.Errorf("event %d (%s) has sequence %d, want %d", i, e.Type, e.Sequence, i+1)
		}
		raw, err := e.JSON()
		if err != nil {
			t.Fatal(err)
		}
		spectest.Event(t, raw)
		// A run's model call (not a tool's sampling call) fingerprints
		// the context it sent.
		if p, ok := e.Payload.(*event.ModelRequestedPayload); ok && e.ToolCallID == "" && (p.Context == nil || p.Context.Hash == "") {
			t.Errorf("model.requested %d has no context fingerprint", e.Sequence)
		}
	}
	return evs
}
