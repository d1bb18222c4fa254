package agentrt_test

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/agentrt/agentrt/hook"
	"github.com/agentrt/agentrt/policy"
	"os"
	"path/filepath"
	"slices"
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
			var seen []string
			if all, err := rt.Subscribe(context.Background(), &apitype.SubscribeParams{SessionID: sessionID}); err == nil {
				for e, _ := all.TryNext(context.Background()); e != nil; e, _ = all.TryNext(context.Background()) {
					seen = append(seen, fmt.Sprintf("%s(%s %s %s)", e.Type, e.TaskID, e.Status, e.StatusReason))
				}
				all.Close()
			}
			t.Fatalf("waiting for turn %s to end: %v; events: %s", turnID, err, strings.Join(seen, " "))
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
	snap, err := tr.rt.GetSession(ctx, runtype.Owner{}, res.SessionID)
	if err != nil || snap.SubagentJobSummary == nil || len(snap.SubagentJobSummary.Subagents) != 1 || len(snap.SubagentJobSummary.Trees) != 1 ||
		snap.SubagentJobSummary.Trees[0].TaskID != res.TaskID || len(snap.SubagentJobSummary.Trees[0].Children) != 1 || snap.SubagentJobSummary.Open != 0 {
		t.Errorf("session snapshot's delegation %+v, %v; want the subagent and the request's tree", snap.SubagentJobSummary, err)
	}
	if parent.count() != 2 || child.count() != 1 {
		t.Errorf("model calls: parent %d, child %d; want 2 and 1 (nothing asked twice)", parent.count(), child.count())
	}
}

// caller is a child that calls one tool with input on its first hop and
// answers with what it saw after.
func caller(name, input string) *mind {
	return &mind{fn: func(req *model.Request, _ int) *model.Response {
		if res := toolResults(req); len(res) > 0 {
			return &model.Response{Text: "saw: " + res["c1"]}
		}
		return &model.Response{ToolCalls: []runtype.MessageToolCall{{ID: "c1", Name: name, Arguments: input}}}
	}}
}

// TestSubagentIsolation: a child sees only its own tools (never its
// parent's by inheritance), and a child declared parent_readonly works on
// the parent's workspace with only its read-only tools.
func TestSubagentIsolation(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "order.md"), []byte("order 1042: shipped"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Run("parent-only tool", func(t *testing.T) {
		t.Parallel()
		tr := startTree(t, agentrt.Config{Agents: map[string]*agentrt.Agent{
			"triage": {Provider: delegator("lookup", "write it down"), Workspace: ws, Tools: []string{"read_file", "write_file"},
				Subagents: []agentrt.SubagentUse{{Agent: "lookup", AsTool: "lookup"}}},
			"lookup": {Provider: caller("write_file", `{"path":"x.md","content":"x"}`), Tools: []string{"list_dir"}},
		}})
		res, err := tr.rt.SubmitTurn(context.Background(), &apitype.SubmitTurnParams{Agent: "triage", Input: "go"})
		if err != nil {
			t.Fatal(err)
		}
		turn := waitEnd(t, tr.rt, res.SessionID, res.TurnID)
		if turn.Status != runtype.StatusCompleted || !strings.Contains(turn.Result, `unknown tool "write_file"`) {
			t.Errorf("parent %s %q, want the child's refusal of write_file passed up", turn.Status, turn.Result)
		}
		if _, err := os.Stat(filepath.Join(ws, "x.md")); err == nil {
			t.Error("the child wrote with its parent's tool")
		}
	})
	t.Run("parent_readonly", func(t *testing.T) {
		t.Parallel()
		reader := &mind{fn: func(req *model.Request, _ int) *model.Response {
			res := toolResults(req)
			switch {
			case len(res) == 0:
				return &model.Response{ToolCalls: []runtype.MessageToolCall{{ID: "r1", Name: "read_file", Arguments: `{"path":"order.md"}`}}}
			case len(res) == 1:
				return &model.Response{ToolCalls: []runtype.MessageToolCall{{ID: "w1", Name: "write_file", Arguments: `{"path":"y.md","content":"y"}`}}}
			}
			return &model.Response{Text: res["r1"] + " / " + res["w1"]}
		}}
		tr := startTree(t, agentrt.Config{Agents: map[string]*agentrt.Agent{
			"triage": {Provider: delegator("lookup", "read the order"), Workspace: ws, Tools: []string{"read_file"},
				Subagents: []agentrt.SubagentUse{{Agent: "lookup", AsTool: "lookup", Workspace: "parent_readonly"}}},
			"lookup": {Provider: reader, Workspace: t.TempDir(), Tools: []string{"read_file", "write_file"}},
		}})
		res, err := tr.rt.SubmitTurn(context.Background(), &apitype.SubmitTurnParams{Agent: "triage", Input: "go"})
		if err != nil {
			t.Fatal(err)
		}
		turn := waitEnd(t, tr.rt, res.SessionID, res.TurnID)
		if turn.Status != runtype.StatusCompleted || !strings.Contains(turn.Result, "order 1042: shipped") ||
			!strings.Contains(turn.Result, `unknown tool "write_file"`) {
			t.Errorf("parent %s %q, want the parent's file read and the write refused", turn.Status, turn.Result)
		}
		if _, err := os.Stat(filepath.Join(ws, "y.md")); err == nil {
			t.Error("a read-only child wrote into its parent's workspace")
		}
		subs, _ := tr.rt.ListSubagents(context.Background(), runtype.Owner{}, res.SessionID)
		if len(subs) != 1 || subs[0].Workspace != "parent_readonly" || subs[0].Agent != "lookup" {
			t.Errorf("subagents %+v", subs)
		}
	})
}

