package loop_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/loop"
	"github.com/agentrt/agentrt/output"
	"github.com/agentrt/agentrt/policy"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/sandbox"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/tool"
)

// probeTool is a tool whose calls report how many of its calls were
// running at once; wait, when set, runs inside each call.
func probeTool(name string, ann tool.Annotations, concurrency string, active, peak *atomic.Int64, wait func()) tool.Tool {
	t := tool.Func(name, "A probe.", ann, func(ctx context.Context, c *tool.Call, in struct {
		Path string `json:"path,omitempty"`
	}) (string, error) {
		n := active.Add(1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		if wait != nil {
			wait()
		}
		active.Add(-1)
		return "ok", nil
	})
	if concurrency == "" {
		return t
	}
	return withConcurrency{t, concurrency}
}

type withConcurrency struct {
	tool.Tool
	class string
}

func (w withConcurrency) Spec() tool.Spec {
	s := w.Tool.Spec()
	s.Concurrency = w.class
	return s
}

// rendezvous returns a wait that returns once n calls are inside it at
// the same time (or fails the test after a long deadline).
func rendezvous(t *testing.T, n int) func() {
	var wg sync.WaitGroup
	wg.Add(n)
	all := make(chan struct{})
	go func() { wg.Wait(); close(all) }()
	return func() {
		wg.Done()
		select {
		case <-all:
		case <-time.After(10 * time.Second):
			t.Error("the calls of the hop did not run together")
		}
	}
}

func TestHopRunsReadOnlyCallsTogether(t *testing.T) {
	t.Parallel()
	var active, peak atomic.Int64
	read := probeTool("read_thing", tool.Annotations{ReadOnly: true}, "", &active, &peak, rendezvous(t, 4))
	b := setup(t, setupOpts{tools: []tool.Tool{read}})
	var cs []runtype.MessageToolCall
	for i := range 4 {
		cs = append(cs, call("read_thing", fmt.Sprintf(`{"path":"%d"}`, i)))
	}
	p := &script{steps: []step{calls(cs...), calls(call("complete_task", `{"result":"r"}`))}}
	out, turn := b.run(t, context.Background(), agentWith(p, read), "go")
	if out.Status != runtype.StatusCompleted {
		t.Fatalf("status = %s", out.Status)
	}
	if got := peak.Load(); got != 4 {
		t.Errorf("peak concurrency = %d, want 4", got)
	}
	// The results reach the model in call order.
	msgs := p.requests()[1].Messages
	var ids []string
	for _, m := range msgs {
		if m.Role == runtype.RoleTool {
			ids = append(ids, m.ToolCallID)
		}
	}
	for i, c := range msgs[len(msgs)-5].ToolCalls {
		if ids[i] != c.ID {
			t.Errorf("result %d is for %s, want %s", i, ids[i], c.ID)
		}
	}
	b.events(t, turn.SessionID)
}

func TestHopSerializesWritesAndSameKeys(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		ann   tool.Annotations
		class string
		args  func(i int) string
	}{
		{"writes are exclusive by default", tool.Annotations{}, "", func(int) string { return `{}` }},
		{"declared exclusive", tool.Annotations{ReadOnly: true}, tool.Exclusive, func(int) string { return `{}` }},
		{"same resource key", tool.Annotations{ReadOnly: true}, "file:{path}", func(int) string { return `{"path":"a.txt"}` }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var active, peak atomic.Int64
			w := probeTool("touch", tc.ann, tc.class, &active, &peak, nil)
			b := setup(t, setupOpts{tools: []tool.Tool{w}})
			var cs []runtype.MessageToolCall
			for i := range 5 {
				cs = append(cs, call("touch", tc.args(i)))
			}
			p := &script{steps: []step{calls(cs...), calls(call("complete_task", `{"result":"r"}`))}}
			out, turn := b.run(t, context.Background(), agentWith(p, w), "go")
			if out.Status != runtype.StatusCompleted {
				t.Fatalf("status = %s", out.Status)
			}
			if got := peak.Load(); got != 1 {
				t.Errorf("peak concurrency = %d, want 1", got)
			}
			if n := len(find(b.events(t, turn.SessionID), event.ToolResult)); n != 6 {
				t.Errorf("tool.result events = %d, want 6", n)
			}
		})
	}
}

