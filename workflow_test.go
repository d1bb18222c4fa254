package agentrt_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/internal/spectest"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

// startWorkflow starts a run of name with input, failing the test on an
// error.
func startWorkflow(t *testing.T, rt *agentrt.Runtime, name string, input any) *apitype.WorkflowRead {
	t.Helper()
	raw, err := json.Marshal(input)
	if err != nil {
		t.Fatal(err)
	}
	r, err := rt.StartWorkflow(context.Background(), &apitype.StartWorkflowParams{Workflow: name, Input: raw})
	if err != nil {
		t.Fatalf("StartWorkflow(%s): %v", name, err)
	}
	return r
}

// awaitWorkflow reads the run's session's events, each checked against
// the standard's schema, until until says yes to one, and returns the
// run as it is then.
func awaitWorkflow(t *testing.T, rt *agentrt.Runtime, r *apitype.WorkflowRead, what string, until func(*event.Event) bool) *apitype.WorkflowRead {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sub, err := rt.Subscribe(ctx, &apitype.SubscribeParams{SessionID: r.SessionID})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	var seen []string
	for {
		e, err := sub.Next(ctx)
		if err != nil {
			got, _ := rt.GetWorkflow(context.Background(), &apitype.WorkflowParams{RunID: r.RunID})
			t.Fatalf("waiting for %s: %v; run %+v; events: %s", what, err, got, strings.Join(seen, " "))
		}
		raw, err := e.JSON()
		if err != nil {
			t.Fatal(err)
		}
		spectest.Event(t, raw)
		seen = append(seen, fmt.Sprintf("%s(%s)", e.Type, e.JobItemID))
		if until(e) {
			break
		}
	}
	got, err := rt.GetWorkflow(context.Background(), &apitype.WorkflowParams{RunID: r.RunID})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// ended says yes to the event that ends the run.
func ended(runID string) func(*event.Event) bool {
	return func(e *event.Event) bool {
		return e.JobID == runID && (e.Type == event.JobCompleted || e.Type == event.JobFailed || e.Type == event.JobCancelled)
	}
}

// steps maps a run's steps' IDs to their statuses.
func steps(r *apitype.WorkflowRead) map[string]runtype.StepStatus {
	out := map[string]runtype.StepStatus{}
	for _, s := range r.Steps {
		out[s.StepID] = s.Status
	}
	return out
}

func step(r *apitype.WorkflowRead, id string) apitype.WorkflowStepRead {
	for _, s := range r.Steps {
		if s.StepID == id {
			return s
		}
	}
	return apitype.WorkflowStepRead{}
}

func wantSteps(t *testing.T, r *apitype.WorkflowRead, want map[string]runtype.StepStatus) {
	t.Helper()
	got := steps(r)
	for id, w := range want {
		if got[id] != w {
			t.Errorf("step %s is %s (%s), want %s; steps %v", id, got[id], step(r, id).Reason, w, got)
		}
	}
}

// TestWorkflowBranch: a CEL condition over a step's JSON output picks a
// branch: one runs with the output in its input, the other is skipped.
func TestWorkflowBranch(t *testing.T) {
	t.Parallel()
	classify := &mind{fn: func(req *model.Request, _ int) *model.Response {
		return &model.Response{Text: `{"urgent": ` + fmt.Sprint(strings.Contains(lastUser(req), "now")) + `}`}
	}}
	refund, reply := echo("refunded: "), echo("replied: ")
	tr := startTree(t, agentrt.Config{
		Agents: map[string]*agentrt.Agent{"classify": {Provider: classify}, "refund": {Provider: refund}, "reply": {Provider: reply}},
		Workflows: map[string]*agentrt.Workflow{"triage": {Steps: []agentrt.WorkflowStep{
			{ID: "classify", Agent: "classify", Input: "classify: {{.Input.text}}"},
			{ID: "urgent", Agent: "refund", Needs: []string{"classify"}, When: `steps.classify.json.urgent`,
				Input: "order {{.Input.order}} ({{.Steps.classify.Output}})"},
			{ID: "normal", Agent: "reply", Needs: []string{"classify"}, When: `!steps["classify"].json.urgent`, Input: "{{.Input.text}}"},
		}}},
	})
	r := startWorkflow(t, tr.rt, "triage", map[string]any{"text": "refund me now", "order": 1042})
	got := awaitWorkflow(t, tr.rt, r, "the run's end", ended(r.RunID))
	if got.Status != runtype.WorkflowCompleted {
		t.Fatalf("run = %s, want completed; steps %+v", got.Status, got.Steps)
	}
	wantSteps(t, got, map[string]runtype.StepStatus{"classify": runtype.StepCompleted, "urgent": runtype.StepCompleted, "normal": runtype.StepSkipped})
	if want := `refunded: order 1042 ({"urgent": true})`; step(got, "urgent").OutputPreview != want {
		t.Errorf("urgent's output = %q, want %q", step(got, "urgent").OutputPreview, want)
	}
	if step(got, "normal").Reason != "its condition is false" {
		t.Errorf("normal skipped for %q", step(got, "normal").Reason)
	}
	if reply.count() != 0 || refund.count() != 1 || classify.count() != 1 {
		t.Errorf("model calls: classify %d, refund %d, reply %d; want 1, 1, 0", classify.count(), refund.count(), reply.count())
	}
}

// TestWorkflowJoins: join all waits for every need and is skipped when a
// need was skipped (GitHub Actions' needs); join any runs once one need
// completed; n_of once N did, and is skipped when N cannot complete.
func TestWorkflowJoins(t *testing.T) {
	t.Parallel()
	work := echo("done: ")
	tr := startTree(t, agentrt.Config{
		Agents: map[string]*agentrt.Agent{"w": {Provider: work}},
		Workflows: map[string]*agentrt.Workflow{"joins": {Steps: []agentrt.WorkflowStep{
			{ID: "a", Agent: "w", Input: "a"},
			{ID: "b", Agent: "w", Input: "b"},
			{ID: "never", Agent: "w", Input: "never", When: `input.go == "no"`},
			{ID: "both", Agent: "w", Needs: []string{"a", "b"}, Input: "{{.Steps.a.Output}} + {{.Steps.b.Output}}"},
			{ID: "blocked", Agent: "w", Needs: []string{"a", "never"}, Input: "blocked"},
			{ID: "either", Agent: "w", Needs: []string{"never", "b"}, Join: agentrt.JoinAny, Input: "either"},
			{ID: "two", Agent: "w", Needs: []string{"a", "never", "b"}, Join: agentrt.JoinNOf, N: 2, Input: "two"},
			{ID: "three", Agent: "w", Needs: []string{"a", "never", "b"}, Join: agentrt.JoinNOf, N: 3, Input: "three"},
			{ID: "none", Agent: "w", Needs: []string{"never"}, Join: agentrt.JoinAny, Input: "none"},
		}}},
	})
	r := startWorkflow(t, tr.rt, "joins", map[string]any{"go": "yes"})
	got := awaitWorkflow(t, tr.rt, r, "the run's end", ended(r.RunID))
	if got.Status != runtype.WorkflowCompleted {
		t.Fatalf("run = %s, want completed; steps %+v", got.Status, got.Steps)
	}
	wantSteps(t, got, map[string]runtype.StepStatus{
		"a": runtype.StepCompleted, "b": runtype.StepCompleted, "never": runtype.StepSkipped, "both": runtype.StepCompleted,
		"blocked": runtype.StepSkipped, "either": runtype.StepCompleted, "two": runtype.StepCompleted, "three": runtype.StepSkipped,
		"none": runtype.StepSkipped,
	})
	if want := "done: done: a + done: b"; step(got, "both").OutputPreview != want {
		t.Errorf("both's output = %q, want %q", step(got, "both").OutputPreview, want)
	}
	if n := work.count(); n != 5 {
		t.Errorf("model calls = %d, want 5 (a, b, both, either, two)", n)
	}
}

// TestWorkflowTimerSurvivesRestart: a timer is a due time in the store.
// The runtime that started it stops; another on the same data directory
// finds the run due once its clock passes the timer, and goes on.
func TestWorkflowTimerSurvivesRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	clock := &fakeClock{now: time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)}
	follow := echo("followed up: ")
	cfg := func() agentrt.Config {
		return agentrt.Config{DataDir: dir, Now: clock.Now, PollInterval: time.Hour,
			Agents: map[string]*agentrt.Agent{"w": {Provider: follow}},
			Workflows: map[string]*agentrt.Workflow{"later": {Steps: []agentrt.WorkflowStep{
				{ID: "pause", Wait: 2 * time.Hour},
				{ID: "follow", Agent: "w", Needs: []string{"pause"}, Input: "ticket {{.Input.ticket}}"},
			}}},
		}
	}
	a, err := agentrt.New(cfg())
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	r := startWorkflow(t, a, "later", map[string]any{"ticket": 7})
	got := awaitWorkflow(t, a, r, "the timer", func(e *event.Event) bool {
		return e.Type == event.TaskWaiting && e.JobID == r.RunID
	})
	pause := step(got, "pause")
	if pause.Status != runtype.StepWaiting || pause.DueAt == nil || !pause.DueAt.Equal(clock.Now().Add(2*time.Hour)) {
		t.Fatalf("pause = %+v, want waiting until %s", pause, clock.Now().Add(2*time.Hour))
	}
	if got.Status != runtype.WorkflowWaiting {
		t.Errorf("run = %s, want waiting", got.Status)
	}
	if err := a.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}

	b := startTree(t, cfg()).rt
	clock.Advance(time.Hour)
	agentrt.KickWorkers(b)
	if got, err := b.GetWorkflow(context.Background(), &apitype.WorkflowParams{RunID: r.RunID}); err != nil || step(got, "pause").Status != runtype.StepWaiting {
		t.Fatalf("an hour early: %+v, %v; want the timer still waiting", got, err)
	}
	clock.Advance(time.Hour + time.Second)
	agentrt.KickWorkers(b)
	got = awaitWorkflow(t, b, r, "the run's end", ended(r.RunID))
	if got.Status != runtype.WorkflowCompleted {
		t.Fatalf("run = %s, want completed; steps %+v", got.Status, got.Steps)
	}
	wantSteps(t, got, map[string]runtype.StepStatus{"pause": runtype.StepCompleted, "follow": runtype.StepCompleted})
	if follow.count() != 1 || step(got, "follow").OutputPreview != "followed up: ticket 7" {
		t.Errorf("follow ran %d times with output %q", follow.count(), step(got, "follow").OutputPreview)
	}
}

