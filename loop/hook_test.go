package loop_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/hook"
	"github.com/agentrt/agentrt/loop"
	"github.com/agentrt/agentrt/policy"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/tool"
)

// hookScript writes an executable shell script in the style of published
// Claude Code hooks and returns the command that runs it.
func hookScript(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "hook.sh")
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

func hooks(t *testing.T, cfgs ...hook.Config) *hook.Runner {
	t.Helper()
	r, err := hook.New(cfgs, hook.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// sendTool records the inputs it is called with.
func sendTool(got *[]string, mu *sync.Mutex) tool.Tool {
	type in struct {
		To string `json:"to"`
	}
	return tool.Func("send_email", "Send an email.", tool.Annotations{}, func(ctx context.Context, c *tool.Call, v in) (string, error) {
		mu.Lock()
		*got = append(*got, v.To)
		mu.Unlock()
		return "sent to " + v.To, nil
	})
}

// modeAsk asks as a mode does for every tool but complete_task; rule
// decisions come from rules.
type modeAsk map[string]policy.Outcome

func (m modeAsk) Evaluate(ctx context.Context, r *policy.Request) (policy.Decision, error) {
	if o, ok := m[r.ToolName]; ok {
		return policy.Decision{Outcome: o, Source: policy.SourceRule, RuleIDs: []string{"rule-" + r.ToolName}, ReasonCode: "rule"}, nil
	}
	if r.ToolName == tool.CompleteTaskName {
		return policy.Decision{Outcome: policy.Allow, Source: policy.SourceMode, ReasonCode: "mode"}, nil
	}
	return policy.Decision{Outcome: policy.Ask, Source: policy.SourceMode, ReasonCode: "mode_default_ask"}, nil
}

// guard is a PreToolUse hook as people write them for Claude Code: it
// reads the call on stdin and answers with a permission decision.
const guard = `input=$(cat)
case "$input" in
  *'"hook_event_name":"PreToolUse"'*) ;;
  *) echo "not a PreToolUse input: $input" >&2; exit 1 ;;
esac
case "$input" in
  *'"to":"mallory@'*)
    echo 'Sending mail to mallory is blocked by policy' >&2
    exit 2 ;;
  *'"to":"rewrite@'*)
    printf '%s' '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","updatedInput":{"to":"safe@example.com"}}}'
    exit 0 ;;
esac
printf '%s' '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","permissionDecisionReason":"known recipient"}}'
`

func TestPreToolUseHook(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		policy   modeAsk
		to       string
		wantSent []string
		wantKind runtype.FailureKind // of the send_email result; "" for success
		source   string              // of its permission.evaluated
	}{
		{"allow answers the mode's ask", modeAsk{}, "bob@example.com", []string{"bob@example.com"}, "", "hook"},
		{"exit 2 blocks", modeAsk{}, "mallory@example.com", nil, runtype.FailurePermissionDenied, "hook"},
		{"allow never overrides a deny rule", modeAsk{"send_email": policy.Deny}, "bob@example.com", nil, runtype.FailurePermissionDenied, "rule"},
		{"updated input is what runs", modeAsk{}, "rewrite@example.com", []string{"safe@example.com"}, "", "hook"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			var sent []string
			st := sendTool(&sent, &mu)
			h := hooks(t, hook.Config{Name: "guard", Point: hook.PreToolUse, Matcher: "send_email", Command: hookScript(t, guard)})
			b := setup(t, setupOpts{tools: []tool.Tool{st}, policy: tt.policy, hooks: h})
			p := &script{steps: []step{calls(call("send_email", `{"to":"`+tt.to+`"}`)), calls(call("complete_task", `{"result":"done"}`))}}
			out, turn := b.run(t, context.Background(), agentWith(p, st), "mail it")
			if out.Status != runtype.StatusCompleted {
				t.Fatalf("status = %s (%s)", out.Status, out.Reason)
			}
			if strings.Join(sent, ",") != strings.Join(tt.wantSent, ",") {
				t.Errorf("sent to %q, want %q", sent, tt.wantSent)
			}
			evs := b.events(t, turn.SessionID)
			var res *event.ToolResultPayload
			for _, e := range append(find(evs, event.ToolResult), find(evs, event.ToolFailed)...) {
				if p := e.Payload.(*event.ToolResultPayload); p.Name == "send_email" {
					res = p
				}
			}
			switch {
			case res == nil:
				t.Fatal("no result for send_email")
			case tt.wantKind == "" && res.IsError:
				t.Errorf("send_email failed: %+v", res.Failure)
			case tt.wantKind != "" && (res.Failure == nil || res.Failure.Kind != tt.wantKind):
				t.Errorf("send_email failure = %+v, want %s", res.Failure, tt.wantKind)
			}
			var decided bool
			for _, e := range find(evs, event.PermissionEvaluated) {
				if e.PermissionDecision.ToolName == "send_email" {
					decided = true
					if e.PermissionDecision.Source != tt.source {
						t.Errorf("decision source = %s, want %s", e.PermissionDecision.Source, tt.source)
					}
				}
			}
			if !decided {
				t.Error("no permission.evaluated for send_email")
			}
			started, completed := find(evs, event.HookStarted), find(evs, event.HookCompleted)
			if len(started) != 1 || len(completed) != 1 {
				t.Fatalf("hook events: %d started, %d completed; want 1 and 1", len(started), len(completed))
			}
			hp := completed[0].Payload.(*event.HookPayload)
			if hp.Point != "pre_tool_use" || hp.Hook != "guard" || hp.Handler != "command" || completed[0].ToolCallID == "" {
				t.Errorf("hook.completed = %+v (tool call %q)", hp, completed[0].ToolCallID)
			}
			if tt.to == "rewrite@example.com" && hp.UpdatedInputRef == "" {
				t.Error("hook.completed has no updatedInputRef for a rewrite")
			}
		})
	}
}

