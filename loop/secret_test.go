package loop_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/loop"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/output"
	"github.com/agentrt/agentrt/policy"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/tool"
)

// fakeGitHub is a GitHub-shaped token, assembled so that secret scanners
// reading this file do not flag it.
var fakeGitHub = "ghp_" + "aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789"

// tokenTool records the token each call got.
func tokenTool(got *[]string, mu *sync.Mutex) tool.Tool {
	type in struct {
		Token string `json:"token"`
	}
	return tool.Func("push", "Push with a token.", tool.Annotations{},
		func(ctx context.Context, c *tool.Call, in in) (string, error) {
			mu.Lock()
			*got = append(*got, in.Token)
			mu.Unlock()
			return "pushed", nil
		})
}

// stored returns every text the store holds about the session's turn:
// its events' encodings, messages and tool calls.
func (b *testBundle) stored(t *testing.T, turn *runtype.Turn) string {
	t.Helper()
	ctx := context.Background()
	var all strings.Builder
	for _, e := range b.events(t, turn.SessionID) {
		raw, _ := e.JSON()
		all.Write(raw)
	}
	msgs, err := b.store.MessageList(ctx, &store.MessageListParams{TenantID: owner.TenantID, ThreadID: turn.ThreadID})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		raw, _ := json.Marshal(m)
		all.Write(raw)
	}
	tcs, err := b.store.ToolCallList(ctx, &store.ToolCallListParams{TenantID: owner.TenantID, SessionID: turn.SessionID, TurnID: turn.ID})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range tcs {
		raw, _ := json.Marshal(tc)
		all.Write(raw)
	}
	return all.String()
}

// TestCallRunsWithItsRealInput: a call whose input holds a secret runs
// with the secret, though what is stored of it is redacted: in the hop
// that asked for it, and after an approval the same coordinator resumes.
// A coordinator that never saw the real input (a restarted runtime) does
// not run the call with the redacted one: the call fails with
// input_redacted.
func TestCallRunsWithItsRealInput(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		restarted bool
	}{{"same runtime", false}, {"restarted runtime", true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			var got []string
			push := tokenTool(&got, &mu)
			red := output.NewRedactor(output.RedactorConfig{})
			b := setup(t, setupOpts{tools: []tool.Tool{push}, policy: decider{"push": policy.Ask, "complete_task": policy.Allow}, redactor: red})
			args := `{"token":"` + fakeGitHub + `"}`
			p := &script{steps: []step{calls(call("push", args)), calls(call("complete_task", `{"result":"done"}`))}}
			a := agentWith(p, push)
			out, turn := b.run(t, context.Background(), a, "push it")
			if out.Status != runtype.StatusWaitingPermission {
				t.Fatalf("status %s, want waiting_permission", out.Status)
			}
			ctx := context.Background()
			acts, err := b.store.ActionList(ctx, &store.ActionListParams{TenantID: owner.TenantID, RunID: out.Run.ID})
			if err != nil || len(acts) != 1 {
				t.Fatalf("actions %v, %v", acts, err)
			}
			redacted := red.JSON(args)
			if want := tool.ArgumentsSHA256(json.RawMessage(redacted)); acts[0].ArgumentsSHA256 != want {
				t.Errorf("the action's argumentsSha256 is %s, want the hash of the redacted arguments %s", acts[0].ArgumentsSHA256, want)
			}
			approved := loop.Resolve(acts[0], runtype.DecisionApprove, "", nil, "alice", time.Now())
			if err := b.writer.Write(ctx, b.coord.ResolutionFacts(approved, turn.TraceID)); err != nil {
				t.Fatal(err)
			}
			coord := b.coord
			if tc.restarted {
				coord, err = loop.New(loop.Config{RuntimeID: "rt_test", Reader: b.store, Writer: b.writer, Registry: b.registry,
					Policy: decider{"push": policy.Ask, "complete_task": policy.Allow}, Redactor: red})
				if err != nil {
					t.Fatal(err)
				}
			}
			job := b.parkedJob(t, a, turn.ID)
			job.Actions = []*runtype.Action{approved}
			if out, err = coord.Resume(ctx, job, runtype.ReasonActionResolved); err != nil {
				t.Fatal(err)
			}
			if out.Status != runtype.StatusCompleted {
				t.Fatalf("after resume: %+v", out)
			}
			if all := b.stored(t, turn); strings.Contains(all, fakeGitHub) {
				t.Errorf("the store holds the secret:\n%s", all)
			}
			failed := find(b.events(t, turn.SessionID), event.ToolFailed)
			switch {
			case tc.restarted && (len(got) != 0 || len(failed) != 1 || failed[0].Payload.(*event.ToolResultPayload).Failure.Kind != runtype.FailureInputRedacted):
				t.Errorf("the tool got %q and %d calls failed; want no call, and input_redacted", got, len(failed))
			case !tc.restarted && (len(got) != 1 || got[0] != fakeGitHub || len(failed) != 0):
				t.Errorf("the tool got %q and %d calls failed; want the real token once", got, len(failed))
			}
		})
	}
}

