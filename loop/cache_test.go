package loop_test

import (
	"path/filepath"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/runtype"
)

// sentMessage is what of a message an adapter sends.
type sentMessage struct {
	Role       runtype.Role
	Content    string
	ToolCalls  []runtype.MessageToolCall
	ToolCallID string
	IsError    bool
	Reasoning  []runtype.Reasoning
}

func sent(ms []runtype.Message) []sentMessage {
	out := make([]sentMessage, len(ms))
	for i, m := range ms {
		out[i] = sentMessage{m.Role, m.Content, m.ToolCalls, m.ToolCallID, m.IsError, m.Reasoning}
	}
	return out
}

// TestRequestsKeepTheirPrefix: every model request of a session starts
// with the request before it (instructions, tools and each message as an
// adapter sends it), across the hops of a turn and across turns, whether
// the next turn's coordinator kept the conversation or read it back from
// the SQLite file, so provider prompt caches hit.
func TestRequestsKeepTheirPrefix(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "agentrt.db")
	a, b := openProc(t, path), openProc(t, path)
	sc := &script{}
	agent := plainAgent(sc, lookupTool(new([]string), new(sync.Mutex)))
	agent.Instructions = "You are a support agent for Acme."
	th := newThreadRun(t, a, agent, sc)
	thinking := step{resp: &model.Response{
		Reasoning: []runtype.Reasoning{{Provider: "anthropic_messages", Text: "Look it up.", Signature: "sig"}},
		ToolCalls: []runtype.MessageToolCall{{ID: "c1", Name: "lookup_order", Arguments: `{"order_id": "1042"}`}},
	}}
	th.run(a, th.newTurn("Where is order 1042?"), thinking, reply("It has shipped."))
	th.run(b, th.newTurn("And order 7?"), calls(call("lookup_order", `{"order_id":"7"}`)), reply("Shipped too.")) // read from the file
	th.run(a, th.newTurn("Thanks."), reply("You're welcome."))                                                    // a's kept conversation, extended

	reqs := sc.requests()
	if len(reqs) != 5 {
		t.Fatalf("the model got %d requests, want 5", len(reqs))
	}
	for i := 1; i < len(reqs); i++ {
		prev, cur := reqs[i-1], reqs[i]
		if prev.Instructions != cur.Instructions || prev.SessionID != cur.SessionID {
			t.Errorf("request %d: instructions %q or session %q changed from %q, %q", i, cur.Instructions, cur.SessionID, prev.Instructions, prev.SessionID)
		}
		if diff := cmp.Diff(prev.Tools, cur.Tools); diff != "" {
			t.Errorf("request %d: tools changed (-before +now):\n%s", i, diff)
		}
		if len(cur.Messages) <= len(prev.Messages) {
			t.Fatalf("request %d has %d messages, the one before %d", i, len(cur.Messages), len(prev.Messages))
		}
		if diff := cmp.Diff(sent(prev.Messages), sent(cur.Messages[:len(prev.Messages)])); diff != "" {
			t.Errorf("request %d does not start with request %d (-before +now):\n%s", i, i-1, diff)
		}
	}
}