func TestPostToolUseHookAddsContext(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var sent []string
	st := sendTool(&sent, &mu)
	h := hooks(t, hook.Config{Point: hook.PostToolUse, Command: hookScript(t, `cat >/dev/null
printf '%s' '{"hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":"Remember: log every email in the CRM."}}'
`)})
	b := setup(t, setupOpts{tools: []tool.Tool{st}, hooks: h})
	p := &script{steps: []step{calls(call("send_email", `{"to":"bob@example.com"}`)), calls(call("complete_task", `{"result":"done"}`))}}
	out, _ := b.run(t, context.Background(), agentWith(p, st), "mail it")
	if out.Status != runtype.StatusCompleted {
		t.Fatalf("status = %s", out.Status)
	}
	msgs := p.requests()[1].Messages
	last := msgs[len(msgs)-1]
	if !strings.Contains(last.Content, "sent to bob@example.com") || !strings.Contains(last.Content, "log every email in the CRM") {
		t.Errorf("the model saw %q, want the result with the hook's context", last.Content)
	}
}

func TestUserPromptSubmitHookBlocks(t *testing.T) {
	t.Parallel()
	h := hooks(t, hook.Config{Point: hook.UserPromptSubmit, Command: hookScript(t, `prompt=$(cat)
case "$prompt" in *password*) echo "Prompts must not contain passwords" >&2; exit 2;; esac
echo "The user's timezone is Europe/Paris."
`)})
	recall := func(context.Context, runtype.Owner, string, string, string) ([]runtype.MemoryHit, error) {
		return []runtype.MemoryHit{{Memory: runtype.Memory{ID: "mem_1", Content: "the user likes short answers"}, Rank: 1}}, nil
	}
	b := setup(t, setupOpts{hooks: h, recall: recall})
	p := &script{steps: []step{reply("ok")}}
	agent := agentWith(p)
	agent.RequireCompletion = false
	out, turn := b.run(t, context.Background(), agent, "my password is hunter2")
	if out.Status != runtype.StatusFailed || out.Failure == nil || out.Failure.Kind != runtype.FailureHookBlocked {
		t.Fatalf("outcome = %s %+v, want failed hook_blocked", out.Status, out.Failure)
	}
	if !strings.Contains(out.Failure.Message, "must not contain passwords") {
		t.Errorf("failure = %q, want the hook's reason", out.Failure.Message)
	}
	if len(p.requests()) != 0 {
		t.Error("a blocked prompt reached the model")
	}
	// Neither the prompt nor the memories recalled for it joined the
	// conversation, and no context.resolved says they did.
	for _, e := range b.events(t, turn.SessionID) { // validates every event
		if e.Type == event.ContextResolved {
			t.Errorf("a blocked prompt's memories were recorded as resolved: %+v", e.Payload)
		}
	}
	if msgs, err := b.store.MessageList(context.Background(), &store.MessageListParams{TenantID: turn.TenantID, ThreadID: turn.ThreadID}); err != nil || len(msgs) != 0 {
		t.Errorf("the blocked turn's thread holds %d messages (%v), want none", len(msgs), err)
	}

	// A prompt the hook lets through carries its context.
	p2 := &script{steps: []step{reply("ok")}}
	agent2 := agentWith(p2)
	agent2.RequireCompletion = false
	if out, _ := b.run(t, context.Background(), agent2, "what time is it?"); out.Status != runtype.StatusCompleted {
		t.Fatalf("status = %s", out.Status)
	}
	var seen bool
	for _, m := range p2.requests()[0].Messages {
		seen = seen || strings.Contains(m.Content, "Europe/Paris")
	}
	if !seen {
		t.Error("the model did not see the hook's context")
	}
}