// inheritRules deny reads to triage (and so to its children) and let
// triage delegate (an allow its children do not inherit).
const inheritRules = `
tier: workspace
rules:
  - id: triage-no-reads
    tools: [read_file]
    agents: [triage]
    decision: deny
    reason_code: no_reads
    message: triage may not read
  - id: triage-delegates
    tools: [delegate, delegate_writer]
    agents: [triage]
    decision: allow
    reason_code: triage_delegates
`

// TestSubagentPolicyInheritance: a child's effective policy is its
// parent's and its own: a parent's deny binds it, a parent's allow does
// not, and a child's bypass mode under a parent in default mode acts as
// default; its approval is in the same inbox, with its lineage.
func TestSubagentPolicyInheritance(t *testing.T) {
	t.Parallel()
	rs, err := policy.ParseRules("rules.yaml", []byte(inheritRules))
	if err != nil {
		t.Fatal(err)
	}
	k, err := policy.NewKernel(policy.KernelConfig{Rules: rs, DefaultMode: policy.ModeDefault,
		AgentModes: map[string]policy.Mode{"writer": policy.ModeBypass}})
	if err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	tr := startTree(t, agentrt.Config{Policy: k, Agents: map[string]*agentrt.Agent{
		"triage": {Provider: delegator("delegate", "a", "b"), Workspace: ws,
			Subagents: []agentrt.SubagentUse{{Agent: "reader", AsTool: "delegate"}, {Agent: "writer", AsTool: "delegate_writer"}}},
		"reader": {Provider: caller("read_file", `{"path":"order.md"}`), Workspace: ws, Tools: []string{"read_file", "list_dir"}},
		"writer": {Provider: caller("write_file", `{"path":"w.md","content":"w"}`), Workspace: ws, Tools: []string{"write_file"}},
	}})
	ctx := context.Background()
	// The reader is denied by its parent's rule.
	res, err := tr.rt.SubmitTurn(ctx, &apitype.SubmitTurnParams{Agent: "triage", Input: "go"})
	if err != nil {
		t.Fatal(err)
	}
	turn := waitEnd(t, tr.rt, res.SessionID, res.TurnID)
	if turn.Status != runtype.StatusCompleted || !strings.Contains(turn.Result, "triage may not read") {
		t.Errorf("parent %s %q, want the parent's deny applied in the child", turn.Status, turn.Result)
	}
	// The writer, in bypass mode, asks as its parent's default mode does.
	w, err := tr.rt.SpawnSubagent(ctx, &apitype.SpawnSubagentParams{SessionID: res.SessionID, Agent: "writer", Input: "write", ParentTaskID: res.TaskID})
	if err != nil {
		t.Fatal(err)
	}
	if w.Depth != 1 || w.RootTaskID != res.TaskID {
		t.Errorf("spawned %+v, want depth 1 under the request", w)
	}
	wait, err := tr.rt.WaitSubagents(ctx, &apitype.WaitSubagentsParams{SubagentIDs: []string{w.SubagentID}})
	if err != nil || len(wait.Subagents) != 1 || wait.Subagents[0].Status != runtype.StatusWaitingPermission || wait.Subagents[0].PendingActions != 1 {
		t.Fatalf("WaitSubagents = %+v, %v; want the writer waiting for an approval", wait, err)
	}
	acts, err := tr.rt.ListActions(ctx, &apitype.ListActionsParams{Status: runtype.ActionPending})
	if err != nil || len(acts) != 1 {
		t.Fatalf("pending actions %+v, %v", acts, err)
	}
	a := acts[0]
	if a.ParentTaskID != res.TaskID || a.RootTaskID != res.TaskID || a.Depth != 1 || a.SubagentID != w.SubagentID || a.ToolName != "write_file" {
		t.Errorf("action %+v, want the child's write with its lineage", a)
	}
	if _, err := tr.rt.RespondAction(ctx, &apitype.RespondActionParams{ActionID: a.ActionID, Decision: runtype.DecisionApprove}); err != nil {
		t.Fatal(err)
	}
	wt := waitEnd(t, tr.rt, res.SessionID, wait.Subagents[0].TurnID)
	if wt.Status != runtype.StatusCompleted {
		t.Errorf("writer %s", wt.Status)
	}
	var modes []string
	for _, e := range tr.tb.sessionEvents(t, runtype.Owner{}, res.SessionID) {
		if e.Type == event.PermissionEvaluated && e.PermissionDecision != nil && e.TaskID == wt.TaskID {
			modes = append(modes, string(e.PermissionDecision.Mode))
		}
	}
	if !slices.Equal(modes, []string{"default"}) {
		t.Errorf("the writer's decisions were made in modes %v, want [default]", modes)
	}
}

