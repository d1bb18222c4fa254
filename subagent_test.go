package agentrt_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/runtype"
)

// mind answers a model request with whatever its function makes of it:
// a test agent whose answers depend on what it is asked and shown.
type mind struct {
	mu    sync.Mutex
	calls int
	fn    func(req *model.Request, n int) *model.Response
}

func (b *mind) Info() model.Info { return model.Info{Kind: "replay", Model: "mind"} }

func (b *mind) Generate(_ context.Context, req *model.Request) (*model.Response, error) {
	b.mu.Lock()
	b.calls++
	n := b.calls
	b.mu.Unlock()
	return b.fn(req, n), nil
}

func (b *mind) count() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.calls
}

// lastUser is the request's last user message.
func lastUser(req *model.Request) string {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == runtype.RoleUser {
			return req.Messages[i].Content
		}
	}
	return ""
}

// toolResults are the request's tool messages by call id.
func toolResults(req *model.Request) map[string]string {
	out := map[string]string{}
	for _, m := range req.Messages {
		if m.Role == runtype.RoleTool {
			out[m.ToolCallID] = m.Content
		}
	}
	return out
}

// delegator calls tool with task on its first hop, and answers with what
// the tool answered after.
func delegator(tool string, tasks ...string) *mind {
	return &mind{fn: func(req *model.Request, _ int) *model.Response {
		res := toolResults(req)
		if len(res) == 0 {
			var calls []runtype.MessageToolCall
			for i, task := range tasks {
				in, _ := json.Marshal(map[string]string{"task": task})
				calls = append(calls, runtype.MessageToolCall{ID: fmt.Sprintf("d%d", i+1), Name: tool, Arguments: string(in)})
			}
			return &model.Response{ToolCalls: calls}
		}
		var parts []string
		for i := range tasks {
			parts = append(parts, res[fmt.Sprintf("d%d", i+1)])
		}
		return &model.Response{Text: "parent: " + strings.Join(parts, " | ")}
	}}
}

// echo answers every input with prefix and the input.
func echo(prefix string) *mind {
	return &mind{fn: func(req *model.Request, _ int) *model.Response {
		return &model.Response{Text: prefix + lastUser(req)}
	}}
}

type tree struct {
	rt *agentrt.Runtime
	tb *testBundle
}

func startTree(t *testing.T, cfg agentrt.Config) *tree {
	t.Helper()
	if cfg.DataDir == "" && cfg.Store == nil {
		cfg.DataDir = t.TempDir()
	}
	rt, err := agentrt.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Stop(context.Background()) })
	return &tree{rt: rt, tb: &testBundle{rt: rt}}
}

// waitEnd waits until a turn has ended (parks along the way do not end
// the wait) and returns it.
func waitEnd(t *testing.T, rt *agentrt.Runtime, sessionID, turnID string) *runtype.Turn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sub, err := rt.Subscribe(ctx, &apitype.SubscribeParams{SessionID: sessionID, TurnID: turnID})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	for {
		e, err := sub.Next(ctx)
		if err != nil {
			t.Fatalf("waiting for turn %s to end: %v", turnID, err)
		}
		if e.Type == event.TurnCompleted || e.Type == event.TurnFailed || e.Type == event.TaskBlocked {
			break
		}
	}
	turn, err := rt.WaitTurn(ctx, runtype.Owner{}, turnID)
	if err != nil {
		t.Fatal(err)
	}
	return turn
}

func types(es []*event.Event) []event.Type {
	out := make([]event.Type, len(es))
	for i, e := range es {
		out[i] = e.Type
	}
	return out
}