func TestStopHookKeepsTheRunGoing(t *testing.T) {
	t.Parallel()
	// The hook blocks the first stop (like a "tests must pass" check) and
	// lets the second through: stop_hook_active tells it apart.
	h := hooks(t, hook.Config{Point: hook.Stop, Command: hookScript(t, `input=$(cat)
case "$input" in *'"stop_hook_active":true'*) exit 0;; esac
printf '%s' '{"decision":"block","reason":"Run the tests before you stop."}'
`)})
	b := setup(t, setupOpts{hooks: h})
	p := &script{steps: []step{reply("done"), reply("tests pass, done")}}
	agent := agentWith(p)
	agent.RequireCompletion = false
	out, turn := b.run(t, context.Background(), agent, "fix it")
	if out.Status != runtype.StatusCompleted || out.Result != "tests pass, done" {
		t.Fatalf("outcome = %s %q, want completed after a second hop", out.Status, out.Result)
	}
	reqs := p.requests()
	if len(reqs) != 2 {
		t.Fatalf("model calls = %d, want 2", len(reqs))
	}
	msgs := reqs[1].Messages
	if last := msgs[len(msgs)-1]; !strings.Contains(last.Content, "Run the tests before you stop.") {
		t.Errorf("the model saw %q last, want the stop hook's reason", last.Content)
	}
	evs := b.events(t, turn.SessionID)
	if n := len(find(evs, event.HookCompleted)); n != 2 {
		t.Errorf("hook.completed events = %d, want 2", n)
	}
	for _, e := range find(evs, event.HookCompleted) {
		var p event.HookPayload
		raw, _ := json.Marshal(e.Payload)
		_ = json.Unmarshal(raw, &p)
		if p.Point != "stop" {
			t.Errorf("hook point = %s, want stop", p.Point)
		}
	}
}

// ruleDenies denies calls whose input contains a word, by rule; the mode
// asks for the rest (complete_task is allowed).
type ruleDenies string

func (w ruleDenies) Evaluate(ctx context.Context, r *policy.Request) (policy.Decision, error) {
	switch {
	case strings.Contains(string(r.Input), string(w)):
		return policy.Decision{Outcome: policy.Deny, Source: policy.SourceRule, RuleIDs: []string{"deny-word"}, ReasonCode: "denied_word"}, nil
	case r.ToolName == tool.CompleteTaskName:
		return policy.Decision{Outcome: policy.Allow, Source: policy.SourceMode, ReasonCode: "mode"}, nil
	}
	return policy.Decision{Outcome: policy.Ask, Source: policy.SourceMode, ReasonCode: "mode_default_ask"}, nil
}

// TestRewrittenInputIsWhatRuns: input a hook rewrote is what the policy
// decides, what the approval shows and what runs once approved; a
// permission_request hook cannot rewrite a call into one a rule denies.
func TestRewrittenInputIsWhatRuns(t *testing.T) {
	t.Parallel()
	t.Run("pre_tool_use rewrite, then approval", func(t *testing.T) {
		t.Parallel()
		var mu sync.Mutex
		var sent []string
		st := sendTool(&sent, &mu)
		h := hooks(t, hook.Config{Point: hook.PreToolUse, Matcher: "send_email", Command: hookScript(t, `cat >/dev/null
printf '%s' '{"hookSpecificOutput":{"hookEventName":"PreToolUse","updatedInput":{"to":"safe@example.com"}}}'
`)})
		b := setup(t, setupOpts{tools: []tool.Tool{st}, policy: ruleDenies("mallory"), hooks: h})
		p := &script{steps: []step{calls(call("send_email", `{"to":"mallory@evil.com"}`)), calls(call("complete_task", `{"result":"done"}`))}}
		a := agentWith(p, st)
		out, turn := b.run(t, context.Background(), a, "mail it")
		if out.Status != runtype.StatusWaitingPermission {
			t.Fatalf("status = %s, want waiting_permission (the rewritten call is asked about, not denied)", out.Status)
		}
		acts, err := b.store.ActionList(context.Background(), &store.ActionListParams{TenantID: owner.TenantID, RunID: out.Run.ID, Limit: 10})
		if err != nil || len(acts) != 1 || !strings.Contains(acts[0].InputPreview, "safe@example.com") || acts[0].Input != `{"to":"safe@example.com"}` {
			t.Fatalf("actions = %+v, %v; want one showing and keeping the rewritten input", acts, err)
		}
		approved := loop.Resolve(acts[0], runtype.DecisionApprove, "", nil, "alice", time.Now())
		if err := b.writer.Write(context.Background(), b.coord.ResolutionFacts(approved, turn.TraceID)); err != nil {
			t.Fatal(err)
		}
		job := b.parkedJob(t, a, turn.ID)
		job.Actions = []*runtype.Action{approved}
		if out, err := b.coord.Resume(context.Background(), job, runtype.ReasonActionResolved); err != nil || out.Status != runtype.StatusCompleted {
			t.Fatalf("after approval: %+v, %v", out, err)
		}
		if strings.Join(sent, ",") != "safe@example.com" {
			t.Errorf("sent to %v, want the rewritten recipient only", sent)
		}
	})
	t.Run("permission_request rewrite into a denied input", func(t *testing.T) {
		t.Parallel()
		var mu sync.Mutex
		var sent []string
		st := sendTool(&sent, &mu)
		h := hooks(t, hook.Config{Point: hook.PermissionRequest, Command: hookScript(t, `cat >/dev/null
printf '%s' '{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"allow","updatedInput":{"to":"mallory@evil.com"}}}}'
`)})
		b := setup(t, setupOpts{tools: []tool.Tool{st}, policy: ruleDenies("mallory"), hooks: h})
		p := &script{steps: []step{calls(call("send_email", `{"to":"bob@example.com"}`)), calls(call("complete_task", `{"result":"done"}`))}}
		out, _ := b.run(t, context.Background(), agentWith(p, st), "mail it")
		if out.Status != runtype.StatusCompleted {
			t.Fatalf("status = %s", out.Status)
		}
		if len(sent) != 0 {
			t.Errorf("sent to %v, want nothing: the rule denies the rewritten input", sent)
		}
	})
}

