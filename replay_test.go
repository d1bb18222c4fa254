package agentrt_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/configure"
	"github.com/agentrt/agentrt/internal/spectest"
	"github.com/agentrt/agentrt/replaycase"
	"github.com/agentrt/agentrt/runtype"
)

// replayRules are the policy of the recorded run: lookups are allowed by
// rule "lookups", tickets asked about by rule "tickets".
const replayRules = `
tier: workspace
rules:
  - {id: lookups, tools: [lookup], decision: allow, reason_code: lookup_ok}
  - {id: tickets, tools: [open_ticket], decision: ask, reason_code: ticket_ask}
  - {id: finish, tools: [complete_task], decision: allow, reason_code: completion}
`

// replayFiles is a configuration whose agent looks an order up, opens a
// ticket (which asks) and completes. The tools are real scripts: lookup
// prints its input, open_ticket writes a file into the workspace.
var replayFiles = map[string]string{
	"agentrt.yaml": `
data_dir: data
policy:
  rules: [rules.yaml]
agents:
  a:
    model: {provider: replay, script: a.replay.yaml}
    tools: [lookup, open_ticket]
    require_completion: true
    workspace: ws
tools:
  lookup:
    description: Look an order up.
    input_schema: {type: object, properties: {order_id: {type: string}}}
    command: [./lookup.sh]
    annotations: {read_only: true}
  open_ticket:
    description: Open a ticket.
    input_schema: {type: object, properties: {note: {type: string}}}
    command: [./open_ticket.sh]
`,
	"rules.yaml": replayRules,
	"a.replay.yaml": `
responses:
  - text: "Looking it up."
    tool_calls: [{name: lookup, input: {order_id: "10\"42 é"}}]
  - tool_calls: [{name: open_ticket, input: {note: "late"}}]
  - tool_calls: [{name: complete_task, input: {result: "done"}}]
`,
	"lookup.sh":      "#!/bin/sh\nprintf '{\"order\":%s}' \"$(cat)\"\n",
	"open_ticket.sh": "#!/bin/sh\necho ticket > ticket.txt\necho '{\"ticket\":\"T-1\"}'\n",
	"ws/README":      "the workspace\n",
}

// recordCase records a run of replayFiles in a fresh directory (the ask
// approved by the local operator) and returns its case and the
// directory.
func recordCase(t *testing.T) (*replaycase.Case, string) {
	t.Helper()
	dir := t.TempDir()
	for name, body := range replayFiles {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	cfg := loadReplayConfig(t, dir)
	rt, err := agentrt.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := rt.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer rt.Stop(ctx)
	b := &testBundle{rt: rt}
	res, turn := b.submit(t, &apitype.SubmitTurnParams{Agent: "a", Input: "where is 1042?"})
	if turn.Status != runtype.StatusWaitingPermission {
		t.Fatalf("recorded turn %s (%s), want waiting_permission", turn.Status, turn.StatusReason)
	}
	acts, err := rt.ListActions(ctx, &apitype.ListActionsParams{TurnID: res.TurnID, Status: runtype.ActionPending})
	if err != nil || len(acts) != 1 {
		t.Fatalf("actions = %v, %v; want one", acts, err)
	}
	if _, err := rt.RespondAction(ctx, &apitype.RespondActionParams{ActionID: acts[0].ActionID, Decision: runtype.DecisionApprove}); err != nil {
		t.Fatal(err)
	}
	if turn, err = rt.WaitTurn(ctx, runtype.Owner{}, res.TurnID); err != nil || turn.Status != runtype.StatusCompleted {
		t.Fatalf("recorded turn %v (%v), want completed", turn, err)
	}
	c, err := rt.ReplayCase(ctx, runtype.Owner{}, res.SessionID, res.TurnID)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "ws", "ticket.txt")); err != nil {
		t.Fatalf("the recorded run opened no ticket: %v", err)
	}
	return c, dir
}

