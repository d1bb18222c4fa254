package agentrt_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/hook"
	"github.com/agentrt/agentrt/internal/testenv"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/policy"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/sandbox"
	"github.com/agentrt/agentrt/tool"
)

// shellRuntime starts a runtime whose agent "a" has the shell tool, a
// workspace and the sandbox profile p, answering with resps.
func shellRuntime(t *testing.T, p *sandbox.Profile, pol policy.Evaluator, cfg agentrt.Config, resps ...*model.Response) (*agentrt.Runtime, *seer, string) {
	t.Helper()
	m := &seer{resps: resps, tools: map[string]string{}}
	rt, ws := shellRuntimeWith(t, p, pol, cfg, m)
	return rt, m, ws
}

// shellRuntimeWith is shellRuntime with the model m.
func shellRuntimeWith(t *testing.T, p *sandbox.Profile, pol policy.Evaluator, cfg agentrt.Config, m model.Provider) (*agentrt.Runtime, string) {
	t.Helper()
	if _, err := sandbox.New(sandbox.Options{}).Enforcer(); err != nil {
		testenv.Missing(t, "no sandbox can be enforced here: %v", err)
	}
	ws := t.TempDir()
	if cfg.DataDir == "" {
		cfg.DataDir = t.TempDir()
	}
	cfg.Policy = pol
	cfg.Agents = map[string]*agentrt.Agent{"a": {Provider: m, Tools: []string{"shell", "exec", "write_process_stdin", "terminate_process"}, Workspace: ws, Sandbox: p}}
	rt, err := agentrt.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Stop(context.Background()) })
	return rt, ws
}

func shellCall(id, command string) *model.Response {
	in, _ := json.Marshal(map[string]string{"command": command})
	return &model.Response{ToolCalls: []runtype.MessageToolCall{{ID: id, Name: "shell", Arguments: string(in)}}}
}

func profile(t *testing.T, name string) *sandbox.Profile {
	t.Helper()
	p, ok := sandbox.Builtin(name)
	if !ok {
		t.Fatalf("no builtin profile %q", name)
	}
	return &p
}

func TestShellRunsSandboxed(t *testing.T) {
	t.Parallel()
	rt, m, ws := shellRuntime(t, profile(t, "workspace_write"), kernel(t, noEscalation), agentrt.Config{},
		shellCall("call_1", "echo hello > note.txt && cat note.txt && echo oops > /etc/agentrt-escape"),
	)
	tb := &testBundle{rt: rt}
	res, turn := tb.submit(t, &apitype.SubmitTurnParams{Agent: "a", Input: "write a note"})
	if turn.Status != runtype.StatusCompleted {
		t.Fatalf("status = %s (%s)", turn.Status, turn.StatusReason)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "note.txt")); err != nil || string(b) != "hello\n" {
		t.Errorf("note.txt = %q, %v; want the workspace write to land", b, err)
	}
	if _, err := os.Stat("/etc/agentrt-escape"); err == nil {
		os.Remove("/etc/agentrt-escape")
		t.Fatal("the shell wrote outside the workspace")
	}
	if seen := m.seen("call_1"); !strings.Contains(seen, "hello") {
		t.Errorf("the model saw %q, want the output", seen)
	}
	evs := tb.sessionEvents(t, runtype.Owner{}, res.SessionID)
	got := map[event.Type]int{}
	for _, e := range evs {
		got[e.Type]++
	}
	for _, want := range []event.Type{event.SandboxApplied, event.ProcessStarted, event.ProcessFailed, event.SandboxViolation, event.ToolFailed} {
		if got[want] == 0 {
			t.Errorf("no %s event; got %v", want, got)
		}
	}
	for _, e := range evs {
		switch p := e.Payload.(type) {
		case *event.SandboxPayload:
			if e.Type == event.SandboxApplied && (p.Mode != "workspace_write" || p.Network != "none" || p.Enforcer == "" || p.Limits.Processes == 0) {
				t.Errorf("sandbox.applied = %+v, want the real profile", p)
			}
			if e.Type == event.SandboxViolation && p.Violation != "write_denied" {
				t.Errorf("sandbox.violation = %+v, want write_denied", p)
			}
		case *event.ToolResultPayload:
			if e.Type == event.ToolFailed && (p.Failure == nil || p.Failure.Kind != runtype.FailureSandboxViolation) {
				t.Errorf("tool.failed failure = %+v, want sandbox_violation", p.Failure)
			}
		}
	}
}

