package configure_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/internal/rttest"
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
	return rttest.Submit(t, b.rt, p)
}

// sessionEvents reads a session's events, each checked against the
// standard's schema, with no gaps in the sequence.
func (b *testBundle) sessionEvents(t *testing.T, owner runtype.Owner, sessionID string) []*event.Event {
	t.Helper()
	return rttest.SessionEvents(t, b.rt, owner, sessionID)
}