// BenchmarkHop measures a turn whose first hop runs n read-only calls in
// parallel: with calls that wait (I/O), n=8 should cost little more than
// n=1; with no-op calls the difference is the per-call bookkeeping.
func BenchmarkHop(b *testing.B) {
	for _, wait := range []time.Duration{0, 2 * time.Millisecond} {
		for _, n := range []int{1, 8} {
			b.Run(fmt.Sprintf("wait=%s/calls=%d", wait, n), func(b *testing.B) {
				var active, peak atomic.Int64
				var w func()
				if wait > 0 {
					w = func() { time.Sleep(wait) } // the work of the tool, not synchronisation
				}
				read := probeTool("read_thing", tool.Annotations{ReadOnly: true}, "", &active, &peak, w)
				tb := setup(b, setupOpts{tools: []tool.Tool{read}})
				cs := make([]runtype.MessageToolCall, n)
				for i := range cs {
					cs[i] = call("read_thing", `{}`)
				}
				for b.Loop() {
					p := &script{steps: []step{calls(cs...), calls(call("complete_task", `{"result":"r"}`))}}
					out, _ := tb.run(b, context.Background(), agentWith(p, read), "go")
					if out.Status != runtype.StatusCompleted {
						b.Fatalf("status = %s", out.Status)
					}
				}
			})
		}
	}
}

// sourced reports a different Source for a tool, as command tools do.
type sourced struct {
	tool.Tool
	source string
}

func (s sourced) Spec() tool.Spec {
	sp := s.Tool.Spec()
	sp.Source = s.source
	return sp
}

// TestIdempotencyKey: every call gets a key stable for the call; an
// idempotent command tool also finds it in its input.
func TestIdempotencyKey(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	inputs := map[string]string{}
	keys := map[string]string{}
	mk := func(name string, idem bool) tool.Tool {
		return sourced{tool.Func(name, "Echo.", tool.Annotations{Idempotent: idem}, func(ctx context.Context, c *tool.Call, in map[string]any) (string, error) {
			mu.Lock()
			defer mu.Unlock()
			inputs[name] = fmt.Sprint(in["_idempotency_key"])
			keys[name] = c.IdempotencyKey
			return "ok", nil
		}), "command"}
	}
	idem, once := mk("charge_idempotent", true), mk("charge_once", false)
	b := setup(t, setupOpts{tools: []tool.Tool{idem, once}})
	p := &script{steps: []step{
		calls(runtype.MessageToolCall{ID: "call_a", Name: "charge_idempotent", Arguments: `{}`}, runtype.MessageToolCall{ID: "call_b", Name: "charge_once", Arguments: `{}`}),
		calls(call("complete_task", `{"result":"r"}`)),
	}}
	out, turn := b.run(t, context.Background(), agentWith(p, idem, once), "go")
	if out.Status != runtype.StatusCompleted {
		t.Fatalf("status = %s", out.Status)
	}
	if want := turn.SessionID + "/call_a"; keys["charge_idempotent"] != want || inputs["charge_idempotent"] != want {
		t.Errorf("idempotent tool: key %q, input key %q; want %q for both", keys["charge_idempotent"], inputs["charge_idempotent"], want)
	}
	if want := turn.SessionID + "/call_b"; keys["charge_once"] != want || inputs["charge_once"] != "<nil>" {
		t.Errorf("non-idempotent tool: key %q, input key %q; want %q and none in the input", keys["charge_once"], inputs["charge_once"], want)
	}
	for _, e := range find(b.events(t, turn.SessionID), event.ToolStarted) {
		if p := e.Payload.(*event.ToolStartedPayload); p.IdempotencyKey != turn.SessionID+"/"+e.ToolCallID {
			t.Errorf("tool.started of %s carries key %q", e.ToolCallID, p.IdempotencyKey)
		}
	}
}