// TestEscalation: a write the read_only sandbox refused becomes an
// approval to rerun under workspace_write; approved, the call reruns and
// the write lands.
func TestEscalation(t *testing.T) {
	t.Parallel()
	rt, m, ws := shellRuntime(t, profile(t, "read_only"), nil, agentrt.Config{},
		shellCall("call_1", "echo built > out.txt"),
	)
	tb := &testBundle{rt: rt}
	res, turn := tb.submit(t, &apitype.SubmitTurnParams{Agent: "a", Input: "build"})
	if turn.Status != runtype.StatusWaitingPermission {
		t.Fatalf("status = %s (%s), want waiting_permission", turn.Status, turn.StatusReason)
	}
	acts, err := rt.ListActions(context.Background(), &apitype.ListActionsParams{TurnID: res.TurnID, Status: runtype.ActionPending})
	if err != nil || len(acts) != 1 {
		t.Fatalf("pending actions = %v, %v; want one", acts, err)
	}
	if a := acts[0]; a.Type != "sandbox_escalation" || a.Escalation != "workspace_write" || !strings.Contains(a.Prompt, "write_denied") {
		t.Errorf("action = %+v, want a sandbox_escalation to workspace_write", a)
	}
	if _, err := os.Stat(filepath.Join(ws, "out.txt")); err == nil {
		t.Fatal("the read_only sandbox let the write through")
	}
	if _, err := rt.RespondAction(context.Background(), &apitype.RespondActionParams{ActionID: acts[0].ActionID, Decision: runtype.DecisionApprove}); err != nil {
		t.Fatal(err)
	}
	turn, err = rt.WaitTurn(context.Background(), runtype.Owner{}, res.TurnID)
	if err != nil || turn.Status != runtype.StatusCompleted {
		t.Fatalf("after approval: %v, %v; want completed", turn.Status, err)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "out.txt")); err != nil || string(b) != "built\n" {
		t.Errorf("out.txt = %q, %v; want the rerun's write", b, err)
	}
	if seen := m.seen("call_1"); strings.Contains(seen, "Read-only") {
		t.Errorf("the model saw the refusal %q, want the rerun's result", seen)
	}
	evs := tb.sessionEvents(t, runtype.Owner{}, res.SessionID)
	var applied []string
	var escalationDecided bool
	for _, e := range evs {
		if p, ok := e.Payload.(*event.SandboxPayload); ok && e.Type == event.SandboxApplied {
			applied = append(applied, p.Profile)
		}
		if e.Type == event.PermissionEvaluated && e.PermissionDecision.Decision == "ask" && e.ToolCallID == "call_1" {
			escalationDecided = true
		}
	}
	if strings.Join(applied, ",") != "read_only,workspace_write" {
		t.Errorf("sandbox.applied profiles = %v, want read_only then workspace_write", applied)
	}
	if !escalationDecided {
		t.Error("no permission.evaluated (ask) for the escalation")
	}
}

const noEscalation = `
tier: admin
rules:
  - id: no-escalation
    intents: [escalate]
    decision: deny
    reason_code: escalation_forbidden
    message: sandboxes are never widened here
  - id: allow-rest
    tools: ["*"]
    priority: -1
    decision: allow
    reason_code: allowed
`