// TestSubagentRecursion: the runtime, not the model, bounds delegation: a
// self-delegating agent stops at the depth limit with a clear refusal and
// no runaway task, and a cycle A→B→A is refused.
func TestSubagentRecursion(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("depth", func(t *testing.T) {
		t.Parallel()
		self := delegator("deeper", "go deeper")
		tr := startTree(t, agentrt.Config{Agents: map[string]*agentrt.Agent{
			"self": {Provider: self, Subagents: []agentrt.SubagentUse{{Agent: "self", AsTool: "deeper"}}},
		}})
		res, err := tr.rt.SubmitTurn(ctx, &apitype.SubmitTurnParams{Agent: "self", Input: "go"})
		if err != nil {
			t.Fatal(err)
		}
		turn := waitEnd(t, tr.rt, res.SessionID, res.TurnID)
		if turn.Status != runtype.StatusCompleted ||
			!strings.Contains(turn.Result, "delegation refused: self would run at depth 4 of the delegation tree, past the limit of 3") {
			t.Errorf("root %s %q, want the refusal at depth 4 passed up", turn.Status, turn.Result)
		}
		subs, _ := tr.rt.ListSubagents(ctx, runtype.Owner{}, res.SessionID)
		var depths []int
		for _, s := range subs {
			depths = append(depths, s.Depth)
			if s.Status != runtype.StatusCompleted {
				t.Errorf("subagent %s at depth %d is %s", s.SubagentID, s.Depth, s.Status)
			}
		}
		if !slices.Equal(depths, []int{1, 2, 3}) {
			t.Errorf("subagents at depths %v, want 1, 2, 3 and no more", depths)
		}
		if n := self.count(); n != 8 {
			t.Errorf("%d model calls, want 8 (2 a level, 4 levels)", n)
		}
	})
	t.Run("cycle", func(t *testing.T) {
		t.Parallel()
		tr := startTree(t, agentrt.Config{MaxDelegationDepth: 5, Agents: map[string]*agentrt.Agent{
			"a": {Provider: delegator("to_b", "ask b"), Subagents: []agentrt.SubagentUse{{Agent: "b", AsTool: "to_b"}}},
			"b": {Provider: delegator("to_a", "ask a"), Subagents: []agentrt.SubagentUse{{Agent: "a", AsTool: "to_a"}}},
		}})
		res, err := tr.rt.SubmitTurn(ctx, &apitype.SubmitTurnParams{Agent: "a", Input: "go"})
		if err != nil {
			t.Fatal(err)
		}
		turn := waitEnd(t, tr.rt, res.SessionID, res.TurnID)
		if turn.Status != runtype.StatusCompleted || !strings.Contains(turn.Result, "delegating to it would close a cycle") {
			t.Errorf("root %s %q, want the cycle refused", turn.Status, turn.Result)
		}
		if subs, _ := tr.rt.ListSubagents(ctx, runtype.Owner{}, res.SessionID); len(subs) != 1 {
			t.Errorf("%d subagents, want 1 (b); the cycle back to a never started", len(subs))
		}
		// The control plane refuses the same.
		sub, _ := tr.rt.ListSubagents(ctx, runtype.Owner{}, res.SessionID)
		_, err = tr.rt.SpawnSubagent(ctx, &apitype.SpawnSubagentParams{SessionID: res.SessionID, Agent: "a", Input: "x", ParentTaskID: sub[0].TaskID})
		if !errors.Is(err, apitype.ErrConflict) || !strings.Contains(err.Error(), "cycle") {
			t.Errorf("spawning a under b: %v, want a conflict naming the cycle", err)
		}
	})
}

