package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/runtype"
)

// treeBackend answers what requests show and the overview read of a
// request that delegated: the request, its events, its task and the
// delegation tree under it.
type treeBackend struct {
	backend // nothing else is called
	req     apitype.RequestSummary
	taskID  string
	tree    *apitype.DelegationNode
	// delegated: the request's events hold task.delegated.
	delegated bool
	asked     []string // the tasks whose tree was read
}

func (b *treeBackend) Where() string { return "test" }

func (b *treeBackend) GetRequest(context.Context, runtype.Owner, string) (*apitype.RequestSummary, error) {
	return &b.req, nil
}

func (b *treeBackend) Events(context.Context, *apitype.SubscribeParams) (eventStream, error) {
	evs := []*event.Event{
		{Type: event.TurnSubmitted, TurnID: b.req.TurnID, SessionID: b.req.SessionID},
		{Type: event.TaskQueued, TurnID: b.req.TurnID, SessionID: b.req.SessionID, TaskID: b.taskID},
	}
	if b.delegated {
		evs = append(evs, &event.Event{Type: event.TaskDelegated, TurnID: b.req.TurnID, SessionID: b.req.SessionID, TaskID: b.taskID})
	}
	return &sliceStream{evs: evs}, nil
}

func (b *treeBackend) DelegationTree(_ context.Context, _ runtype.Owner, taskID string) (*apitype.DelegationNode, error) {
	b.asked = append(b.asked, taskID)
	if taskID != b.taskID {
		return nil, apitype.ErrNotFound
	}
	return b.tree, nil
}

func (b *treeBackend) ListTasks(_ context.Context, p *apitype.ListTasksParams) (*apitype.TaskPage, error) {
	return &apitype.TaskPage{Tasks: []apitype.TaskRead{
		{TaskID: "task_other", TurnID: "turn_other", SessionID: p.SessionID},
		{TaskID: b.taskID, TurnID: b.req.TurnID, SessionID: p.SessionID},
	}}, nil
}

// parkedTree is a request parked on a subagent, which itself waits for a
// lookup, and on a job with two open items of three.
func parkedTree() *apitype.DelegationNode {
	return &apitype.DelegationNode{
		TaskID: "task_root", Kind: apitype.NodeRequest, Agent: "triage", Status: runtype.StatusWaitingResource, Reason: runtype.ReasonWaitingChildren,
		Usage: runtype.Usage{InputTokens: 120, OutputTokens: 40},
		Children: []apitype.DelegationNode{
			{TaskID: "task_done", Kind: apitype.NodeSubagent, Agent: "lookup", Depth: 1, Status: runtype.StatusCompleted, Usage: runtype.Usage{InputTokens: 30, OutputTokens: 10, CostUSD: 0.0021}},
			{TaskID: "task_mid", Kind: apitype.NodeSubagent, Agent: "researcher", Depth: 1, Status: runtype.StatusWaitingResource, Reason: runtype.ReasonWaitingChildren, PendingActions: 1,
				Children: []apitype.DelegationNode{{TaskID: "task_leaf", Kind: apitype.NodeSubagent, Agent: "fetcher", Depth: 2, Status: runtype.StatusRunning}}},
			{TaskID: "task_job", Kind: apitype.NodeJob, Agent: "tagger", Depth: 1, Status: runtype.StatusWaitingResource, Reason: runtype.ReasonWaitingChildren,
				Children: []apitype.DelegationNode{
					{TaskID: "task_i0", Kind: apitype.NodeItem, Agent: "tagger", Depth: 2, Status: runtype.StatusCompleted},
					{TaskID: "task_i1", Kind: apitype.NodeItem, Agent: "tagger", Depth: 2, Status: runtype.StatusRunning},
					{TaskID: "task_i2", Kind: apitype.NodeItem, Agent: "tagger", Depth: 2, Status: runtype.StatusQueued},
				}},
		},
	}
}