// TestWorkflowHumanStep: a human step asks through an action; its answer
// (approve or deny, and a message) is its output, and conditions route
// on it. A denial does not fail the run.
func TestWorkflowHumanStep(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		decision string
		ran      string
		skipped  string
	}{
		{runtype.DecisionApprove, "refund", "apologize"},
		{runtype.DecisionDeny, "apologize", "refund"},
	} {
		t.Run(tc.decision, func(t *testing.T) {
			t.Parallel()
			refund, apologize := echo("refund: "), echo("sorry: ")
			tr := startTree(t, agentrt.Config{
				Agents: map[string]*agentrt.Agent{"refund": {Provider: refund}, "apologize": {Provider: apologize}},
				Workflows: map[string]*agentrt.Workflow{"approval": {
					InputSchema: json.RawMessage(`{"type":"object","properties":{"order":{"type":"integer"}},"required":["order"]}`),
					Steps: []agentrt.WorkflowStep{
						{ID: "ask", Human: "Refund order {{.Input.order}}?"},
						{ID: "refund", Agent: "refund", Needs: []string{"ask"}, When: `steps.ask.json.decision == "approve"`, Input: "order {{.Input.order}}"},
						{ID: "apologize", Agent: "apologize", Needs: []string{"ask"}, When: `steps.ask.json.decision == "deny"`,
							Input: "{{.Steps.ask.JSON.message}}"},
					}}},
			})
			r := startWorkflow(t, tr.rt, "approval", map[string]any{"order": 1042})
			var actionID string
			got := awaitWorkflow(t, tr.rt, r, "the question", func(e *event.Event) bool {
				if e.Type == event.ActionRequired && e.JobID == r.RunID {
					actionID = e.ActionID
					if p := e.Payload.(*event.ActionPayload); p.Prompt != "Refund order 1042?" {
						t.Errorf("prompt = %q", p.Prompt)
					}
				}
				return e.Type == event.TaskWaiting && e.JobID == r.RunID
			})
			if ask := step(got, "ask"); ask.Status != runtype.StepWaiting || ask.ActionID != actionID || actionID == "" {
				t.Fatalf("ask = %+v, want waiting on action %q", ask, actionID)
			}
			res, err := tr.rt.RespondAction(context.Background(), &apitype.RespondActionParams{ActionID: actionID, Decision: tc.decision, Message: "customer is a regular"})
			if err != nil || !res.Resumed {
				t.Fatalf("RespondAction = %+v, %v", res, err)
			}
			got = awaitWorkflow(t, tr.rt, r, "the run's end", ended(r.RunID))
			if got.Status != runtype.WorkflowCompleted {
				t.Fatalf("run = %s, want completed; steps %+v", got.Status, got.Steps)
			}
			wantSteps(t, got, map[string]runtype.StepStatus{"ask": runtype.StepCompleted, tc.ran: runtype.StepCompleted, tc.skipped: runtype.StepSkipped})
			var answer map[string]string
			if err := json.Unmarshal([]byte(step(got, "ask").OutputPreview), &answer); err != nil || answer["decision"] != tc.decision || answer["message"] != "customer is a regular" {
				t.Errorf("ask's output = %q, want the answer", step(got, "ask").OutputPreview)
			}
			if tc.decision == runtype.DecisionDeny && step(got, "apologize").OutputPreview != "sorry: customer is a regular" {
				t.Errorf("apologize's output = %q", step(got, "apologize").OutputPreview)
			}
			if _, err := tr.rt.RespondAction(context.Background(), &apitype.RespondActionParams{ActionID: actionID, Decision: tc.decision}); !errors.Is(err, apitype.ErrConflict) {
				t.Errorf("answering again: %v, want a conflict", err)
			}
		})
	}
}