func TestRulesCanForbidEscalation(t *testing.T) {
	t.Parallel()
	rt, m, ws := shellRuntime(t, profile(t, "read_only"), kernel(t, noEscalation), agentrt.Config{},
		shellCall("call_1", "echo built > out.txt"),
	)
	tb := &testBundle{rt: rt}
	res, turn := tb.submit(t, &apitype.SubmitTurnParams{Agent: "a", Input: "build"})
	if turn.Status != runtype.StatusCompleted {
		t.Fatalf("status = %s (%s), want completed without an action", turn.Status, turn.StatusReason)
	}
	if _, err := os.Stat(filepath.Join(ws, "out.txt")); err == nil {
		t.Error("the write landed")
	}
	if seen := m.seen("call_1"); !strings.Contains(seen, "escalation_forbidden") {
		t.Errorf("the model saw %q, want the forbidden escalation explained", seen)
	}
	var denied bool
	for _, e := range tb.sessionEvents(t, runtype.Owner{}, res.SessionID) {
		if e.Type == event.PermissionEvaluated && e.PermissionDecision.Decision == "deny" && strings.Contains(strings.Join(e.PermissionDecision.RuleIDs, ","), "no-escalation") {
			denied = true
		}
	}
	if !denied {
		t.Error("no permission.evaluated deny by rule no-escalation")
	}
}

// TestBypassDoesNotEscalate: bypass mode allows the call but not a wider
// sandbox for it. Without a rule that allows intent escalate, the write
// the read_only sandbox refused waits for a person instead of rerunning
// under workspace_write; with one, it reruns at once.
func TestBypassDoesNotEscalate(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name  string
		rules string
		want  runtype.TaskStatus
	}{
		{"no escalate rule", "rules: []\n", runtype.StatusWaitingPermission},
		{"a rule allows escalate", "rules:\n  - {id: widen, intents: [escalate], decision: allow, reason_code: widen_ok}\n", runtype.StatusCompleted},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rules, err := policy.ParseRules("rules.yaml", []byte(tt.rules))
			if err != nil {
				t.Fatal(err)
			}
			k, err := policy.NewKernel(policy.KernelConfig{Rules: rules, DefaultMode: policy.ModeBypass})
			if err != nil {
				t.Fatal(err)
			}
			rt, _, ws := shellRuntime(t, profile(t, "read_only"), k, agentrt.Config{}, shellCall("call_1", "echo built > out.txt"))
			tb := &testBundle{rt: rt}
			res, turn := tb.submit(t, &apitype.SubmitTurnParams{Agent: "a", Input: "build"})
			if turn.Status != tt.want {
				t.Fatalf("status = %s (%s), want %s", turn.Status, turn.StatusReason, tt.want)
			}
			_, err = os.Stat(filepath.Join(ws, "out.txt"))
			if written := err == nil; written != (tt.want == runtype.StatusCompleted) {
				t.Errorf("out.txt written = %v, want %v", written, tt.want == runtype.StatusCompleted)
			}
			var escalation *event.PermissionDecision
			for _, e := range tb.sessionEvents(t, runtype.Owner{}, res.SessionID) {
				if e.Type == event.PermissionEvaluated && e.ToolCallID == "call_1" {
					escalation = e.PermissionDecision // the last is the escalation's
				}
			}
			switch {
			case escalation == nil:
				t.Fatal("no permission.evaluated for the escalation")
			case tt.want == runtype.StatusCompleted && (escalation.Decision != "allow" || escalation.ReasonCode != "widen_ok"):
				t.Errorf("escalation decision = %+v, want allow by rule widen", escalation)
			case tt.want != runtype.StatusCompleted && (escalation.Decision != "ask" || escalation.ReasonCode != policy.ReasonEscalationNeedsApproval || escalation.Mode != "bypass"):
				t.Errorf("escalation decision = %+v, want ask (%s) in bypass mode", escalation, policy.ReasonEscalationNeedsApproval)
			}
			if tt.want != runtype.StatusCompleted {
				acts, err := rt.ListActions(context.Background(), &apitype.ListActionsParams{TurnID: res.TurnID, Status: runtype.ActionPending})
				if err != nil || len(acts) != 1 || acts[0].Type != "sandbox_escalation" {
					t.Errorf("pending actions = %+v, %v; want one sandbox_escalation", acts, err)
				}
			}
		})
	}
}