// TestCallWithAMarkerRunsInTheHop: a call whose input holds a redaction
// marker already (the model copied redacted output) runs as it is, in its
// hop and after an approval.
func TestCallWithAMarkerRunsAfterApproval(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var got []string
	push := tokenTool(&got, &mu)
	b := setup(t, setupOpts{tools: []tool.Tool{push}, policy: decider{"push": policy.Ask, "complete_task": policy.Allow},
		redactor: output.NewRedactor(output.RedactorConfig{})})
	p := &script{steps: []step{calls(call("push", `{"token":"[REDACTED:github_token]"}`)), calls(call("complete_task", `{"result":"done"}`))}}
	a := agentWith(p, push)
	out, turn := b.run(t, context.Background(), a, "push it")
	ctx := context.Background()
	acts, err := b.store.ActionList(ctx, &store.ActionListParams{TenantID: owner.TenantID, RunID: out.Run.ID})
	if err != nil || len(acts) != 1 {
		t.Fatalf("actions %v, %v", acts, err)
	}
	approved := loop.Resolve(acts[0], runtype.DecisionApprove, "", nil, "alice", time.Now())
	if err := b.writer.Write(ctx, b.coord.ResolutionFacts(approved, turn.TraceID)); err != nil {
		t.Fatal(err)
	}
	job := b.parkedJob(t, a, turn.ID)
	job.Actions = []*runtype.Action{approved}
	if out, err = b.coord.Resume(ctx, job, runtype.ReasonActionResolved); err != nil || out.Status != runtype.StatusCompleted {
		t.Fatalf("after resume: %+v, %v", out, err)
	}
	if len(got) != 1 || got[0] != "[REDACTED:github_token]" {
		t.Errorf("the tool got %q, want the model's input once", got)
	}
}

// deltaModel streams its answer in pieces before answering.
type deltaModel struct {
	pieces []model.Delta
}

func (m *deltaModel) Info() model.Info { return model.Info{Kind: "replay", Model: "test"} }

func (m *deltaModel) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	var text strings.Builder
	for _, p := range m.pieces {
		req.Stream(p)
		if p.Kind == model.DeltaText {
			text.WriteString(p.Text)
		}
	}
	return &model.Response{Text: text.String(), Raw: []byte(`{"text":"` + text.String() + `"}`)}, nil
}

// TestStreamedSecretIsRedacted: a secret the model streams in two pieces,
// which reasoning between them puts in two model.delta events, reaches no
// event, nor the message or the raw response.
func TestStreamedSecretIsRedacted(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{redactor: output.NewRedactor(output.RedactorConfig{})})
	half := len(fakeGitHub) / 2
	p := &deltaModel{pieces: []model.Delta{
		{Kind: model.DeltaText, Text: "the token is " + fakeGitHub[:half]},
		{Kind: model.DeltaReasoning, Text: "thinking it over"},
		{Kind: model.DeltaText, Text: fakeGitHub[half:] + ", keep it"},
	}}
	a := &loop.Agent{Name: "support", Candidates: []*model.Candidate{{Name: "default", Provider: p}}}
	out, turn := b.run(t, context.Background(), a, "go")
	if out.Status != runtype.StatusCompleted {
		t.Fatalf("status %s", out.Status)
	}
	var text []string
	for _, e := range find(b.events(t, turn.SessionID), event.ModelDelta) {
		text = append(text, e.Payload.(*event.DeltaPayload).Text)
	}
	if want := []string{"the token is ", "[REDACTED:github_token], keep it"}; !slices.Equal(text, want) {
		t.Errorf("the deltas say %q, want %q", text, want)
	}
	all := b.stored(t, turn)
	for _, e := range find(b.events(t, turn.SessionID), event.ModelCompleted) {
		blob, err := b.store.BlobGet(context.Background(), &store.BlobGetParams{TenantID: owner.TenantID, Ref: e.Refs["rawResponse"]})
		if err != nil {
			t.Fatal(err)
		}
		all += string(blob.Data)
	}
	if strings.Contains(all, fakeGitHub[:half]) || strings.Contains(all, fakeGitHub[half:]) {
		t.Errorf("the store holds (part of) the secret:\n%s", all)
	}
}
