package cli_test

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/runtype"
)

// TestRunDelegationExample runs examples/support/delegation.yaml offline:
// agentrt run follows the triage turn through its park while the lookup
// child works on triage's workspace read-only, and prints the answer
// built on the child's; the delegation tree holds the request and its
// child. A batch of tickets then goes to the ticket agent as a job
// through the control plane (create_job): every item completes with its
// answer, and the job's tree holds the items. Every event is valid.
func TestRunDelegationExample(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.config = filepath.Join(b.dir, "delegation.yaml")
	r := runOK(t, "", "run", "--config", b.config, "--agent", "triage", "--session", "delegation-demo", "Where is order 1042?")
	for _, want := range []string{
		"waiting_resource (waiting_children): the turn is parked until the subagents or jobs it delegated to settle",
		"tool    lookup_order",
		"result: Your order 1042 is on its way with Parcelo",
		"tool    file_tickets",
		"Your three tickets are filed",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("run's output lacks %q:\n%s", want, r.stdout)
		}
	}
	if t.Failed() {
		return
	}

	b.withRuntime(t, func(ctx context.Context, rt *agentrt.Runtime) {
		subs, err := rt.ListSubagents(ctx, runtype.Owner{}, "delegation-demo")
		if err != nil || len(subs) != 1 {
			t.Fatalf("ListSubagents = %+v, %v; want the lookup child", subs, err)
		}
		s := subs[0]
		if s.Agent != "lookup" || s.Name != "lookup_order" || s.Workspace != runtype.WorkspaceParentReadOnly || s.Depth != 1 ||
			s.Status != runtype.StatusCompleted || !strings.HasPrefix(s.Result, "Order 1042: in transit with Parcelo") {
			t.Errorf("subagent = %+v, want lookup on triage's workspace read-only, completed with the order's status", s)
		}
		tree, err := rt.DelegationTree(ctx, runtype.Owner{}, s.ParentTaskID)
		if err != nil {
			t.Fatal(err)
		}
		if tree.Kind != apitype.NodeRequest || tree.Agent != "triage" || tree.Status != runtype.StatusCompleted || len(tree.Children) != 2 ||
			tree.Children[0].Kind != apitype.NodeSubagent || tree.Children[0].Agent != "lookup" || tree.Children[0].TaskID != s.TaskID ||
			tree.Children[1].Kind != apitype.NodeJob || len(tree.Children[1].Children) != 3 {
			t.Errorf("tree = %+v, want the triage request with its lookup child and its job of three items", tree)
		}
		// The child's catalog: read_file, not write_file (not read-only).
		es := sessionEvents(ctx, t, rt, "delegation-demo", 0)
		var catalog []string
		for _, e := range es {
			if e.Type == event.ToolCatalogResolved && e.TaskID == s.TaskID {
				for _, tl := range e.Payload.(*event.ToolCatalogPayload).Tools {
					catalog = append(catalog, tl.Name)
				}
			}
		}
		if !slices.Contains(catalog, "read_file") || slices.Contains(catalog, "write_file") {
			t.Errorf("lookup's tools = %v, want read_file without write_file", catalog)
		}

		// The batch of tickets, as a job of the ticket agent the model
		// started through its job tool.
		snap, err := rt.GetSession(ctx, runtype.Owner{}, "delegation-demo")
		if err != nil || snap.SubagentJobSummary == nil || len(snap.SubagentJobSummary.Jobs) != 1 {
			t.Fatalf("the session's delegation %+v, %v; want one job", snap, err)
		}
		job := snap.SubagentJobSummary.Jobs[0]
		if job.Agent != "ticket" || job.Status != runtype.JobCompleted || job.Completed != 3 || job.ParentTaskID != s.ParentTaskID || job.Concurrency != 1 {
			t.Errorf("job = %+v, want the ticket job under the triage request, completed", job)
		}
		page, err := rt.ListJobItems(ctx, &apitype.ListJobItemsParams{JobID: job.JobID})
		if err != nil {
			t.Fatal(err)
		}
		var results []string
		for _, it := range page.Items {
			if it.Status != runtype.ItemCompleted || it.Attempts != 1 {
				t.Errorf("item %d = %+v, want completed at its first attempt", it.Index, it)
			}
			results = append(results, it.Result)
		}
		if want := []string{"late delivery, priority high", "refund, priority normal", "address change, priority low"}; !slices.Equal(results, want) {
			t.Errorf("item results = %q, want %q", results, want)
		}
		jt, err := rt.DelegationTree(ctx, runtype.Owner{}, job.TaskID)
		if err != nil {
			t.Fatal(err)
		}
		if jt.Kind != apitype.NodeJob || jt.JobID != job.JobID || len(jt.Children) != 3 || jt.Children[0].Kind != apitype.NodeItem || jt.Children[0].Agent != "ticket" {
			t.Errorf("job tree = %+v, want the job with its 3 items", jt)
		}
	})
	b.validateLog(t)
}

// sessionEvents reads a session's events after cursor from.
func sessionEvents(ctx context.Context, t *testing.T, rt *agentrt.Runtime, sessionID string, from int64) []*event.Event {
	t.Helper()
	sub, err := rt.Subscribe(ctx, &apitype.SubscribeParams{SessionID: sessionID, AfterCursor: from})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	var es []*event.Event
	for {
		e, err := sub.TryNext(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if e == nil {
			return es
		}
		es = append(es, e)
	}
}