// TestSecretsAreRedactedFromToolOutput: a declared secret and a token
// shape printed by a tool reach neither the model, nor the events, nor
// the data directory.
func TestSecretsAreRedactedFromToolOutput(t *testing.T) {
	t.Parallel()
	const secret = "s3cr3t-value-0123456789"
	const token = "ghp_0123456789abcdefghijABCDEFGHIJ012345"
	cfg := agentrt.Config{DataDir: t.TempDir()}
	cfg.Redact.Secrets = []string{secret}
	cfg.Output.Inline = 1024
	// The tool prints what a file holds: the secrets are in its output,
	// not in the arguments the model wrote.
	cmd := "cat creds.txt; head -c 100000 /dev/zero | tr '\\0' x; echo; cat creds.txt"
	rt, m, ws := shellRuntime(t, profile(t, "workspace_write"), nil, cfg, shellCall("call_1", cmd))
	if err := os.WriteFile(filepath.Join(ws, "creds.txt"), []byte("key="+secret+"\ntoken="+token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tb := &testBundle{rt: rt}
	res, turn := tb.submit(t, &apitype.SubmitTurnParams{Agent: "a", Input: "print"})
	if turn.Status != runtype.StatusCompleted {
		t.Fatalf("status = %s", turn.Status)
	}
	seen := m.seen("call_1")
	if strings.Contains(seen, secret) || strings.Contains(seen, token) || !strings.Contains(seen, "REDACTED") {
		t.Errorf("the model saw %q", seen)
	}
	var redacted, spilled bool
	for _, e := range tb.sessionEvents(t, runtype.Owner{}, res.SessionID) {
		raw, _ := e.JSON()
		if strings.Contains(string(raw), secret) || strings.Contains(string(raw), token) {
			t.Errorf("%s carries a secret", e.Type)
		}
		redacted = redacted || e.Type == event.OutputRedacted
		spilled = spilled || e.Type == event.OutputSpilled && e.OutputRef != ""
	}
	if !redacted || !spilled {
		t.Errorf("output.redacted %v, output.spilled %v; want both", redacted, spilled)
	}
	rt.Stop(context.Background())
	dir := cfg.DataDir
	filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, _ := os.ReadFile(path)
		if strings.Contains(string(b), secret) || strings.Contains(string(b), token) {
			t.Errorf("%s holds a secret", path)
		}
		return nil
	})
}

// TestEndedRunEndsItsProcesses: a background process a turn started does
// not outlive the turn.
func TestEndedRunEndsItsProcesses(t *testing.T) {
	t.Parallel()
	bg := &model.Response{ToolCalls: []runtype.MessageToolCall{{ID: "call_1", Name: "shell",
		Arguments: `{"command":"sleep 1000","background":true,"yield_ms":10}`}}}
	rt, m, _ := shellRuntime(t, profile(t, "workspace_write"), nil, agentrt.Config{}, bg)
	tb := &testBundle{rt: rt}
	res, turn := tb.submit(t, &apitype.SubmitTurnParams{Agent: "a", Input: "start a server"})
	if turn.Status != runtype.StatusCompleted {
		t.Fatalf("status = %s", turn.Status)
	}
	if seen := m.seen("call_1"); !strings.Contains(seen, `"status":"running"`) {
		t.Fatalf("the model saw %q, want a running process", seen)
	}
	sub, err := rt.Subscribe(context.Background(), &apitype.SubscribeParams{SessionID: res.SessionID})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for {
		e, err := sub.Next(ctx)
		if err != nil {
			t.Fatalf("waiting for the process to end: %v", err)
		}
		if p, ok := e.Payload.(*event.ProcessPayload); ok && e.Type == event.ProcessTerminated {
			if p.Reason != "run_ended" {
				t.Errorf("process.terminated reason %q, want run_ended", p.Reason)
			}
			break
		}
	}
	procs, err := rt.ListProcesses(context.Background(), runtype.Owner{}, res.SessionID)
	if err != nil || len(procs) != 0 {
		t.Errorf("processes after the turn: %+v, %v", procs, err)
	}
	// A process that is gone is the contract's unknown process, a not
	// found.
	err = rt.TerminateProcess(context.Background(), runtype.Owner{}, res.SessionID, "proc_gone")
	if !errors.Is(err, apitype.ErrUnknownProcess) || !errors.Is(err, apitype.ErrNotFound) {
		t.Errorf("TerminateProcess of a gone process = %v, want apitype.ErrUnknownProcess and ErrNotFound", err)
	}
}