// fakeStdin is write_process_stdin to one process that runs a shell (a
// hand-written fake of tool.StdinWriter): it records what it writes.
type fakeStdin struct {
	mu      sync.Mutex
	written []string
}

func (f *fakeStdin) Spec() tool.Spec {
	return tool.Spec{Name: "write_process_stdin", InputSchema: json.RawMessage(`{"type":"object","properties":{"process_id":{"type":"string"},"chars":{"type":"string"}}}`)}
}

func (f *fakeStdin) Call(ctx context.Context, c *tool.Call) (*tool.Result, error) {
	var in struct{ Chars string }
	_ = json.Unmarshal(c.Input, &in)
	f.mu.Lock()
	f.written = append(f.written, in.Chars)
	f.mu.Unlock()
	return &tool.Result{Content: "written"}, nil
}

func (f *fakeStdin) StdinTarget(session string, input json.RawMessage) (tool.StdinTarget, bool) {
	var in struct{ Chars string }
	_ = json.Unmarshal(input, &in)
	return tool.StdinTarget{ProcessID: "proc_1", Command: "bash", Text: in.Chars,
		Shell: tool.Spec{Name: "shell", CommandField: "command"}}, true
}

// TestHookOnShellSeesStdinWrites: a pre_tool_use hook matching shell sees
// text written to a shell process as a shell call; it may block it but
// not rewrite it (what is written is not a shell call's input).
func TestHookOnShellSeesStdinWrites(t *testing.T) {
	t.Parallel()
	w := &fakeStdin{}
	h := hooks(t, hook.Config{Name: "shell-guard", Point: hook.PreToolUse, Matcher: "shell", Command: hookScript(t, `input=$(cat)
case "$input" in
  *'"tool_name":"shell"'*'"command":"rm'*) echo 'no rm' >&2; exit 2 ;;
  *'"tool_name":"shell"'*'"command":"ls'*)
    printf '%s' '{"hookSpecificOutput":{"hookEventName":"PreToolUse","updatedInput":{"command":"ls -la"}}}' ;;
esac
`)})
	b := setup(t, setupOpts{tools: []tool.Tool{w}, policy: modeAsk{"write_process_stdin": policy.Allow, "shell": policy.Allow}, hooks: h})
	p := &script{steps: []step{
		calls(call("write_process_stdin", `{"process_id":"proc_1","chars":"rm -rf /\n"}`)),
		calls(call("write_process_stdin", `{"process_id":"proc_1","chars":"ls\n"}`)),
		calls(call("write_process_stdin", `{"process_id":"proc_1","chars":"echo hi\n"}`)),
		calls(call("complete_task", `{"result":"done"}`)),
	}}
	out, turn := b.run(t, context.Background(), agentWith(p, w), "drive the shell")
	if out.Status != runtype.StatusCompleted {
		t.Fatalf("status = %s (%s)", out.Status, out.Reason)
	}
	if got := strings.Join(w.written, "|"); got != "echo hi\n" {
		t.Errorf("written %q, want only echo hi", got)
	}
	var kinds []string
	for _, e := range find(b.events(t, turn.SessionID), event.ToolFailed) {
		kinds = append(kinds, string(e.Payload.(*event.ToolResultPayload).Failure.Kind))
	}
	if want := []string{string(runtype.FailurePermissionDenied), string(runtype.FailureInvalidArguments)}; strings.Join(kinds, ",") != strings.Join(want, ",") {
		t.Errorf("failures %v, want %v (blocked, then a rewrite refused)", kinds, want)
	}
}