// stall is a provider whose calls block until their context ends, after
// saying so on started.
type stall struct{ started chan struct{} }

func (s *stall) Info() model.Info { return model.Info{Kind: "replay", Model: "stall"} }
func (s *stall) Generate(ctx context.Context, _ *model.Request) (*model.Response, error) {
	select {
	case s.started <- struct{}{}:
	default:
	}
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestWorkflowCrashMidGraph: a runtime is abandoned (no graceful stop:
// its leases lapse) while the second step of a run works; another runtime
// on the same data directory takes the run up. The step that completed
// is never started again; the run completes.
func TestWorkflowCrashMidGraph(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	first := echo("first: ")
	cfg := func(second model.Provider) agentrt.Config {
		return agentrt.Config{DataDir: dir, LeaseTTL: 200 * time.Millisecond,
			Agents: map[string]*agentrt.Agent{"first": {Provider: first}, "second": {Provider: second}},
			Workflows: map[string]*agentrt.Workflow{"pipeline": {Steps: []agentrt.WorkflowStep{
				{ID: "one", Agent: "first", Input: "one"},
				{ID: "two", Agent: "second", Needs: []string{"one"}, Input: "{{.Steps.one.Output}}"},
			}}},
		}
	}
	stalled := &stall{started: make(chan struct{}, 1)}
	a, err := agentrt.New(cfg(stalled))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	r := startWorkflow(t, a, "pipeline", map[string]any{})
	select {
	case <-stalled.started:
	case <-time.After(time.Minute):
		t.Fatal("step two never started")
	}
	before, err := a.GetWorkflow(context.Background(), &apitype.WorkflowParams{RunID: r.RunID})
	if err != nil {
		t.Fatal(err)
	}
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	_ = a.Stop(gone) // abandoned: nothing more is written

	second := echo("second: ")
	b := startTree(t, cfg(second)).rt
	got := awaitWorkflow(t, b, r, "the run's end", ended(r.RunID))
	if got.Status != runtype.WorkflowCompleted {
		t.Fatalf("run = %s, want completed; steps %+v", got.Status, got.Steps)
	}
	if first.count() != 1 {
		t.Errorf("step one's model was called %d times, want once", first.count())
	}
	if second.count() != 1 || step(got, "two").OutputPreview != "second: first: one" {
		t.Errorf("step two: %d calls, output %q", second.count(), step(got, "two").OutputPreview)
	}
	if step(got, "one").TaskID != step(before, "one").TaskID || step(got, "two").TaskID != step(before, "two").TaskID {
		t.Errorf("step tasks changed across the crash: before %+v, after %+v", before.Steps, got.Steps)
	}
}

// TestWorkflowFailResumeCancel: a failed agent step fails the run (the
// rest is skipped); resume_workflow runs the failed step again and never
// the completed ones; cancel_workflow withdraws a pending question.
func TestWorkflowFailResumeCancel(t *testing.T) {
	t.Parallel()
	flaky := &mind{fn: func(req *model.Request, n int) *model.Response {
		if n == 1 {
			return &model.Response{Text: "", FinishReason: "error"}
		}
		return &model.Response{Text: "ok " + lastUser(req)}
	}}
	ok := echo("ok: ")
	tr := startTree(t, agentrt.Config{
		Agents: map[string]*agentrt.Agent{"ok": {Provider: ok}, "flaky": {Provider: &failOnce{next: flaky}}},
		Workflows: map[string]*agentrt.Workflow{
			"fragile": {Steps: []agentrt.WorkflowStep{
				{ID: "prep", Agent: "ok", Input: "prep"},
				{ID: "risky", Agent: "flaky", Needs: []string{"prep"}, Input: "risky"},
				{ID: "after", Agent: "ok", Needs: []string{"risky"}, Input: "after"},
			}},
			"asks": {Steps: []agentrt.WorkflowStep{{ID: "ask", Human: "go?"}, {ID: "then", Agent: "ok", Needs: []string{"ask"}}}},
		},
	})
	ctx := context.Background()
	r := startWorkflow(t, tr.rt, "fragile", nil)
	got := awaitWorkflow(t, tr.rt, r, "the run's failure", ended(r.RunID))
	if got.Status != runtype.WorkflowFailed {
		t.Fatalf("run = %s, want failed; steps %+v", got.Status, got.Steps)
	}
	wantSteps(t, got, map[string]runtype.StepStatus{"prep": runtype.StepCompleted, "risky": runtype.StepFailed, "after": runtype.StepSkipped})
	if _, err := tr.rt.ResumeWorkflow(ctx, &apitype.WorkflowParams{RunID: r.RunID}); err != nil {
		t.Fatal(err)
	}
	got = awaitWorkflow(t, tr.rt, r, "the resumed run's end", func(e *event.Event) bool {
		return ended(r.RunID)(e) && e.Type == event.JobCompleted
	})
	wantSteps(t, got, map[string]runtype.StepStatus{"prep": runtype.StepCompleted, "risky": runtype.StepCompleted, "after": runtype.StepCompleted})
	if ok.count() != 2 {
		t.Errorf("ok was called %d times, want 2 (prep once, after once)", ok.count())
	}
	if _, err := tr.rt.ResumeWorkflow(ctx, &apitype.WorkflowParams{RunID: r.RunID}); !errors.Is(err, apitype.ErrConflict) {
		t.Errorf("resuming a completed run: %v, want a conflict", err)
	}

	q := startWorkflow(t, tr.rt, "asks", nil)
	got = awaitWorkflow(t, tr.rt, q, "the question", func(e *event.Event) bool { return e.Type == event.ActionRequired && e.JobID == q.RunID })
	if got.Status != runtype.WorkflowWaiting && got.Status != runtype.WorkflowRunning {
		t.Errorf("a run asking a question is %s", got.Status)
	}
	if _, err := tr.rt.CancelWorkflow(ctx, &apitype.WorkflowParams{RunID: q.RunID}); err != nil {
		t.Fatal(err)
	}
	got = awaitWorkflow(t, tr.rt, q, "the cancel", ended(q.RunID))
	if got.Status != runtype.WorkflowCancelled {
		t.Fatalf("run = %s, want cancelled", got.Status)
	}
	wantSteps(t, got, map[string]runtype.StepStatus{"ask": runtype.StepCancelled, "then": runtype.StepSkipped})
	acts, err := tr.rt.ListActions(ctx, &apitype.ListActionsParams{SessionID: q.SessionID, Status: runtype.ActionPending})
	if err != nil || len(acts) != 0 {
		t.Errorf("pending actions after the cancel: %+v, %v", acts, err)
	}
}

// failOnce fails its first call with a model error that is not retried,
// then answers as next does.
type failOnce struct {
	next  model.Provider
	calls int
}

func (f *failOnce) Info() model.Info { return model.Info{Kind: "replay", Model: "failonce"} }
func (f *failOnce) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	f.calls++
	if f.calls == 1 {
		return nil, &model.Error{Kind: model.ErrInvalidRequest, Message: "bad request"}
	}
	return f.next.Generate(ctx, req)
}

// TestWorkflowBadDefinitions: a definition that cannot run is refused
// when the runtime is made, with an error that says where and why.
func TestWorkflowBadDefinitions(t *testing.T) {
	t.Parallel()
	agent := func(id string, needs ...string) agentrt.WorkflowStep {
		return agentrt.WorkflowStep{ID: id, Agent: "w", Needs: needs}
	}
	for _, tc := range []struct {
		name  string
		steps []agentrt.WorkflowStep
		want  string
	}{
		{"no steps", nil, `workflow "wf": has no steps`},
		{"cycle", []agentrt.WorkflowStep{agent("a", "c"), agent("b", "a"), agent("c", "b")}, "steps form a cycle: a → c → b → a"},
		{"unknown need", []agentrt.WorkflowStep{agent("a", "zz")}, `step "a" needs "zz", which is not a step`},
		{"self need", []agentrt.WorkflowStep{agent("a", "a")}, `step "a" needs itself`},
		{"unknown agent", []agentrt.WorkflowStep{{ID: "a", Agent: "ghost"}}, `step "a": unknown agent "ghost"`},
		{"two kinds", []agentrt.WorkflowStep{{ID: "a", Agent: "w", Wait: time.Minute}}, "exactly one of"},
		{"no kind", []agentrt.WorkflowStep{{ID: "a"}}, "exactly one of"},
		{"bad cel", []agentrt.WorkflowStep{{ID: "a", Agent: "w", When: "steps.b.status =="}}, `step "a": when:`},
		{"non-bool cel", []agentrt.WorkflowStep{{ID: "a", Agent: "w", When: `"yes"`}}, "must be a bool expression"},
		{"bad template", []agentrt.WorkflowStep{{ID: "a", Agent: "w", Input: "{{.Input.x"}}, `step "a": template:`},
		{"duplicate id", []agentrt.WorkflowStep{agent("a"), agent("a")}, `two steps have the id "a"`},
		{"bad id", []agentrt.WorkflowStep{agent("a-b")}, `id "a-b" must start with a letter`},
		{"n_of range", []agentrt.WorkflowStep{agent("a"), {ID: "b", Agent: "w", Needs: []string{"a"}, Join: "n_of", N: 2}}, "n 2 is out of range"},
		{"unknown join", []agentrt.WorkflowStep{agent("a"), {ID: "b", Agent: "w", Needs: []string{"a"}, Join: "most"}}, `unknown join "most"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := agentrt.New(agentrt.Config{Store: nil, DataDir: t.TempDir(),
				Agents:    map[string]*agentrt.Agent{"w": {Provider: echo("")}},
				Workflows: map[string]*agentrt.Workflow{"wf": {Steps: tc.steps}}})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestWorkflowReads: runs are read through the control plane by their
// tenant only; a bad input and an unknown workflow are refused.
func TestWorkflowReads(t *testing.T) {
	t.Parallel()
	tr := startTree(t, agentrt.Config{
		Agents: map[string]*agentrt.Agent{"w": {Provider: echo("")}},
		Workflows: map[string]*agentrt.Workflow{"one": {
			InputSchema: json.RawMessage(`{"type":"object","required":["n"]}`),
			Steps:       []agentrt.WorkflowStep{{ID: "a", Agent: "w", Input: "{{.Input.n}}"}},
		}},
	})
	ctx := context.Background()
	acme, other := runtype.Owner{TenantID: "acme", PrincipalID: "ann"}, runtype.Owner{TenantID: "other", PrincipalID: "bob"}
	r, err := tr.rt.StartWorkflow(ctx, &apitype.StartWorkflowParams{Owner: acme, Workflow: "one", Input: json.RawMessage(`{"n":1}`), IdempotencyKey: "k1"})
	if err != nil {
		t.Fatal(err)
	}
	again, err := tr.rt.StartWorkflow(ctx, &apitype.StartWorkflowParams{Owner: acme, Workflow: "one", Input: json.RawMessage(`{"n":1}`), IdempotencyKey: "k1"})
	if err != nil || again.RunID != r.RunID {
		t.Errorf("start again with the key = %+v, %v; want run %s", again, err, r.RunID)
	}
	if _, err := tr.rt.GetWorkflow(ctx, &apitype.WorkflowParams{Owner: other, RunID: r.RunID}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("another tenant's read: %v, want not found", err)
	}
	if page, err := tr.rt.ListWorkflows(ctx, &apitype.ListWorkflowsParams{Owner: other}); err != nil || len(page.Runs) != 0 {
		t.Errorf("another tenant's list = %+v, %v; want none", page, err)
	}
	if page, err := tr.rt.ListWorkflows(ctx, &apitype.ListWorkflowsParams{Owner: acme, Workflow: "one"}); err != nil || len(page.Runs) != 1 || page.Runs[0].RunID != r.RunID {
		t.Errorf("the tenant's list = %+v, %v; want run %s", page, err, r.RunID)
	}
	if _, err := tr.rt.CancelWorkflow(ctx, &apitype.WorkflowParams{Owner: other, RunID: r.RunID}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("another tenant's cancel: %v, want not found", err)
	}
	for _, in := range []string{`{"m":1}`, `[1]`, `nope`} {
		if _, err := tr.rt.StartWorkflow(ctx, &apitype.StartWorkflowParams{Workflow: "one", Input: json.RawMessage(in)}); !isInvalid(err) {
			t.Errorf("input %s: %v, want invalid", in, err)
		}
	}
	if _, err := tr.rt.StartWorkflow(ctx, &apitype.StartWorkflowParams{Workflow: "nope"}); !isInvalid(err) {
		t.Errorf("unknown workflow: %v, want invalid", err)
	}
}

func isInvalid(err error) bool {
	var inv *apitype.InvalidError
	return errors.As(err, &inv)
}