// TestSubagentDelegation: the standard's "subagent delegation" scenario.
// A parent turn delegates to a child through its subagent tool: the
// child is a task of its own on a thread of its own, linked to the
// parent's task and tool call; the parent parks while it waits and
// resumes with the child's answer; spawning, waiting and completion are
// facts, not prose.
func TestSubagentDelegation(t *testing.T) {
	t.Parallel()
	parent, child := delegator("lookup", "find order 1042"), echo("found: ")
	tr := startTree(t, agentrt.Config{Agents: map[string]*agentrt.Agent{
		"triage": {Provider: parent, Subagents: []agentrt.SubagentUse{{Agent: "lookup", AsTool: "lookup", Description: "Looks orders up."}}},
		"lookup": {Provider: child, Tools: []string{"read_file"}},
	}})
	ctx := context.Background()
	res, err := tr.rt.SubmitTurn(ctx, &apitype.SubmitTurnParams{Agent: "triage", Input: "where is order 1042?"})
	if err != nil {
		t.Fatal(err)
	}
	turn := waitEnd(t, tr.rt, res.SessionID, res.TurnID)
	if turn.Status != runtype.StatusCompleted || turn.Result != "parent: found: find order 1042" {
		t.Fatalf("parent turn %s %q, want completed with the child's answer", turn.Status, turn.Result)
	}
	subs, err := tr.rt.ListSubagents(ctx, runtype.Owner{}, res.SessionID)
	if err != nil || len(subs) != 1 {
		t.Fatalf("ListSubagents = %+v, %v; want one", subs, err)
	}
	s := subs[0]
	if s.Agent != "lookup" || s.Name != "lookup" || s.ParentTaskID != res.TaskID || s.ParentTurnID != res.TurnID ||
		s.ParentToolCallID != "d1" || s.RootTaskID != res.TaskID || s.Depth != 1 || s.Status != runtype.StatusCompleted ||
		s.Result != "found: find order 1042" || s.ThreadID == res.ThreadID {
		t.Errorf("subagent %+v, want lookup on its own thread, linked to the parent's task and call, completed", s)
	}
	childTask, err := tr.rt.GetTask(ctx, runtype.Owner{}, s.TaskID)
	if err != nil || childTask.Status != runtype.StatusCompleted {
		t.Fatalf("child task %+v, %v", childTask, err)
	}
	es := tr.tb.sessionEvents(t, runtype.Owner{}, res.SessionID)
	var delegated, spawned, completed, dep, waiting, resumed bool
	for _, e := range es {
		switch {
		case e.Type == event.TaskDelegated && e.TaskID == res.TaskID:
			p := e.Payload.(*event.DependencyPayload)
			delegated = p.ChildTaskID == s.TaskID && p.SubagentID == s.SubagentID && p.Depth == 1
		case e.Type == event.SubagentSpawned:
			p := e.Payload.(*event.SubagentPayload)
			spawned = e.SubagentID == s.SubagentID && p.ParentTaskID == res.TaskID && p.ParentToolCallID == "d1" && e.ParentTaskID == res.TaskID
		case e.Type == event.SubagentCompleted:
			completed = e.SubagentID == s.SubagentID && e.TaskID == s.TaskID
		case e.Type == event.TaskDependencyUpdated && e.TaskID == res.TaskID:
			dep = e.Payload.(*event.DependencyPayload).Status == runtype.StatusCompleted
		case e.Type == event.TaskWaiting && e.TaskID == res.TaskID:
			waiting = e.StatusReason == runtype.ReasonWaitingChildren && e.Status == string(runtype.StatusWaitingResource)
		case e.Type == event.TaskResumed && e.TaskID == res.TaskID:
			resumed = e.StatusReason == runtype.ReasonChildrenSettled
		case e.TaskID == s.TaskID && e.Type == event.TurnStarted:
			if e.ParentTaskID != res.TaskID || e.RootTaskID != res.TaskID {
				t.Errorf("the child's %s names parent %q root %q", e.Type, e.ParentTaskID, e.RootTaskID)
			}
		}
	}
	if !delegated || !spawned || !completed || !dep || !waiting || !resumed {
		t.Errorf("delegated %v spawned %v completed %v dependency %v waiting %v resumed %v; events %v",
			delegated, spawned, completed, dep, waiting, resumed, types(es))
	}
	tree, err := tr.rt.DelegationTree(ctx, runtype.Owner{}, res.TaskID)
	if err != nil || len(tree.Children) != 1 || tree.Children[0].Kind != apitype.NodeSubagent || tree.Children[0].Agent != "lookup" {
		t.Errorf("DelegationTree = %+v, %v; want the request with its lookup child", tree, err)
	}
	if parent.count() != 2 || child.count() != 1 {
		t.Errorf("model calls: parent %d, child %d; want 2 and 1 (nothing asked twice)", parent.count(), child.count())
	}
}