// TestOutputControl: a Go tool's large output is redacted before
// anything keeps it and spilled to the output store; the model sees its
// head and tail and the ref.
func TestOutputControl(t *testing.T) {
	t.Parallel()
	const secret = "hunter2-secret-value"
	big := "start " + secret + " " + strings.Repeat("x", 200_000) + " ghp_0123456789abcdefghijABCDEFGHIJ012345 end"
	loud := tool.Func("loud", "Prints a lot.", tool.Annotations{ReadOnly: true}, func(context.Context, *tool.Call, struct{}) (string, error) {
		return big, nil
	})
	st, err := output.NewStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	b := setup(t, setupOpts{tools: []tool.Tool{loud}, outputs: st, redactor: output.NewRedactor(output.RedactorConfig{Secrets: []string{secret}}),
		limits: output.Limits{Inline: 4096}})
	p := &script{steps: []step{calls(call("loud", `{}`)), calls(call("complete_task", `{"result":"r"}`))}}
	out, turn := b.run(t, context.Background(), agentWith(p, loud), "go")
	if out.Status != runtype.StatusCompleted {
		t.Fatalf("status = %s", out.Status)
	}
	msgs := p.requests()[1].Messages
	seen := msgs[len(msgs)-1].Content
	if len(seen) > 4096+200 || !strings.HasPrefix(seen, "start [REDACTED:secret_env]") || !strings.HasSuffix(seen, "[REDACTED:github_token] end") || !strings.Contains(seen, "sha256:") {
		t.Errorf("the model saw %d bytes: %.200q … %.100q", len(seen), seen, seen[max(0, len(seen)-100):])
	}
	evs := b.events(t, turn.SessionID)
	red, spilled := find(evs, event.OutputRedacted), find(evs, event.OutputSpilled)
	if len(red) != 1 || len(spilled) != 1 {
		t.Fatalf("output.redacted %d, output.spilled %d; want 1 each", len(red), len(spilled))
	}
	if c := red[0].Payload.(*event.OutputPayload).Redactions; c["secret_env"] != 1 || c["github_token"] != 1 {
		t.Errorf("redactions = %v", c)
	}
	ref := spilled[0].OutputRef
	res := find(evs, event.ToolResult)[0]
	if res.OutputRef != ref || !res.Payload.(*event.ToolResultPayload).Truncated {
		t.Errorf("tool.result outputRef %q, want %q", res.OutputRef, ref)
	}
	f, err := st.Open(ref)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	stored, _ := io.ReadAll(f)
	if len(stored) < 200_000 || strings.Contains(string(stored), secret) || strings.Contains(string(stored), "ghp_") {
		t.Errorf("stored output: %d bytes, secrets present: %v", len(stored), strings.Contains(string(stored), secret))
	}
	for _, e := range evs {
		raw, _ := e.JSON()
		if strings.Contains(string(raw), secret) {
			t.Errorf("%s carries the secret", e.Type)
		}
	}
}

// violator fails like a sandboxed tool whose write was refused, until it
// runs under a profile that allows writes.
type violator struct{ profiles *[]string }

func (v violator) Spec() tool.Spec {
	return tool.Spec{Name: "build", Description: "Builds.", InputSchema: json.RawMessage(`{"type":"object"}`)}
}

func (v violator) Call(ctx context.Context, c *tool.Call) (*tool.Result, error) {
	*v.profiles = append(*v.profiles, c.Profile.Name)
	if c.Profile.Mode == sandbox.ReadOnly {
		return &tool.Result{Content: "cannot create out.txt: Read-only file system", IsError: true,
			Violation: &sandbox.Violation{Kind: sandbox.WriteDenied, Detail: "out.txt", Profile: c.Profile.Name}}, nil
	}
	return &tool.Result{Content: "built"}, nil
}

// escalator decides escalations as given and allows the rest.
type escalator policy.Outcome

func (e escalator) Evaluate(ctx context.Context, r *policy.Request) (policy.Decision, error) {
	if r.Intent == loop.IntentEscalate {
		return policy.Decision{Outcome: policy.Outcome(e), Source: policy.SourceRule, RuleIDs: []string{"escalation"}, ReasonCode: "escalation_rule", Message: "rule says " + string(e)}, nil
	}
	return policy.Decision{Outcome: policy.Allow, Source: policy.SourceRule, ReasonCode: "allowed"}, nil
}