// procSeer is a seer whose scripted calls name the processes earlier
// calls started: "@call_1" in a call's arguments becomes the process id
// call_1's result returned. args are the arguments it sent, by call id.
type procSeer struct {
	seer
	args map[string]string // guarded by mu
}

var procRef = regexp.MustCompile(`@(call_[a-z0-9_]+)`)

func (m *procSeer) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	resp, err := m.seer.Generate(ctx, req)
	if err != nil {
		return nil, err
	}
	out := *resp
	out.ToolCalls = slices.Clone(resp.ToolCalls)
	for i, tc := range out.ToolCalls {
		out.ToolCalls[i].Arguments = procRef.ReplaceAllStringFunc(tc.Arguments, func(ref string) string {
			var st struct {
				ProcessID string `json:"process_id"`
			}
			_ = json.Unmarshal([]byte(m.seen(ref[1:])), &st)
			return st.ProcessID
		})
		m.mu.Lock()
		m.args[tc.ID] = out.ToolCalls[i].Arguments
		m.mu.Unlock()
	}
	return &out, nil
}

func toolCalls(calls ...runtype.MessageToolCall) *model.Response {
	return &model.Response{ToolCalls: calls}
}

func writeStdin(id, process, chars string) runtype.MessageToolCall {
	in, _ := json.Marshal(map[string]any{"process_id": process, "chars": chars, "yield_ms": 200})
	return runtype.MessageToolCall{ID: id, Name: "write_process_stdin", Arguments: string(in)}
}