// TestRequestShowTree: requests show prints the delegation tree of the
// request's task under its timeline, each node indented under its
// parent with kind, agent, status, depth, pending approvals and usage;
// a request without children prints no tree.
func TestRequestShowTree(t *testing.T) {
	t.Parallel()
	b := &treeBackend{
		req:    apitype.RequestSummary{TurnID: "turn_1", SessionID: "ses_1", Agent: "triage", Status: runtype.StatusWaitingResource, StatusReason: runtype.ReasonWaitingChildren},
		taskID: "task_root", tree: parkedTree(), delegated: true,
	}
	var out bytes.Buffer
	if err := showRequest(t.Context(), &out, b, "turn_1", false, timelineOptions{}); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	_, tree, ok := strings.Cut(got, "delegation  7 delegated tasks\n")
	if !ok {
		t.Fatalf("no delegation tree after the timeline:\n%s", got)
	}
	want := `  NODE          AGENT       STATUS                             DEPTH  PENDING  USAGE                            TASK
  request       triage      waiting_resource waiting_children  0      0        120 in / 40 out tokens           task_root
    subagent    lookup      completed                          1      0        30 in / 10 out tokens · $0.0021  task_done
    subagent    researcher  waiting_resource waiting_children  1      1        0 in / 0 out tokens              task_mid
      subagent  fetcher     running                            2      0        0 in / 0 out tokens              task_leaf
    job         tagger      waiting_resource waiting_children  1      0        0 in / 0 out tokens              task_job
      item      tagger      completed                          2      0        0 in / 0 out tokens              task_i0
      item      tagger      running                            2      0        0 in / 0 out tokens              task_i1
      item      tagger      queued                             2      0        0 in / 0 out tokens              task_i2
`
	if d := cmp.Diff(want, tree); d != "" {
		t.Errorf("tree (-want +got):\n%s", d)
	}
	if !strings.Contains(got, "request turn_1") || strings.Index(got, "request turn_1") > strings.Index(got, "delegation") {
		t.Errorf("the timeline does not come first:\n%s", got)
	}

	// A tree without children prints nothing; a request that delegated
	// nothing is not asked for its tree.
	b.tree = &apitype.DelegationNode{TaskID: "task_root", Kind: apitype.NodeRequest, Status: runtype.StatusCompleted}
	for _, delegated := range []bool{true, false} {
		b.delegated = delegated
		out.Reset()
		if err := showRequest(t.Context(), &out, b, "turn_1", false, timelineOptions{}); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(out.String(), "delegation") {
			t.Errorf("a request without children shows a tree:\n%s", out.String())
		}
	}
	if d := cmp.Diff([]string{"task_root", "task_root"}, b.asked); d != "" {
		t.Errorf("trees read (-want +got):\n%s", d)
	}
}

// TestOverviewNamesDelegates: a request parked waiting_children names
// the delegated agents it waits for: the open tasks deepest down its
// tree (the fetcher its researcher waits for, not the researcher), by
// agent, and the job's open items counted; settled children are left
// out.
func TestOverviewNamesDelegates(t *testing.T) {
	t.Parallel()
	want := []delegateOverview{{Agent: "fetcher", Kind: apitype.NodeSubagent, Tasks: 1}, {Agent: "tagger", Kind: apitype.NodeItem, Tasks: 2}}
	if d := cmp.Diff(want, waitingFor(parkedTree())); d != "" {
		t.Errorf("waitingFor (-want +got):\n%s", d)
	}
	if got := delegatesText(want); got != "fetcher, tagger ×2 items" {
		t.Errorf("delegatesText = %q", got)
	}

	b := &treeBackend{
		req:    apitype.RequestSummary{TurnID: "turn_1", SessionID: "ses_1", Agent: "triage", Status: runtype.StatusWaitingResource, StatusReason: runtype.ReasonWaitingChildren},
		taskID: "task_root", tree: parkedTree(),
	}
	ov := &overview{GeneratedAt: time.Now()}
	ro, err := delegatesOf(t.Context(), b, &b.req)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, ro); d != "" {
		t.Errorf("delegatesOf (-want +got):\n%s", d)
	}
	ov.Attention = []requestOverview{{RequestID: "turn_1", SessionID: "ses_1", Agent: "triage", Status: b.req.Status, StatusReason: string(b.req.StatusReason), WaitingFor: ro}}
	var out bytes.Buffer
	printOverview(&out, ov, style{})
	if !strings.Contains(out.String(), "waiting_children: fetcher, tagger ×2 items") {
		t.Errorf("the overview does not name the delegates:\n%s", out.String())
	}
}