func TestEscalationDecisions(t *testing.T) {
	t.Parallel()
	ro, _ := sandbox.Builtin(string(sandbox.ReadOnly))
	for _, tc := range []struct {
		decision policy.Outcome
		status   runtype.TaskStatus
		profiles string
		seen     string
	}{
		{policy.Deny, runtype.StatusCompleted, "read_only", "not allowed (escalation_rule)"},
		{policy.Allow, runtype.StatusCompleted, "read_only,workspace_write", "built"},
		{policy.Ask, runtype.StatusWaitingPermission, "read_only", ""},
	} {
		t.Run(string(tc.decision), func(t *testing.T) {
			t.Parallel()
			var profiles []string
			v := violator{&profiles}
			b := setup(t, setupOpts{tools: []tool.Tool{v}, policy: escalator(tc.decision)})
			p := &script{steps: []step{calls(call("build", `{}`)), calls(call("complete_task", `{"result":"r"}`))}}
			agent := agentWith(p, v)
			agent.Sandbox = &ro
			out, turn := b.run(t, context.Background(), agent, "go")
			if out.Status != tc.status {
				t.Fatalf("status = %s (%s), want %s", out.Status, out.Reason, tc.status)
			}
			if got := strings.Join(profiles, ","); got != tc.profiles {
				t.Errorf("ran under %s, want %s", got, tc.profiles)
			}
			evs := b.events(t, turn.SessionID)
			if tc.decision == policy.Ask {
				req := find(evs, event.ActionRequired)
				if len(req) != 1 || req[0].Payload.(*event.ActionPayload).ActionType != "sandbox_escalation" {
					t.Fatalf("action.required = %d, want one sandbox_escalation", len(req))
				}
				acts, err := b.store.ActionList(context.Background(), &store.ActionListParams{TenantID: owner.TenantID, RunID: out.Run.ID, Limit: 10})
				if err != nil || len(acts) != 1 || acts[0].Escalation != "workspace_write" || !slices.Equal(acts[0].Decisions, []string{"approve", "deny"}) {
					t.Fatalf("actions = %+v, %v", acts, err)
				}
				// Approved, the call reruns under the offered profile.
				approved := loop.Resolve(acts[0], runtype.DecisionApprove, "", nil, "alice", time.Now())
				if err := b.writer.Write(context.Background(), b.coord.ResolutionFacts(approved, turn.TraceID)); err != nil {
					t.Fatal(err)
				}
				job := b.parkedJob(t, agent, turn.ID)
				job.Actions = []*runtype.Action{approved}
				out, err = b.coord.Resume(context.Background(), job, runtype.ReasonActionResolved)
				if err != nil || out.Status != runtype.StatusCompleted {
					t.Fatalf("after approval: %+v, %v", out, err)
				}
				tc.profiles, tc.seen = "read_only,workspace_write", "built"
				if got := strings.Join(profiles, ","); got != tc.profiles {
					t.Errorf("ran under %s, want %s", got, tc.profiles)
				}
			}
			msgs := p.requests()[1].Messages
			if seen := msgs[len(msgs)-1].Content; !strings.Contains(seen, tc.seen) {
				t.Errorf("the model saw %q, want %q in it", seen, tc.seen)
			}
		})
	}
}

// TestInterruptedHopAnswersEveryCall: a hop interrupted while a call waits
// for a person and a completion waits for it leaves a result for every
// call, so the thread stays valid for the next turn.
func TestInterruptedHopAnswersEveryCall(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancelCause(context.Background())
	stopper := tool.Func("stopper", "Interrupts.", tool.Annotations{ReadOnly: true}, func(context.Context, *tool.Call, struct{}) (string, error) {
		cancel(loop.ErrInterrupted)
		return "stopped", nil
	})
	var mu sync.Mutex
	var looked []string
	lt := lookupTool(&looked, &mu)
	d := decider{"lookup_order": policy.Ask, "complete_task": policy.Allow, "stopper": policy.Allow}
	b := setup(t, setupOpts{tools: []tool.Tool{lt, stopper}, policy: d})
	p := &script{steps: []step{calls(call("lookup_order", `{"order_id":"1"}`), call("complete_task", `{"result":"r"}`), call("stopper", `{}`))}}
	out, turn := b.run(t, ctx, agentWith(p, lt, stopper), "go")
	if out.Status != runtype.StatusCancelled {
		t.Fatalf("status = %s, want cancelled", out.Status)
	}
	msgs, err := b.store.MessageList(context.Background(), &store.MessageListParams{TenantID: owner.TenantID, ThreadID: turn.ThreadID})
	if err != nil {
		t.Fatal(err)
	}
	answered := map[string]bool{}
	for _, m := range msgs {
		if m.Role == runtype.RoleTool {
			answered[m.ToolCallID] = true
		}
	}
	for _, m := range msgs {
		for _, c := range m.ToolCalls {
			if !answered[c.ID] {
				t.Errorf("call %s (%s) has no result", c.ID, c.Name)
			}
		}
	}
	b.events(t, turn.SessionID)
}