// TestStdinToShellIsDecidedAsShell: text the model writes to a running
// bash is decided as the shell command it is — command rules, a hook
// matching shell, and a line split across two writes of one hop — while
// text written to cat is decided as write_process_stdin. Every decision
// names the real call (write_process_stdin and its arguments' hash).
func TestStdinToShellIsDecidedAsShell(t *testing.T) {
	t.Parallel()
	rules, err := policy.ParseRules("rules.yaml", []byte(`rules:
  - {id: no-rm, tools: [shell], command: {prefix: rm}, decision: deny, reason_code: rm_denied}
`))
	if err != nil {
		t.Fatal(err)
	}
	k, err := policy.NewKernel(policy.KernelConfig{Rules: rules, DefaultMode: policy.ModeBypass})
	if err != nil {
		t.Fatal(err)
	}
	block := filepath.Join(t.TempDir(), "block.sh")
	if err := os.WriteFile(block, []byte("#!/bin/sh\ncase \"$(cat)\" in *forbidden*) echo 'no forbidden words' >&2; exit 2;; esac\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	m := &procSeer{args: map[string]string{}, seer: seer{tools: map[string]string{}, resps: []*model.Response{
		toolCalls(
			runtype.MessageToolCall{ID: "call_bash", Name: "exec", Arguments: `{"argv":["bash"],"background":true,"yield_ms":10}`},
			runtype.MessageToolCall{ID: "call_cat", Name: "exec", Arguments: `{"argv":["cat"],"background":true,"yield_ms":10}`},
		),
		toolCalls(writeStdin("call_rm", "@call_bash", "rm -f victim.txt\n")),
		toolCalls(writeStdin("call_split1", "@call_bash", "echo split; r"), writeStdin("call_split2", "@call_bash", "m -f victim.txt\n")),
		toolCalls(writeStdin("call_hook", "@call_bash", "echo forbidden > victim.txt\n")),
		toolCalls(writeStdin("call_ls", "@call_bash", "\nls\n")),
		toolCalls(writeStdin("call_cat_rm", "@call_cat", "rm -f victim.txt\n")),
	}}}
	cfg := agentrt.Config{Hooks: []hook.Config{{Name: "no-forbidden", Point: hook.PreToolUse, Matcher: "shell", Command: block}}}
	rt, ws := shellRuntimeWith(t, profile(t, "workspace_write"), k, cfg, m)
	if err := os.WriteFile(filepath.Join(ws, "victim.txt"), []byte("still here\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tb := &testBundle{rt: rt}
	res, turn := tb.submit(t, &apitype.SubmitTurnParams{Agent: "a", Input: "drive a shell"})
	if turn.Status != runtype.StatusCompleted {
		t.Fatalf("status = %s (%s)", turn.Status, turn.StatusReason)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "victim.txt")); err != nil || string(b) != "still here\n" {
		t.Errorf("victim.txt = %q, %v; want it untouched", b, err)
	}
	if seen := m.seen("call_ls"); !strings.Contains(seen, "victim.txt") {
		t.Errorf("ls through the shell printed %q, want the listing", seen)
	}
	if seen := m.seen("call_cat_rm"); !strings.Contains(seen, "rm -f victim.txt") {
		t.Errorf("cat printed %q, want the text echoed", seen)
	}
	want := map[string][2]string{ // call → decision, reason
		"call_rm":     {"deny", "rm_denied"},
		"call_split1": {"allow", "mode_bypass"},
		"call_split2": {"deny", "rm_denied"},
		"call_hook":   {"deny", "hook_blocked"},
		"call_ls":     {"allow", "mode_bypass"},
		"call_cat_rm": {"allow", "mode_bypass"},
	}
	got := map[string][2]string{}
	for _, e := range tb.sessionEvents(t, runtype.Owner{}, res.SessionID) {
		if e.Type != event.PermissionEvaluated || want[e.ToolCallID] == [2]string{} {
			continue
		}
		pd := e.PermissionDecision
		got[e.ToolCallID] = [2]string{pd.Decision, pd.ReasonCode}
		m.mu.Lock()
		sum := tool.ArgumentsSHA256(json.RawMessage(m.args[e.ToolCallID]))
		m.mu.Unlock()
		if pd.ToolName != "write_process_stdin" || pd.ArgumentsSHA256 != sum {
			t.Errorf("%s: permission.evaluated names %s (arguments %s), want write_process_stdin (arguments %s)", e.ToolCallID, pd.ToolName, pd.ArgumentsSHA256, sum)
		}
		if e.ToolCallID == "call_rm" && !strings.Contains(pd.Message, "runs a shell") {
			t.Errorf("call_rm: message %q does not say it was decided as a shell call", pd.Message)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("decisions (-want +got):\n%s", diff)
	}
}

// TestGrantsDoNotAnswerOpaqueAsks: approving shell for the session lets
// later shell calls run without asking, but not one whose command line
// the policy cannot see into: that ask is about this call's content.
func TestGrantsDoNotAnswerOpaqueAsks(t *testing.T) {
	t.Parallel()
	k, err := policy.NewKernel(policy.KernelConfig{})
	if err != nil {
		t.Fatal(err)
	}
	rt, _, _ := shellRuntime(t, profile(t, "workspace_write"), k, agentrt.Config{},
		shellCall("call_1", "echo one"), &model.Response{Text: "ok"},
		shellCall("call_2", "echo two"), &model.Response{Text: "ok"},
		shellCall("call_3", "$(echo echo) three"), &model.Response{Text: "ok"},
	)
	g := &govBundle{rt: rt, tb: &testBundle{rt: rt}}
	res, turn := g.submit(t, "grants")
	if turn.Status != runtype.StatusWaitingPermission {
		t.Fatalf("first turn %s, want waiting_permission", turn.Status)
	}
	g.respond(t, &apitype.RespondActionParams{ActionID: g.pending(t, res.TurnID)[0].ActionID, Decision: runtype.DecisionApproveForSession})
	if turn := g.wait(t, res.TurnID); turn.Status != runtype.StatusCompleted {
		t.Fatalf("first turn after the grant %s", turn.Status)
	}
	if _, turn := g.submit(t, "grants"); turn.Status != runtype.StatusCompleted {
		t.Errorf("echo two after the grant: %s, want completed without asking", turn.Status)
	}
	res, turn = g.submit(t, "grants")
	if turn.Status != runtype.StatusWaitingPermission {
		t.Fatalf("an opaque command after the grant: %s, want waiting_permission", turn.Status)
	}
	if acts := g.pending(t, res.TurnID); len(acts) != 1 || acts[0].ReasonCode != policy.ReasonOpaqueCommand {
		t.Errorf("pending = %+v, want one ask for the opaque command", acts)
	}
}
