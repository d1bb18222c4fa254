package configure_test

import (
	"context"
	"testing"

	"go.uber.org/goleak"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/internal/spectest"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/sandbox"
)

func TestMain(m *testing.M) {
	sandbox.Main() // a sandboxed process this binary starts runs through it
	goleak.VerifyTestMain(m)
}

// testBundle is a runtime started from an agentrt.yaml.
type testBundle struct {
	rt  *agentrt.Runtime
	dir string
}

// submit submits a turn and waits for it to end.
func (b *testBundle) submit(t *testing.T, p *apitype.SubmitTurnParams) (*apitype.SubmitTurnResult, *runtype.Turn) {
	t.Helper()
	res, err := b.rt.SubmitTurn(context.Background(), p)
	if err != nil {
		t.Fatalf("SubmitTurn: %v", err)
	}
	turn, err := b.rt.WaitTurn(context.Background(), p.Owner, res.TurnID)
	if err != nil {
		t.Fatalf("WaitTurn: %v", err)
	}
	return res, turn
}

// sessionEvents reads a session's events, validating every one against the
// standard's schema and checking the sequence has no gaps.
func (b *testBundle) sessionEvents(t *testing.T, owner runtype.Owner, sessionID string) []*event.Event {
	t.Helper()
	sub, err := b.rt.Subscribe(context.Background(), &apitype.SubscribeParams{Owner: owner, SessionID: sessionID})
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
	}
	return evs
}