// TestSubagentBadInput: a delegation whose input fails its schema never
// starts a child (the model sees why); the control plane answers unknown
// children, closed ones and bad requests with clear errors.
func TestSubagentBadInput(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	parent := &mind{fn: func(req *model.Request, _ int) *model.Response {
		if res := toolResults(req); len(res) > 0 {
			return &model.Response{Text: res["c1"]}
		}
		return &model.Response{ToolCalls: []runtype.MessageToolCall{{ID: "c1", Name: "lookup", Arguments: `{"order":"not a number"}`}}}
	}}
	tr := startTree(t, agentrt.Config{Agents: map[string]*agentrt.Agent{
		"triage": {Provider: parent, Subagents: []agentrt.SubagentUse{{Agent: "lookup", AsTool: "lookup",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"order":{"type":"integer"}},"required":["order"]}`)}}},
		"lookup": {Provider: echo("found: ")},
	}})
	res, err := tr.rt.SubmitTurn(ctx, &apitype.SubmitTurnParams{Agent: "triage", Input: "go"})
	if err != nil {
		t.Fatal(err)
	}
	turn := waitEnd(t, tr.rt, res.SessionID, res.TurnID)
	if turn.Status != runtype.StatusCompleted || !strings.Contains(turn.Result, "invalid input for lookup") {
		t.Errorf("parent %s %q, want the schema's refusal", turn.Status, turn.Result)
	}
	if subs, _ := tr.rt.ListSubagents(ctx, runtype.Owner{}, res.SessionID); len(subs) != 0 {
		t.Errorf("a child started for invalid input: %+v", subs)
	}
	if _, err := tr.rt.GetSubagent(ctx, &apitype.SubagentParams{SubagentID: "sub_nope"}); !errors.Is(err, apitype.ErrNotFound) {
		t.Errorf("unknown subagent: %v", err)
	}
	for name, p := range map[string]*apitype.SpawnSubagentParams{
		"unknown agent":          {SessionID: res.SessionID, Agent: "nobody", Input: "x"},
		"empty input":            {SessionID: res.SessionID, Agent: "lookup", Input: " "},
		"unknown session":        {SessionID: "nope", Agent: "lookup", Input: "x"},
		"other session's parent": {SessionID: res.SessionID, Agent: "lookup", Input: "x", ParentTaskID: "task_nope"},
	} {
		if _, err := tr.rt.SpawnSubagent(ctx, p); err == nil {
			t.Errorf("%s: spawned", name)
		}
	}
	other := runtype.Owner{TenantID: "other", PrincipalID: "p"}
	s, err := tr.rt.SpawnSubagent(ctx, &apitype.SpawnSubagentParams{SessionID: res.SessionID, Agent: "lookup", Input: "one", IdempotencyKey: "k1"})
	if err != nil {
		t.Fatal(err)
	}
	again, err := tr.rt.SpawnSubagent(ctx, &apitype.SpawnSubagentParams{SessionID: res.SessionID, Agent: "lookup", Input: "one", IdempotencyKey: "k1"})
	if err != nil || again.SubagentID != s.SubagentID {
		t.Errorf("the same key again: %+v, %v; want the first subagent", again, err)
	}
	if _, err := tr.rt.GetSubagent(ctx, &apitype.SubagentParams{Owner: other, SubagentID: s.SubagentID}); !errors.Is(err, apitype.ErrNotFound) {
		t.Errorf("another tenant read the subagent: %v", err)
	}
	w, err := tr.rt.WaitSubagents(ctx, &apitype.WaitSubagentsParams{SubagentIDs: []string{s.SubagentID}})
	if err != nil || w.TimedOut || w.Subagents[0].Status != runtype.StatusCompleted || w.Subagents[0].Result != "found: one" {
		t.Fatalf("WaitSubagents = %+v, %v", w, err)
	}
	next, err := tr.rt.SendSubagentInput(ctx, &apitype.SendSubagentInputParams{SubagentID: s.SubagentID, Input: "two"})
	if err != nil || next.Inputs != 2 || next.TaskID == s.TaskID {
		t.Fatalf("SendSubagentInput = %+v, %v", next, err)
	}
	w, err = tr.rt.WaitSubagents(ctx, &apitype.WaitSubagentsParams{SubagentIDs: []string{s.SubagentID}})
	if err != nil || w.Subagents[0].Result != "found: two" || w.Subagents[0].ThreadID != s.ThreadID {
		t.Fatalf("after the second input: %+v, %v; want its answer on the same thread", w, err)
	}
	closed, err := tr.rt.CloseSubagent(ctx, &apitype.SubagentParams{SubagentID: s.SubagentID})
	if err != nil || !closed.Closed {
		t.Fatalf("CloseSubagent = %+v, %v", closed, err)
	}
	if _, err := tr.rt.WaitSubagents(ctx, &apitype.WaitSubagentsParams{SubagentIDs: []string{s.SubagentID}}); !errors.Is(err, apitype.ErrConflict) {
		t.Errorf("a wait on a closed subagent: %v, want a conflict", err)
	}
	if _, err := tr.rt.SendSubagentInput(ctx, &apitype.SendSubagentInputParams{SubagentID: s.SubagentID, Input: "three"}); !errors.Is(err, apitype.ErrConflict) {
		t.Errorf("input to a closed subagent: %v, want a conflict", err)
	}
	if _, err := tr.rt.WaitSubagents(ctx, &apitype.WaitSubagentsParams{}); err == nil {
		t.Error("a wait on nothing was accepted")
	}
	var closedEvent bool
	for _, e := range tr.tb.sessionEvents(t, runtype.Owner{}, res.SessionID) {
		closedEvent = closedEvent || e.Type == event.SubagentClosed && e.SubagentID == s.SubagentID
	}
	if !closedEvent {
		t.Error("no subagent.closed")
	}
}

// TestSubagentBudget: a tree spends from its session's budgets: children
// that together would exceed the root's token budget stop at it (no
// call past it), each stop a fact of the task it stopped, and the parent
// learns of its children's failures and is stopped in turn.
func TestSubagentBudget(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	worker := &mind{fn: func(req *model.Request, _ int) *model.Response {
		u := runtype.Usage{InputTokens: 300, OutputTokens: 100}
		if len(toolResults(req)) < 3 {
			return &model.Response{ToolCalls: []runtype.MessageToolCall{{ID: fmt.Sprintf("l%d", len(toolResults(req))), Name: "list_dir", Arguments: `{"path":"."}`}}, Usage: u}
		}
		return &model.Response{Text: "listed", Usage: u}
	}}
	parent := delegator("work", "one", "two", "three")
	parentWithUsage := &mind{fn: func(req *model.Request, n int) *model.Response {
		r := parent.fn(req, n)
		r.Usage = runtype.Usage{InputTokens: 300, OutputTokens: 100}
		return r
	}}
	const limit = 4000
	tr := startTree(t, agentrt.Config{
		Budgets: agentrt.Budgets{Session: agentrt.Budget{MaxTokens: limit}, FailOnExceeded: true},
		Agents: map[string]*agentrt.Agent{
			"triage": {Provider: parentWithUsage, Subagents: []agentrt.SubagentUse{{Agent: "worker", AsTool: "work"}}},
			"worker": {Provider: worker, Workspace: t.TempDir(), Tools: []string{"list_dir"}},
		},
	})
	res, err := tr.rt.SubmitTurn(ctx, &apitype.SubmitTurnParams{Agent: "triage", Input: "go"})
	if err != nil {
		t.Fatal(err)
	}
	turn := waitEnd(t, tr.rt, res.SessionID, res.TurnID)
	if turn.Status != runtype.StatusFailed || turn.StatusReason != runtype.ReasonQuotaExceeded {
		t.Errorf("parent %s (%s), want failed quota_exceeded", turn.Status, turn.StatusReason)
	}
	subs, err := tr.rt.ListSubagents(ctx, runtype.Owner{}, res.SessionID)
	if err != nil || len(subs) != 3 {
		t.Fatalf("subagents %+v, %v", subs, err)
	}
	var total int64
	stopped := 0
	for _, s := range subs {
		total += s.Usage.InputTokens + s.Usage.OutputTokens
		if s.Status == runtype.StatusFailed && s.Failure != nil && s.Failure.Kind == runtype.FailureQuotaExceeded {
			stopped++
		}
	}
	total += turn.Usage.InputTokens + turn.Usage.OutputTokens
	if total > limit || total < limit-1500 {
		t.Errorf("the tree used %d tokens of %d: want it to stop within one call of the budget, never past it", total, limit)
	}
	if stopped == 0 {
		t.Errorf("no child was stopped by the budget: %+v", subs)
	}
	blocked := map[string]bool{}
	for _, e := range tr.tb.sessionEvents(t, runtype.Owner{}, res.SessionID) {
		if e.Type == event.QuotaBlocked {
			blocked[e.TaskID] = true
		}
	}
	if !blocked[res.TaskID] || len(blocked) < 2 {
		t.Errorf("quota.blocked on tasks %v, want the parent's and its stopped children's", blocked)
	}
}

// flaky is a mind whose calls listed in fail return an error the
// runtime does not retry.
type flaky struct {
	*mind
	mu   sync.Mutex
	fail map[int]bool
}

func (f *flaky) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	resp, _ := f.mind.Generate(ctx, req)
	n := f.count()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail[n] {
		return nil, &model.Error{Kind: model.ErrInvalidRequest, Message: "the provider refused the request"}
	}
	return resp, nil
}

// TestTaskRetryAndGraph: the standard's "agent task retry and graph"
// scenario. A task that delegated to a child and then failed keeps its
// id; the failed attempt stays recorded with its run id; the parent/child
// edge stays; retry_task starts a new attempt that goes on from the
// recorded steps (the child is not started again).
func TestTaskRetryAndGraph(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	parent := &flaky{mind: delegator("lookup", "find it"), fail: map[int]bool{2: true}}
	child := echo("found: ")
	tr := startTree(t, agentrt.Config{Agents: map[string]*agentrt.Agent{
		"triage": {Provider: parent, Subagents: []agentrt.SubagentUse{{Agent: "lookup", AsTool: "lookup"}}},
		"lookup": {Provider: child},
	}})
	res, err := tr.rt.SubmitTurn(ctx, &apitype.SubmitTurnParams{Agent: "triage", Input: "go"})
	if err != nil {
		t.Fatal(err)
	}
	if turn := waitEnd(t, tr.rt, res.SessionID, res.TurnID); turn.Status != runtype.StatusFailed {
		t.Fatalf("first attempt: %s, want failed", turn.Status)
	}
	if _, err := tr.rt.RetryTask(ctx, &apitype.TaskControlParams{TaskID: res.TaskID}); err != nil {
		t.Fatal(err)
	}
	turn := waitEnd(t, tr.rt, res.SessionID, res.TurnID)
	if turn.Status != runtype.StatusCompleted || turn.Result != "parent: found: find it" {
		t.Fatalf("after retry_task: %s %q", turn.Status, turn.Result)
	}
	task, err := tr.rt.GetTask(ctx, runtype.Owner{}, res.TaskID)
	if err != nil {
		t.Fatal(err)
	}
	if task.TaskID != res.TaskID || len(task.Attempts) != 2 || task.Attempts[0].Status != string(runtype.StatusFailed) ||
		task.Attempts[0].RunID == "" || task.Attempts[0].RunID == task.Attempts[1].RunID || task.Attempts[1].Status != string(runtype.StatusCompleted) {
		t.Errorf("task %+v, want the same task with its failed attempt kept and a new one completed", task)
	}
	failedRuns := 0
	for _, e := range tr.tb.sessionEvents(t, runtype.Owner{}, res.SessionID) {
		if e.Type == event.TaskAttemptFailed && e.TaskID == res.TaskID && e.RunID == task.Attempts[0].RunID {
			failedRuns++
		}
	}
	if failedRuns != 1 {
		t.Errorf("%d task.attempt.failed for the first run, want 1", failedRuns)
	}
	tree, err := tr.rt.DelegationTree(ctx, runtype.Owner{}, res.TaskID)
	if err != nil || len(tree.Children) != 1 || tree.Children[0].Status != runtype.StatusCompleted {
		t.Errorf("tree after retry %+v, %v; want the one child edge kept", tree, err)
	}
	if child.count() != 1 {
		t.Errorf("the child ran %d times, want once: the retry goes on from the recorded steps", child.count())
	}
}

// TestSubagentHooks: subagent_start runs when a subagent's turn starts
// and subagent_stop (not stop) when it is about to finish, each told the
// subagent's id and agent.
func TestSubagentHooks(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	log := filepath.Join(dir, "hooks.log")
	record := filepath.Join(dir, "record.sh")
	if err := os.WriteFile(record, []byte("#!/bin/sh\ncat >> "+log+"\necho >> "+log+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	tr := startTree(t, agentrt.Config{
		Hooks: []hook.Config{{Point: hook.SubagentStart, Command: record}, {Point: hook.SubagentStop, Command: record}, {Point: hook.Stop, Command: record}},
		Agents: map[string]*agentrt.Agent{
			"triage": {Provider: delegator("lookup", "find it"), Subagents: []agentrt.SubagentUse{{Agent: "lookup", AsTool: "lookup"}}},
			"lookup": {Provider: echo("found: ")},
		},
	})
	res, err := tr.rt.SubmitTurn(context.Background(), &apitype.SubmitTurnParams{Agent: "triage", Input: "go"})
	if err != nil {
		t.Fatal(err)
	}
	if turn := waitEnd(t, tr.rt, res.SessionID, res.TurnID); turn.Status != runtype.StatusCompleted {
		t.Fatalf("parent %s", turn.Status)
	}
	subs, _ := tr.rt.ListSubagents(context.Background(), runtype.Owner{}, res.SessionID)
	b, err := os.ReadFile(log)
	if err != nil || len(subs) != 1 {
		t.Fatal(err, subs)
	}
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var in hook.Input
		if err := json.Unmarshal([]byte(line), &in); err != nil {
			t.Fatalf("hook input %q: %v", line, err)
		}
		got = append(got, fmt.Sprintf("%s %s %s", in.HookEventName, in.AgentType, in.AgentID))
	}
	want := []string{
		"SubagentStart lookup " + subs[0].SubagentID,
		"SubagentStop lookup " + subs[0].SubagentID,
		"Stop triage ",
	}
	if !slices.Equal(got, want) {
		t.Errorf("hooks ran %q, want %q", got, want)
	}
}

// TestSubagentMaxParallel: a parent runs at most max_parallel children of
// one declaration at once; a call past it is refused, the others run.
func TestSubagentMaxParallel(t *testing.T) {
	t.Parallel()
	// The children answer only once the parent's hop is over, so the
	// first two are still working when the third call is decided.
	hold := &heldEcho{prefix: "found: ", release: make(chan struct{})}
	tr := startTree(t, agentrt.Config{Agents: map[string]*agentrt.Agent{
		"triage": {Provider: delegator("lookup", "one", "two", "three"), Subagents: []agentrt.SubagentUse{{Agent: "lookup", AsTool: "lookup", MaxParallel: 2}}},
		"lookup": {Provider: hold},
	}})
	ctx := context.Background()
	res, err := tr.rt.SubmitTurn(ctx, &apitype.SubmitTurnParams{Agent: "triage", Input: "go"})
	if err != nil {
		t.Fatal(err)
	}
	sub, err := tr.rt.Subscribe(ctx, &apitype.SubscribeParams{SessionID: res.SessionID, TurnID: res.TurnID})
	if err != nil {
		t.Fatal(err)
	}
	for {
		e, err := sub.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if e.Type == event.TaskWaiting {
			break
		}
	}
	sub.Close()
	close(hold.release)
	turn := waitEnd(t, tr.rt, res.SessionID, res.TurnID)
	want := "parent: found: one | found: two | delegation refused: 2 lookup subagents of this task are still working, the most it may run at once; call again when one has finished"
	if turn.Status != runtype.StatusCompleted || turn.Result != want {
		t.Errorf("parent %s %q, want %q", turn.Status, turn.Result, want)
	}
	if subs, _ := tr.rt.ListSubagents(context.Background(), runtype.Owner{}, res.SessionID); len(subs) != 2 {
		t.Errorf("%d subagents, want 2", len(subs))
	}
}

// TestReplayOfADelegation: replaying a request that delegated answers
// each delegation with what the recorded child answered: no child runs
// again, and the replay matches the recording.
func TestReplayOfADelegation(t *testing.T) {
	t.Parallel()
	child := echo("found: ")
	cfg := agentrt.Config{Agents: map[string]*agentrt.Agent{
		"triage": {Provider: delegator("lookup", "find order 1042"), Subagents: []agentrt.SubagentUse{{Agent: "lookup", AsTool: "lookup"}}},
		"lookup": {Provider: child},
	}}
	tr := startTree(t, cfg)
	ctx := context.Background()
	res, err := tr.rt.SubmitTurn(ctx, &apitype.SubmitTurnParams{Agent: "triage", Input: "where is it?"})
	if err != nil {
		t.Fatal(err)
	}
	if turn := waitEnd(t, tr.rt, res.SessionID, res.TurnID); turn.Status != runtype.StatusCompleted {
		t.Fatalf("recorded turn %s", turn.Status)
	}
	c, err := tr.rt.ReplayCase(ctx, runtype.Owner{}, res.SessionID, res.TurnID)
	if err != nil {
		t.Fatal(err)
	}
	out, err := agentrt.Replay(ctx, cfg, c, agentrt.ReplayOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d := out.Diff; d.Summary.Differs || d.Summary.StepsCompared != 1 || d.Summary.ReplayedStatus != "completed" {
		t.Errorf("replay diff %s, want the recorded delegation answered the same", mustJSON(t, d))
	}
	if child.count() != 1 {
		t.Errorf("the child ran %d times, want once (the recording)", child.count())
	}
}

// TestCancelParentCancelsChildren: cancelling a parent that waits for
// its child cancels the child too, and the delegation call gets a
// not-executed result; nothing is left running.
func TestCancelParentCancelsChildren(t *testing.T) {
	t.Parallel()
	started := make(chan struct{}, 1)
	slow := &blocker{started: started}
	tr := startTree(t, agentrt.Config{Agents: map[string]*agentrt.Agent{
		"triage": {Provider: delegator("lookup", "take your time"), Subagents: []agentrt.SubagentUse{{Agent: "lookup", AsTool: "lookup"}}},
		"lookup": {Provider: slow},
	}})
	ctx := context.Background()
	res, err := tr.rt.SubmitTurn(ctx, &apitype.SubmitTurnParams{Agent: "triage", Input: "go"})
	if err != nil {
		t.Fatal(err)
	}
	<-started
	if _, err := tr.rt.CancelTask(ctx, &apitype.TaskControlParams{TaskID: res.TaskID}); err != nil {
		t.Fatal(err)
	}
	turn := waitEnd(t, tr.rt, res.SessionID, res.TurnID)
	if turn.Status != runtype.StatusCancelled {
		t.Errorf("parent %s, want cancelled", turn.Status)
	}
	subs, _ := tr.rt.ListSubagents(ctx, runtype.Owner{}, res.SessionID)
	if len(subs) != 1 {
		t.Fatalf("subagents %+v", subs)
	}
	child := waitEnd(t, tr.rt, res.SessionID, subs[0].TurnID)
	if child.Status != runtype.StatusCancelled {
		t.Errorf("child %s, want cancelled with its parent", child.Status)
	}
}

// heldEcho answers like echo once release is closed.
type heldEcho struct {
	prefix  string
	release chan struct{}
}

func (h *heldEcho) Info() model.Info { return model.Info{Kind: "replay", Model: "held"} }

func (h *heldEcho) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	select {
	case <-h.release:
		return &model.Response{Text: h.prefix + lastUser(req)}, nil
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

// blocker's model calls wait until their context ends.
type blocker struct{ started chan struct{} }

func (b *blocker) Info() model.Info { return model.Info{Kind: "replay", Model: "blocker"} }

func (b *blocker) Generate(ctx context.Context, _ *model.Request) (*model.Response, error) {
	select {
	case b.started <- struct{}{}:
	default:
	}
	<-ctx.Done()
	return nil, context.Cause(ctx)
}

// TestReadOnlyChildGrant: a standing approval given to a parent_readonly
// child holds for that child's next call: it is recorded under the
// child's agent, the name its calls are decided by.
func TestReadOnlyChildGrant(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "a.md"), []byte("alpha"), 0o600); err != nil {
		t.Fatal(err)
	}
	reader := &mind{fn: func(req *model.Request, _ int) *model.Response {
		switch res := toolResults(req); len(res) {
		case 0:
			return &model.Response{ToolCalls: []runtype.MessageToolCall{{ID: "r1", Name: "read_file", Arguments: `{"path":"a.md"}`}}}
		case 1:
			return &model.Response{ToolCalls: []runtype.MessageToolCall{{ID: "r2", Name: "read_file", Arguments: `{"path":"a.md"}`}}}
		default:
			return &model.Response{Text: res["r1"] + res["r2"]}
		}
	}}
	tr := startTree(t, agentrt.Config{Policy: kernel(t, askRules), Agents: map[string]*agentrt.Agent{
		"triage": {Provider: delegator("lookup", "read twice"), Workspace: ws,
			Subagents: []agentrt.SubagentUse{{Agent: "lookup", AsTool: "lookup", Workspace: "parent_readonly"}}},
		"lookup": {Provider: reader, Tools: []string{"read_file"}},
	}})
	ctx := context.Background()
	res, err := tr.rt.SubmitTurn(ctx, &apitype.SubmitTurnParams{Agent: "triage", Input: "go"})
	if err != nil {
		t.Fatal(err)
	}
	sub, err := tr.rt.Subscribe(ctx, &apitype.SubscribeParams{SessionID: res.SessionID})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	var act apitype.ActionRead
	for act.ActionID == "" {
		e, err := sub.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if e.Type == event.ActionRequired {
			act.ActionID = e.ActionID
		}
	}
	if _, err := tr.rt.RespondAction(ctx, &apitype.RespondActionParams{ActionID: act.ActionID, Decision: runtype.DecisionApproveForSession}); err != nil {
		t.Fatal(err)
	}
	turn := waitEnd(t, tr.rt, res.SessionID, res.TurnID)
	if turn.Status != runtype.StatusCompleted || turn.Result != "parent: alphaalpha" {
		t.Errorf("parent %s %q, want both reads", turn.Status, turn.Result)
	}
	all, _ := tr.rt.ListActions(ctx, &apitype.ListActionsParams{})
	if len(all) != 1 {
		t.Errorf("%d actions, want 1: the second read is allowed by the grant", len(all))
	}
}

// TestSubagentParentContext: a child starts from its input alone unless
// its declaration says context: parent; then the parent's recent
// conversation precedes its input.
func TestSubagentParentContext(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		context string
		want    bool
	}{{"", false}, {"parent", true}} {
		t.Run(cmp.Or(tt.context, "none"), func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			var seen string
			child := &mind{fn: func(req *model.Request, _ int) *model.Response {
				mu.Lock()
				seen = lastUser(req)
				mu.Unlock()
				return &model.Response{Text: "ok"}
			}}
			tr := startTree(t, agentrt.Config{Agents: map[string]*agentrt.Agent{
				"triage": {Provider: delegator("lookup", "find the order"), Subagents: []agentrt.SubagentUse{{Agent: "lookup", AsTool: "lookup", Context: tt.context}}},
				"lookup": {Provider: child},
			}})
			res, err := tr.rt.SubmitTurn(context.Background(), &apitype.SubmitTurnParams{Agent: "triage", Input: "my order number is 1042"})
			if err != nil {
				t.Fatal(err)
			}
			if turn := waitEnd(t, tr.rt, res.SessionID, res.TurnID); turn.Status != runtype.StatusCompleted {
				t.Fatalf("parent %s", turn.Status)
			}
			mu.Lock()
			defer mu.Unlock()
			if got := strings.Contains(seen, "user: my order number is 1042"); got != tt.want || !strings.HasSuffix(seen, "find the order") {
				t.Errorf("the child was asked %q; parent's conversation in it: %v, want %v", seen, got, tt.want)
			}
		})
	}
}

// TestSubagentWallClock: a delegation tree shares its root's wall clock:
// a child has only what its root request has left of turn_timeout.
func TestSubagentWallClock(t *testing.T) {
	t.Parallel()
	started := make(chan struct{}, 1)
	// The parent's first model call takes most of the tree's 2 seconds.
	slowParent := &slowFirst{mind: delegator("lookup", "take your time"), delay: 1500 * time.Millisecond}
	tr := startTree(t, agentrt.Config{TurnTimeout: 2 * time.Second, Agents: map[string]*agentrt.Agent{
		"triage": {Provider: slowParent, Subagents: []agentrt.SubagentUse{{Agent: "lookup", AsTool: "lookup"}}},
		"lookup": {Provider: &blocker{started: started}},
	}})
	ctx := context.Background()
	res, err := tr.rt.SubmitTurn(ctx, &apitype.SubmitTurnParams{Agent: "triage", Input: "go"})
	if err != nil {
		t.Fatal(err)
	}
	<-started
	subs, _ := tr.rt.ListSubagents(ctx, runtype.Owner{}, res.SessionID)
	if len(subs) != 1 {
		t.Fatalf("subagents %+v", subs)
	}
	child := waitEnd(t, tr.rt, res.SessionID, subs[0].TurnID)
	if child.Status != runtype.StatusTimedOut || child.StatusReason != runtype.ReasonWallClockTimeout {
		t.Errorf("child %s (%s), want timed out by the tree's clock", child.Status, child.StatusReason)
	}
	if ran := child.EndedAt.Sub(child.StartedAt); ran > 1200*time.Millisecond {
		t.Errorf("the child ran %s; its root had about half a second left of its 2", ran)
	}
	if parent := waitEnd(t, tr.rt, res.SessionID, res.TurnID); parent.Status != runtype.StatusTimedOut {
		t.Errorf("parent %s, want timed out too", parent.Status)
	}
}

// slowFirst is a mind whose first model call takes delay (a slow
// model), unless its context ends first.
type slowFirst struct {
	*mind
	delay time.Duration
}

func (s *slowFirst) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	if s.count() == 0 {
		t := time.NewTimer(s.delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
	return s.mind.Generate(ctx, req)
}