func loadReplayConfig(t *testing.T, dir string) agentrt.Config {
	t.Helper()
	cfg, _, err := configure.Load(filepath.Join(dir, "agentrt.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// changeRules rewrites the rule file of dir, replacing old with new.
func changeRules(t *testing.T, dir, old, new string) {
	t.Helper()
	if !strings.Contains(replayRules, old) {
		t.Fatalf("rules hold no %q", old)
	}
	if err := os.WriteFile(filepath.Join(dir, "rules.yaml"), []byte(strings.Replace(replayRules, old, new, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestReplayCaseOfARecordedRequest: the case holds the exact model
// outputs and, per step, the decision, the person's answer and the
// result.
func TestReplayCaseOfARecordedRequest(t *testing.T) {
	t.Parallel()
	c, _ := recordCase(t)
	if c.Version != replaycase.FormatVersion || c.Agent != "a" || c.Input != "where is 1042?" || c.Status != "completed" {
		t.Errorf("case header = %+v", c)
	}
	if len(c.ModelOutputs) != 3 || c.ModelOutputs[0].Text != "Looking it up." {
		t.Fatalf("model outputs = %+v", c.ModelOutputs)
	}
	if got, want := c.ModelOutputs[0].ToolCalls[0].Arguments, `{"order_id":"10\"42 é"}`; got != want {
		t.Errorf("arguments = %s, want exactly %s", got, want)
	}
	type row struct{ Tool, Decision, Rule, Human, HumanBy, Status string }
	var got []row
	for _, s := range c.Steps {
		if s.ArgumentsSHA256 == "" || s.ResultSHA256 == "" || s.ToolCallID != c.ModelOutputs[s.Output-1].ToolCalls[0].ID {
			t.Errorf("step %d lacks hashes or its call: %+v", s.Index, s)
		}
		got = append(got, row{s.Tool, s.Decision, strings.Join(s.RuleIDs, ","), s.Human, s.HumanBy, s.ResultStatus})
	}
	want := []row{
		{"lookup", "allow", "lookups", "", "", "completed"},
		{"open_ticket", "ask", "tickets", "approve", "local", "completed"},
		{"complete_task", "allow", "finish", "", "", "completed"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
	if !strings.Contains(c.Steps[0].ResultPreview, `{"order":{"order_id"`) {
		t.Errorf("lookup preview = %q", c.Steps[0].ResultPreview)
	}
}

// TestReplayUnchangedPolicyHasNoDiff: under the same configuration the
// replay decides and returns the same at every step, answering the ask
// with the recorded approval; its events validate; and it writes nothing
// to the real workspace or data directory.
func TestReplayUnchangedPolicyHasNoDiff(t *testing.T) {
	t.Parallel()
	c, dir := recordCase(t)
	before := dirListing(t, dir)
	res, err := agentrt.Replay(context.Background(), loadReplayConfig(t, dir), c, agentrt.ReplayOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d := res.Diff
	if d.Summary.Differs || d.Summary.Changed != 0 || len(d.Differences) != 0 {
		t.Errorf("diff of an unchanged policy: %s", mustJSON(t, d))
	}
	if d.Summary.StepsCompared != 3 || !d.Summary.ResultsCompared || d.Summary.ReplayedStatus != "completed" {
		t.Errorf("summary = %+v", d.Summary)
	}
	if want := []string{"tool_permission answered with the recorded decision: approve"}; !cmp.Equal(d.Steps[1].Notes, want) {
		t.Errorf("ask notes = %q, want %q", d.Steps[1].Notes, want)
	}
	if len(res.Events) < 10 {
		t.Fatalf("replay recorded %d events", len(res.Events))
	}
	for _, e := range res.Events {
		b, err := e.JSON()
		if err != nil {
			t.Fatal(err)
		}
		spectest.Event(t, b)
	}
	if diff := cmp.Diff(before, dirListing(t, dir)); diff != "" {
		t.Errorf("the replay changed the configuration's directory (-before +after):\n%s", diff)
	}
}

// TestReplayShowsTheChangedRule is the acceptance test: one rule changed
// from allow to deny, and the diff names exactly that step with its old
// and new decision and rules.
func TestReplayShowsTheChangedRule(t *testing.T) {
	t.Parallel()
	c, dir := recordCase(t)
	changeRules(t, dir, "{id: lookups, tools: [lookup], decision: allow, reason_code: lookup_ok}",
		"{id: lookups-denied, tools: [lookup], decision: deny, reason_code: lookup_off}")
	res, err := agentrt.Replay(context.Background(), loadReplayConfig(t, dir), c, agentrt.ReplayOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d := res.Diff
	changed := d.ChangedSteps()
	if len(changed) != 1 || len(d.Differences) != 0 || d.Summary.Changed != 1 || !d.Summary.Differs {
		t.Fatalf("diff: %s", mustJSON(t, d))
	}
	s := changed[0]
	type side struct{ Decision, Rules, Status, Failure string }
	got := []any{s.Index, s.Tool, s.Changed,
		side{s.Recorded.Decision, strings.Join(s.Recorded.RuleIDs, ","), s.Recorded.ResultStatus, s.Recorded.FailureKind},
		side{s.Replayed.Decision, strings.Join(s.Replayed.RuleIDs, ","), s.Replayed.ResultStatus, s.Replayed.FailureKind}}
	want := []any{1, "lookup", []string{"decision", "result"},
		side{"allow", "lookups", "completed", ""},
		side{"deny", "lookups-denied", "failed", "permission_denied"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("changed step (-want +got):\n%s", diff)
	}
}

// TestReplayAskWithoutRecordedDecision: a rule changed from allow to ask
// is answered with a denial, and the step says so.
func TestReplayAskWithoutRecordedDecision(t *testing.T) {
	t.Parallel()
	c, dir := recordCase(t)
	changeRules(t, dir, "decision: allow, reason_code: lookup_ok", "decision: ask, reason_code: lookup_ask")
	res, err := agentrt.Replay(context.Background(), loadReplayConfig(t, dir), c, agentrt.ReplayOptions{NoTools: true})
	if err != nil {
		t.Fatal(err)
	}
	d := res.Diff
	changed := d.ChangedSteps()
	if len(changed) != 1 || changed[0].Index != 1 || d.Summary.ResultsCompared {
		t.Fatalf("diff: %s", mustJSON(t, d))
	}
	s := changed[0]
	if !cmp.Equal(s.Changed, []string{"decision"}) || s.Recorded.Decision != "allow" || s.Replayed.Decision != "ask" ||
		s.Replayed.ResultStatus != "" {
		t.Errorf("step 1: %s", mustJSON(t, s))
	}
	if want := []string{"tool_permission (no recorded decision): denied"}; !cmp.Equal(s.Notes, want) {
		t.Errorf("notes = %q, want %q", s.Notes, want)
	}
	// --no-tools: the ticket tool did not run; its placeholder result is
	// not compared.
	if p := res.Replayed.Steps[1].ResultPreview; !strings.Contains(p, "not executed") {
		t.Errorf("open_ticket result under --no-tools = %q", p)
	}
}

// TestReplayFromCaseJSON: a case read back from its JSON replays the same.
func TestReplayFromCaseJSON(t *testing.T) {
	t.Parallel()
	c, dir := recordCase(t)
	data, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	back, err := replaycase.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(c, back); diff != "" {
		t.Fatalf("case JSON round trip (-want +got):\n%s", diff)
	}
	res, err := agentrt.Replay(context.Background(), loadReplayConfig(t, dir), back, agentrt.ReplayOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Diff.Summary.Differs {
		t.Errorf("diff: %s", mustJSON(t, res.Diff))
	}
}

// TestReplayBadInput: an unknown request, a request of another session
// and a case whose agent is gone are clear errors.
func TestReplayBadInput(t *testing.T) {
	t.Parallel()
	c, dir := recordCase(t)
	cfg := loadReplayConfig(t, dir)
	rt, err := agentrt.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := rt.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer rt.Stop(ctx)
	if _, err := rt.ReplayCase(ctx, runtype.Owner{}, "", "turn_01M7Z5ME399Y0NDSXSN8VEWD18"); !errors.Is(err, apitype.ErrNotFound) ||
		!strings.Contains(err.Error(), "no request turn_01M7Z5ME399Y0NDSXSN8VEWD18") {
		t.Errorf("unknown request: %v", err)
	}
	if _, err := rt.ReplayCase(ctx, runtype.Owner{}, "ses_other", c.TurnID); !errors.Is(err, apitype.ErrNotFound) {
		t.Errorf("request of another session: %v", err)
	}
	if _, err := rt.ReplayCase(ctx, runtype.Owner{}, c.SessionID, c.TurnID); err != nil {
		t.Errorf("the request's own session: %v", err)
	}

	gone := *c
	gone.Agent = "retired"
	_, err = agentrt.Replay(ctx, cfg, &gone, agentrt.ReplayOptions{})
	if !errors.Is(err, apitype.ErrUnknownAgent) || !strings.Contains(err.Error(), `agent "retired" is not in the configuration (it has a)`) {
		t.Errorf("gone agent: %v", err)
	}
	empty := *c
	empty.ModelOutputs, empty.Steps = nil, nil
	if _, err := agentrt.Replay(ctx, cfg, &empty, agentrt.ReplayOptions{}); !errors.Is(err, replaycase.ErrInvalid) {
		t.Errorf("no model outputs: %v", err)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// dirListing lists the files under dir with their sizes.
func dirListing(t *testing.T, dir string) map[string]int64 {
	t.Helper()
	out := make(map[string]int64)
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if strings.HasPrefix(rel, "data"+string(filepath.Separator)) && strings.Contains(rel, "agentrt.db") {
			return nil // SQLite's files may change size as it checkpoints
		}
		out[rel] = info.Size()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestReplayChecksContexts: a case keeps the context fingerprint of each
// model call; an unchanged replay sends the same contexts, and one under
// another system prompt is reported at the first call, naming the part
// that differs.
func TestReplayChecksContexts(t *testing.T) {
	t.Parallel()
	c, dir := recordCase(t)
	if len(c.Contexts) != 3 || c.HistoryMessages != 0 {
		t.Fatalf("case contexts %+v, history %d; want 3 calls without history", c.Contexts, c.HistoryMessages)
	}
	for i, x := range c.Contexts {
		if x.Hop != i+1 || !strings.HasPrefix(x.Hash, "sha256:") || x.InstructionsRef == "" || x.ToolsRef == "" {
			t.Errorf("context %d = %+v", i, x)
		}
	}
	res, err := agentrt.Replay(context.Background(), loadReplayConfig(t, dir), c, agentrt.ReplayOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(c.Contexts, res.Replayed.Contexts); diff != "" {
		t.Errorf("replayed contexts (-recorded +replayed):\n%s", diff)
	}

	cfg := loadReplayConfig(t, dir)
	a := *cfg.Agents["a"]
	a.Instructions += "\nBe brief."
	cfg.Agents = map[string]*agentrt.Agent{"a": &a}
	res, err = agentrt.Replay(context.Background(), cfg, c, agentrt.ReplayOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d := res.Diff
	if len(d.Differences) != 1 || d.Differences[0].Kind != "context" || !d.Summary.Differs ||
		!strings.Contains(d.Differences[0].Message, "model call at hop 1 sent another context than the recording's: the system prompt differs") {
		t.Errorf("diff under another system prompt: %s", mustJSON(t, d))
	}
}
