package process_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/internal/testenv"
	"github.com/agentrt/agentrt/output"
	"github.com/agentrt/agentrt/sandbox"
	"github.com/agentrt/agentrt/tool"
	"github.com/agentrt/agentrt/tool/process"
)

// promptly bounds how long a call that must not wait for its command may
// take. It is far below the commands' 60 s sleeps.
const promptly = 20 * time.Second

// Secrets the redaction tests print.
const (
	declaredSecret = "hunter2-declared-secret-value"
	tokenSecret    = "sk-proj-Abc123def456GHI789jkl012MNO345pqr678"
)

// emitted is one recorded event.
type emitted struct {
	ref process.Ref
	typ event.Type
	p   event.Payload
}

func (e emitted) process() *event.ProcessPayload {
	p, _ := e.p.(*event.ProcessPayload)
	return p
}

// recorder records events and signals each one.
type recorder struct {
	mu      sync.Mutex
	events  []emitted
	notify  chan struct{}
	onEvent func(emitted) // set before any event
}

func newRecorder() *recorder { return &recorder{notify: make(chan struct{}, 1)} }

func (r *recorder) add(e emitted) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
	if r.onEvent != nil {
		r.onEvent(e)
	}
	select {
	case r.notify <- struct{}{}:
	default:
	}
}

func (r *recorder) all() []emitted {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

// of returns the events a call emitted.
func (r *recorder) of(callID string) []emitted {
	var es []emitted
	for _, e := range r.all() {
		if e.ref.ToolCallID == callID {
			es = append(es, e)
		}
	}
	return es
}

// waitFor waits until an event satisfying ok has been recorded.
func (r *recorder) waitFor(t *testing.T, what string, ok func(emitted) bool) emitted {
	t.Helper()
	deadline := time.NewTimer(promptly)
	defer deadline.Stop()
	for {
		for _, e := range r.all() {
			if ok(e) {
				return e
			}
		}
		select {
		case <-r.notify:
		case <-deadline.C:
			t.Fatalf("no %s within %v; events: %v", what, promptly, typesOf(r.all()))
		}
	}
}

func typesOf(es []emitted) []event.Type {
	ts := make([]event.Type, len(es))
	for i, e := range es {
		ts[i] = e.typ
	}
	return ts
}

// testBundle is what a test works with.
type testBundle struct {
	m        *process.Manager
	sb       *sandbox.Sandbox
	profile  sandbox.Profile
	ws       string
	root     *os.Root
	store    *output.Store
	redactor *output.Redactor
	calls    *recorder // every call's Emit, with the call's ids
	bg       *recorder // Options.Emit
	nextID   atomic.Int64
}

// setup makes a manager with the real sandbox (bubblewrap) and a fresh
// workspace; opts adjust the manager's options.
func setup(t *testing.T, opts ...func(*process.Options)) *testBundle {
	t.Helper()
	if _, err := exec.LookPath("bwrap"); err != nil {
		testenv.Missing(t, "no bubblewrap to sandbox test commands: %v", err)
	}
	return setupSandbox(t, sandbox.Options{}, sandbox.Bubblewrap, opts...)
}

// setupSandbox is setup with a sandbox made with sbOpts, which must
// enforce profiles with enforcer.
func setupSandbox(t *testing.T, sbOpts sandbox.Options, enforcer sandbox.Enforcer, opts ...func(*process.Options)) *testBundle {
	t.Helper()
	sb := sandbox.New(sbOpts)
	if enf, err := sb.Enforcer(); err != nil || enf != enforcer {
		testenv.Missing(t, "%s cannot enforce profiles here (enforcer %q): %v", enforcer, enf, err)
	}
	profile, ok := sandbox.Builtin("workspace_write")
	if !ok {
		t.Fatal("no builtin workspace_write profile")
	}
	ws := t.TempDir()
	root, err := os.OpenRoot(ws)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	store, err := output.NewStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	b := &testBundle{
		sb:       sb,
		profile:  profile,
		ws:       ws,
		root:     root,
		store:    store,
		redactor: output.NewRedactor(output.RedactorConfig{Secrets: []string{declaredSecret}}),
		calls:    newRecorder(),
		bg:       newRecorder(),
	}
	o := process.Options{
		EnvAllow: []string{allowedVar},
		Grace:    200 * time.Millisecond,
		Emit: func(ref process.Ref, typ event.Type, p event.Payload) {
			b.bg.add(emitted{ref: ref, typ: typ, p: p})
		},
	}
	for _, opt := range opts {
		opt(&o)
	}
	b.m = process.NewManager(o)
	t.Cleanup(b.m.Close)
	return b
}

// newCall returns a call with fresh ids in session sess-1, run run-1.
func (b *testBundle) newCall(t *testing.T, input any) *tool.Call {
	t.Helper()
	raw, err := json.Marshal(input)
	if err != nil {
		t.Fatal(err)
	}
	id := fmt.Sprintf("call-%d", b.nextID.Add(1))
	c := &tool.Call{
		ID:             id,
		SessionID:      "sess-1",
		TurnID:         "turn-1",
		RunID:          "run-1",
		IdempotencyKey: "idem-" + id,
		Input:          raw,
		Workspace:      b.root,
		WorkspaceDir:   b.ws,
		Sandbox:        b.sb,
		Profile:        &b.profile,
		Outputs:        b.store,
		Redactor:       b.redactor,
	}
	c.Emit = func(typ event.Type, p event.Payload) {
		b.calls.add(emitted{ref: process.Ref{SessionID: c.SessionID, TurnID: c.TurnID, RunID: c.RunID, ToolCallID: c.ID}, typ: typ, p: p})
	}
	return c
}

// tool returns the manager's tool named name.
func (b *testBundle) tool(t *testing.T, name string) tool.Tool {
	t.Helper()
	for _, x := range b.m.Tools() {
		if x.Spec().Name == name {
			return x
		}
	}
	t.Fatalf("no tool %s", name)
	return nil
}

// call runs the tool named name, which must return within promptly.
func (b *testBundle) call(t *testing.T, ctx context.Context, name string, c *tool.Call) *tool.Result {
	t.Helper()
	tl := b.tool(t, name)
	if ctx == nil {
		ctx = t.Context()
	}
	start := time.Now()
	res, err := tl.Call(ctx, c)
	if err != nil {
		t.Fatalf("%s returned a Go error: %v", name, err)
	}
	if d := time.Since(start); d > promptly {
		t.Fatalf("%s took %v", name, d)
	}
	return res
}

// content is a result's content, decoded.
type content struct {
	ProcessID  string `json:"process_id"`
	Status     string `json:"status"`
	ExitCode   *int   `json:"exit_code"`
	Signal     string `json:"signal"`
	Terminated string `json:"terminated"`
	Reason     string `json:"reason"`
	Violation  string `json:"violation"`
	Error      string `json:"error"`
	Output     string `json:"output"`
	OutputRef  string `json:"output_ref"`
	Truncated  bool   `json:"truncated"`
}

func decode(t *testing.T, res *tool.Result) content {
	t.Helper()
	var c content
	if err := json.Unmarshal([]byte(res.Content), &c); err != nil {
		t.Fatalf("result content %q is not the expected JSON: %v", res.Content, err)
	}
	return c
}

func exitCode(c content) int {
	if c.ExitCode == nil {
		return -1
	}
	return *c.ExitCode
}

// collapse returns the types of es with runs of process.output as one.
func collapse(es []emitted) []event.Type {
	var ts []event.Type
	for _, e := range es {
		if e.typ == event.ProcessOutput && len(ts) > 0 && ts[len(ts)-1] == event.ProcessOutput {
			continue
		}
		ts = append(ts, e.typ)
	}
	return ts
}

func TestShellSuccess(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.newCall(t, map[string]any{"command": `echo hello; echo "ids=$AGENTRT_TOOL_CALL_ID/$AGENTRT_SESSION_ID/$AGENTRT_TURN_ID/$AGENTRT_IDEMPOTENCY_KEY"; ` +
		`echo "secret=${` + secretVar + `:-unset}"; echo "allowed=$` + allowedVar + `"; echo oops >&2`})
	res := b.call(t, nil, process.ShellName, c)
	got := decode(t, res)
	if res.IsError || exitCode(got) != 0 {
		t.Fatalf("result = %+v, want exit code 0", res)
	}
	for _, want := range []string{
		"hello\n",
		"ids=" + c.ID + "/sess-1/turn-1/idem-" + c.ID + "\n",
		"secret=unset\n",
		"allowed=allowed-value\n",
		"oops\n",
	} {
		if !strings.Contains(got.Output, want) {
			t.Errorf("output %q lacks %q", got.Output, want)
		}
	}
	if res.Output == nil || res.Output.Spilled {
		t.Errorf("Result.Output = %+v, want the inline output", res.Output)
	}

	es := b.calls.of(c.ID)
	want := []event.Type{event.SandboxApplied, event.ProcessStarted, event.ProcessOutput, event.ProcessCompleted}
	if diff := cmp.Diff(want, collapse(es)); diff != "" {
		t.Fatalf("event types (-want +got):\n%s", diff)
	}
	applied := es[0].p.(*event.SandboxPayload)
	started := es[1].process()
	if applied.Profile != "workspace_write" || applied.Enforcer != "bubblewrap" || applied.ProcessID == "" {
		t.Errorf("sandbox.applied = %+v", applied)
	}
	if started.ProcessID != applied.ProcessID || started.Pid <= 0 || !strings.HasPrefix(started.Command, "echo hello") {
		t.Errorf("process.started = %+v", started)
	}
	var stdout, stderr strings.Builder
	var data int64
	for i, e := range es[2 : len(es)-1] {
		p := e.process()
		if p.Seq != i+1 {
			t.Errorf("chunk %d has seq %d", i+1, p.Seq)
		}
		data += int64(len(p.Data))
		switch p.Stream {
		case "stdout":
			stdout.WriteString(p.Data)
		case "stderr":
			stderr.WriteString(p.Data)
		default:
			t.Errorf("chunk %d has stream %q", i+1, p.Stream)
		}
	}
	if !strings.HasPrefix(stdout.String(), "hello\n") || stderr.String() != "oops\n" {
		t.Errorf("process.output stdout %q, stderr %q", stdout.String(), stderr.String())
	}
	end := es[len(es)-1].process()
	if end.ProcessID != started.ProcessID || end.ExitCode == nil || *end.ExitCode != 0 || end.Bytes != data {
		t.Errorf("process.completed = %+v, want exit code 0 and %d bytes", end, data)
	}
	if infos := b.m.List("sess-1"); len(infos) != 0 {
		t.Errorf("List after the call = %+v, want none", infos)
	}
}

func TestExec(t *testing.T) {
	t.Parallel()
	b := setup(t)
	if err := os.Mkdir(filepath.Join(b.ws, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(b.ws, "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(t.TempDir(), filepath.Join(b.ws, "out")); err != nil {
		t.Fatal(err)
	}

	t.Run("argv without a shell", func(t *testing.T) {
		t.Parallel()
		res := b.call(t, nil, process.ExecName, b.newCall(t, map[string]any{"argv": []string{"printf", "%s|", "a b", "$HOME", "c"}}))
		if got := decode(t, res); res.IsError || got.Output != "a b|$HOME|c|" {
			t.Errorf("result = %+v, want output %q", res, "a b|$HOME|c|")
		}
	})
	t.Run("cwd inside the workspace", func(t *testing.T) {
		t.Parallel()
		res := b.call(t, nil, process.ExecName, b.newCall(t, map[string]any{"argv": []string{"pwd"}, "cwd": "sub"}))
		if got := decode(t, res); res.IsError || !strings.HasSuffix(strings.TrimSpace(got.Output), "/sub") {
			t.Errorf("result = %+v, want a directory ending in /sub", res)
		}
	})
	for _, tt := range []struct{ cwd, want string }{
		{"../x", "leaves the workspace"},
		{"sub/../..", "leaves the workspace"},
		{"/etc", "absolute"},
		{"out", "cwd"},
		{"missing", "cwd"},
		{"file", "not a directory"},
	} {
		t.Run("cwd "+tt.cwd+" refused", func(t *testing.T) {
			t.Parallel()
			c := b.newCall(t, map[string]any{"argv": []string{"touch", "ran"}, "cwd": tt.cwd})
			res := b.call(t, nil, process.ExecName, c)
			if !res.IsError || !strings.Contains(res.Content, tt.want) {
				t.Errorf("result = %+v, want an error mentioning %q", res, tt.want)
			}
			if es := b.calls.of(c.ID); len(es) != 0 {
				t.Errorf("events %v, want none", typesOf(es))
			}
		})
	}
	t.Run("env cannot set PATH", func(t *testing.T) {
		t.Parallel()
		res := b.call(t, nil, process.ExecName, b.newCall(t, map[string]any{"argv": []string{"true"}, "env": map[string]string{"PATH": "/tmp"}}))
		if !res.IsError || !strings.Contains(res.Content, "PATH") {
			t.Errorf("result = %+v, want PATH refused", res)
		}
	})
	t.Run("env sets a variable", func(t *testing.T) {
		t.Parallel()
		res := b.call(t, nil, process.ShellName, b.newCall(t, map[string]any{"command": `echo "$GREETING"`, "env": map[string]string{"GREETING": "hi there"}}))
		if got := decode(t, res); got.Output != "hi there\n" {
			t.Errorf("output = %q, want %q", got.Output, "hi there\n")
		}
	})
}

func TestEndings(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tests := []struct {
		name      string
		input     map[string]any
		wantEvent event.Type
		wantCode  int // -1: none (killed)
		reason    string
		output    string // contained in the output
	}{
		{
			name:      "non-zero exit",
			input:     map[string]any{"command": "echo failing; exit 3"},
			wantEvent: event.ProcessFailed,
			wantCode:  3,
			output:    "failing",
		},
		{
			name:      "timeout",
			input:     map[string]any{"command": "sleep 60", "timeout_ms": 300},
			wantEvent: event.ProcessTerminated,
			wantCode:  -2, // whatever the kill gives
			reason:    "timeout",
		},
		{
			name:      "inactivity",
			input:     map[string]any{"command": "echo once; sleep 60", "idle_timeout_ms": 500},
			wantEvent: event.ProcessTerminated,
			wantCode:  -2,
			reason:    "inactivity",
			output:    "once",
		},
		{
			name:      "TERM ignored",
			input:     map[string]any{"command": "trap '' TERM; echo trapped; while :; do sleep 1; done", "timeout_ms": 500},
			wantEvent: event.ProcessTerminated,
			wantCode:  -2,
			reason:    "timeout",
			output:    "trapped",
		},
		{
			name:      "stdin",
			input:     map[string]any{"command": "cat; echo end", "stdin": "line1\nline2\n"},
			wantEvent: event.ProcessCompleted,
			wantCode:  0,
			output:    "line1\nline2\nend\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := b.newCall(t, tt.input)
			res := b.call(t, nil, process.ShellName, c)
			got := decode(t, res)
			if res.IsError != (tt.wantEvent != event.ProcessCompleted) {
				t.Errorf("IsError = %v for %s", res.IsError, res.Content)
			}
			if tt.wantCode != -2 && exitCode(got) != tt.wantCode {
				t.Errorf("exit code = %d, want %d (%s)", exitCode(got), tt.wantCode, res.Content)
			}
			if got.Terminated != tt.reason {
				t.Errorf("terminated = %q, want %q (%s)", got.Terminated, tt.reason, res.Content)
			}
			if !strings.Contains(got.Output, tt.output) {
				t.Errorf("output = %q, want it to contain %q", got.Output, tt.output)
			}
			es := b.calls.of(c.ID)
			last := es[len(es)-1]
			if last.typ != tt.wantEvent || last.process().Reason != tt.reason {
				t.Errorf("last event = %s %+v, want %s with reason %q", last.typ, last.process(), tt.wantEvent, tt.reason)
			}
		})
	}
}

// TestGraceThenKill runs under Landlock, where the command itself leads
// its process group: a shell ignoring SIGTERM is killed with SIGKILL once
// the grace period has passed. (Under bubblewrap SIGTERM ends bwrap, and
// with it the sandbox, at once.)
func TestGraceThenKill(t *testing.T) {
	t.Parallel()
	b := setupSandbox(t, sandbox.Options{NoBubblewrap: true}, sandbox.Landlock, func(o *process.Options) { o.Grace = 300 * time.Millisecond })
	c := b.newCall(t, map[string]any{"command": "trap '' TERM; echo trapped; while :; do sleep 1; done", "timeout_ms": 200})
	res := b.call(t, nil, process.ShellName, c)
	got := decode(t, res)
	if !res.IsError || got.Terminated != "timeout" || got.Signal != "SIGKILL" || !strings.Contains(got.Output, "trapped") {
		t.Errorf("result = %s, want killed by SIGKILL after a timeout", res.Content)
	}
	es := b.calls.of(c.ID)
	end := es[len(es)-1].process()
	if es[len(es)-1].typ != event.ProcessTerminated || end.Signal != "SIGKILL" || end.DurationMs < 500 {
		t.Errorf("last event = %s %+v, want process.terminated by SIGKILL after 200 ms + 300 ms", es[len(es)-1].typ, end)
	}
}

func TestCancelKillsAtOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	c := b.newCall(t, map[string]any{"command": "sleep 60"})
	emit := c.Emit
	c.Emit = func(typ event.Type, p event.Payload) {
		emit(typ, p)
		if typ == event.ProcessStarted {
			cancel()
		}
	}
	res := b.call(t, ctx, process.ShellName, c)
	got := decode(t, res)
	if !res.IsError || got.Terminated != "cancelled" || !strings.Contains(got.Error, "interrupted") {
		t.Errorf("result = %+v, want interrupted", res)
	}
	es := b.calls.of(c.ID)
	if last := es[len(es)-1]; last.typ != event.ProcessTerminated || last.process().Reason != "cancelled" {
		t.Errorf("last event = %s %+v, want process.terminated (cancelled)", last.typ, last.p)
	}
}

func TestBackground(t *testing.T) {
	t.Parallel()
	b := setup(t)
	start := b.newCall(t, map[string]any{"command": "while read l; do echo got:$l; done; echo bye", "background": true, "yield_ms": 100})
	res := b.call(t, nil, process.ShellName, start)
	got := decode(t, res)
	if res.IsError || got.Status != "running" || !strings.HasPrefix(got.ProcessID, "proc_") {
		t.Fatalf("result = %+v, want a running process", res)
	}
	id := got.ProcessID
	startRef := process.Ref{SessionID: "sess-1", TurnID: "turn-1", RunID: "run-1", ToolCallID: start.ID}
	infos := b.m.List("sess-1")
	if len(infos) != 1 || infos[0].ID != id || !infos[0].Background || infos[0].Pid <= 0 || infos[0].RunID != "run-1" {
		t.Errorf("List = %+v, want the process", infos)
	}

	t.Run("another session cannot reach it", func(t *testing.T) {
		for _, name := range []string{process.WriteName, process.TerminateName} {
			c := b.newCall(t, map[string]any{"process_id": id, "chars": "intruder\n", "yield_ms": 0})
			c.SessionID = "sess-2"
			if res := b.call(t, nil, name, c); !res.IsError || !strings.Contains(res.Content, "unknown process") {
				t.Errorf("%s from another session = %+v, want unknown process", name, res)
			}
		}
	})

	w := b.newCall(t, map[string]any{"process_id": id, "chars": "x\n", "yield_ms": 2000})
	res = b.call(t, nil, process.WriteName, w)
	got = decode(t, res)
	if res.IsError || got.Status != "running" || got.Output != "got:x\n" {
		t.Errorf("write_process_stdin = %+v, want running with output got:x", res)
	}
	if es := b.calls.of(w.ID); len(es) != 1 || es[0].typ != event.ProcessInput || es[0].process().Data != "x\n" || es[0].process().ProcessID != id {
		t.Errorf("write_process_stdin events = %+v, want one process.input", es)
	}
	// Output after the starting call returned goes to Options.Emit.
	b.bg.waitFor(t, "process.output got:x", func(e emitted) bool {
		return e.typ == event.ProcessOutput && e.ref == startRef && strings.Contains(e.process().Data, "got:x")
	})

	if err := b.m.Write(t.Context(), id, "y\n", false); err != nil {
		t.Fatalf("Manager.Write: %v", err)
	}
	b.bg.waitFor(t, "process.input y", func(e emitted) bool {
		return e.typ == event.ProcessInput && e.ref == startRef && e.process().Data == "y\n"
	})
	res = b.call(t, nil, process.WriteName, b.newCall(t, map[string]any{"process_id": id, "chars": "z\n", "yield_ms": 2000}))
	if got := decode(t, res); got.Output != "got:y\ngot:z\n" {
		t.Errorf("write_process_stdin output = %q, want got:y and got:z", got.Output)
	}

	res = b.call(t, nil, process.TerminateName, b.newCall(t, map[string]any{"process_id": id}))
	got = decode(t, res)
	if res.IsError || got.Status != "terminated" || got.Reason != "terminated" {
		t.Errorf("terminate_process = %+v, want terminated", res)
	}
	end := b.bg.waitFor(t, "process.terminated", func(e emitted) bool { return e.typ == event.ProcessTerminated })
	if end.ref != startRef || end.process().Reason != "terminated" || end.process().ProcessID != id {
		t.Errorf("final event = %+v %+v, want process.terminated (terminated) for the starting call", end.ref, end.p)
	}

	if res := b.call(t, nil, process.WriteName, b.newCall(t, map[string]any{"process_id": id, "chars": "late\n"})); !res.IsError || !strings.Contains(res.Content, "unknown process") {
		t.Errorf("write after terminate = %+v, want unknown process", res)
	}
	if err := b.m.Write(t.Context(), id, "late\n", false); !errors.Is(err, process.ErrUnknownProcess) {
		t.Errorf("Manager.Write after terminate = %v, want ErrUnknownProcess", err)
	}
	if err := b.m.Terminate(t.Context(), id, ""); !errors.Is(err, process.ErrUnknownProcess) {
		t.Errorf("Manager.Terminate after terminate = %v, want ErrUnknownProcess", err)
	}
	if infos := b.m.List("sess-1"); len(infos) != 0 {
		t.Errorf("List after terminate = %+v, want none", infos)
	}
}

func TestBackgroundExitsWithinYield(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.newCall(t, map[string]any{"command": "echo done", "background": true, "yield_ms": 10000})
	res := b.call(t, nil, process.ShellName, c)
	got := decode(t, res)
	if res.IsError || got.Status != "exited" || exitCode(got) != 0 || got.Output != "done\n" {
		t.Errorf("result = %+v, want exited with output done", res)
	}
	if es := b.calls.of(c.ID); es[len(es)-1].typ != event.ProcessCompleted {
		t.Errorf("events %v, want process.completed last", typesOf(es))
	}
}

func TestKillRun(t *testing.T) {
	t.Parallel()
	b := setup(t, func(o *process.Options) { o.MaxLive = 2 })
	startSleep := func(session, run string) *tool.Result {
		c := b.newCall(t, map[string]any{"argv": []string{"sleep", "60"}, "background": true, "yield_ms": 0})
		c.SessionID, c.RunID = session, run
		return b.call(t, nil, process.ExecName, c)
	}
	var run1 []string
	for range 2 {
		res := startSleep("sess-1", "run-1")
		if res.IsError {
			t.Fatalf("start = %+v", res)
		}
		run1 = append(run1, decode(t, res).ProcessID)
	}
	if res := startSleep("sess-1", "run-1"); !res.IsError || !strings.Contains(res.Content, "live background processes") {
		t.Errorf("third start = %+v, want refused", res)
	}
	res := startSleep("sess-2", "run-2")
	if res.IsError {
		t.Fatalf("start in another session = %+v", res)
	}
	other := decode(t, res).ProcessID

	b.m.KillRun("run-1")
	var ended []string
	for _, e := range b.bg.all() {
		if e.typ == event.ProcessTerminated && e.process().Reason == "run_ended" && e.ref.RunID == "run-1" {
			ended = append(ended, e.process().ProcessID)
		}
	}
	slices.Sort(ended)
	slices.Sort(run1)
	if diff := cmp.Diff(run1, ended); diff != "" {
		t.Errorf("processes ended with the run (-want +got):\n%s", diff)
	}
	if infos := b.m.List("sess-1"); len(infos) != 0 {
		t.Errorf("List(sess-1) after KillRun = %+v, want none", infos)
	}
	if infos := b.m.List("sess-2"); len(infos) != 1 || infos[0].ID != other {
		t.Errorf("List(sess-2) after KillRun = %+v, want %s", infos, other)
	}
	if res := startSleep("sess-1", "run-3"); res.IsError {
		t.Errorf("start after KillRun = %+v, want room again", res)
	}

	b.m.Close()
	b.bg.waitFor(t, "the other session's process cancelled", func(e emitted) bool {
		return e.typ == event.ProcessTerminated && e.process().ProcessID == other && e.process().Reason == "cancelled"
	})
	if res := startSleep("sess-2", "run-2"); !res.IsError {
		t.Errorf("start after Close = %+v, want refused", res)
	}
}

func TestFailClosed(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, tt := range []struct {
		name   string
		adjust func(*tool.Call)
		want   string
	}{
		{"no profile", func(c *tool.Call) { c.Profile = nil }, "no sandbox profile: refusing to run"},
		{"no sandbox", func(c *tool.Call) { c.Sandbox = nil }, "no sandbox profile: refusing to run"},
		{"no output store", func(c *tool.Call) { c.Outputs = nil }, "refusing to run"},
		{"profile the sandbox refuses", func(c *tool.Call) {
			p := b.profile
			p.Mode = "no_such_mode"
			c.Profile = &p
		}, "sandbox"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			marker := strings.ReplaceAll(tt.name, " ", "-")
			c := b.newCall(t, map[string]any{"command": "touch " + marker})
			tt.adjust(c)
			res := b.call(t, nil, process.ShellName, c)
			if !res.IsError || !strings.Contains(res.Content, tt.want) {
				t.Errorf("result = %+v, want an error mentioning %q", res, tt.want)
			}
			if _, err := os.Stat(filepath.Join(b.ws, marker)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the command ran: stat %s: %v", marker, err)
			}
			if es := b.calls.of(c.ID); len(es) != 0 {
				t.Errorf("events %v, want none", typesOf(es))
			}
		})
	}
}

func TestViolation(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, tt := range []struct{ name, command, target string }{
		// dash: "/bin/sh: 1: cannot create /etc/…: Read-only file system"
		{"shell redirection", "echo x > /etc/agentrt-test", "/etc/agentrt-test"},
		// coreutils: "touch: cannot touch '/etc/…': Read-only file system"
		{"touch", "touch /etc/agentrt-test-touch", "/etc/agentrt-test-touch"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			t.Cleanup(func() { os.Remove(tt.target) }) // should the sandbox have let it through
			c := b.newCall(t, map[string]any{"command": tt.command})
			res := b.call(t, nil, process.ShellName, c)
			if _, err := os.Stat(tt.target); err == nil {
				t.Errorf("%s was written", tt.target)
			}
			if !res.IsError || res.Violation == nil || res.Violation.Kind != sandbox.WriteDenied {
				t.Fatalf("result = %+v (violation %+v), want write_denied", res, res.Violation)
			}
			if got := decode(t, res); got.Violation != "write_denied" || !strings.Contains(got.Error, tt.target) {
				t.Errorf("content = %s, want violation write_denied naming %s", res.Content, tt.target)
			}
			var found bool
			for _, e := range b.calls.of(c.ID) {
				if sp, ok := e.p.(*event.SandboxPayload); ok && e.typ == event.SandboxViolation {
					found = true
					if sp.Violation != "write_denied" || sp.Profile != "workspace_write" || sp.ProcessID == "" || sp.Escalation == "" {
						t.Errorf("sandbox.violation = %+v", sp)
					}
				}
			}
			if !found {
				t.Errorf("no sandbox.violation among %v", typesOf(b.calls.of(c.ID)))
			}
		})
	}
}

func TestRedaction(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// The command line holds the token itself, so process.started shows it
	// redacted; the declared secret reaches the process through env.
	c := b.newCall(t, map[string]any{
		"command": `echo "pw=$MY_SECRET"; echo "key=` + tokenSecret + `" >&2; yes filler | head -c 100000; echo; echo "again=$MY_SECRET"`,
		"env":     map[string]string{"MY_SECRET": declaredSecret},
	})
	c.OutputLimits = output.Limits{Inline: 1024}
	res := b.call(t, nil, process.ShellName, c)
	if res.IsError || res.Output == nil || !res.Output.Spilled {
		t.Fatalf("result = %+v, want a spilled output", res)
	}
	check := func(what, s string) {
		t.Helper()
		for _, secret := range []string{declaredSecret, tokenSecret} {
			if strings.Contains(s, secret) {
				t.Errorf("%s holds %q", what, secret)
			}
		}
	}
	check("the result", res.Content)
	check("the preview", res.Output.Preview)
	if !strings.Contains(res.Content, "[REDACTED") {
		t.Errorf("result %s shows no redaction", res.Content)
	}
	rc, err := b.store.Open(res.Output.Ref)
	if err != nil {
		t.Fatal(err)
	}
	stored, err := io.ReadAll(rc)
	rc.Close()
	if err != nil {
		t.Fatal(err)
	}
	check("the stored output", string(stored))
	if !strings.Contains(string(stored), "again=[REDACTED") {
		t.Errorf("stored output lacks the redacted second secret: …%s", stored[max(0, len(stored)-200):])
	}

	var redacted *event.OutputPayload
	for _, e := range b.calls.of(c.ID) {
		raw, err := json.Marshal(e.p)
		if err != nil {
			t.Fatal(err)
		}
		check(string(e.typ)+" event", string(raw))
		if e.typ == event.OutputRedacted {
			redacted = e.p.(*event.OutputPayload)
		}
	}
	if redacted == nil {
		t.Fatalf("no output.redacted among %v", typesOf(b.calls.of(c.ID)))
	}
	if redacted.Redactions["secret_env"] != 2 || redacted.Redactions["openai_key"] != 1 {
		t.Errorf("output.redacted counts = %v, want 2 secret_env and 1 openai_key", redacted.Redactions)
	}
}

// TestLargeOutput is not parallel: it measures the test process's memory,
// which other tests running at the same time would disturb.
func TestLargeOutput(t *testing.T) {
	if testing.Short() {
		t.Skip("prints 100 MB")
	}
	b := setup(t)
	const size = 100_000_000
	c := b.newCall(t, map[string]any{"command": fmt.Sprintf("head -c %d /dev/zero | tr '\\0' a", size), "timeout_ms": 600000})

	runtime.GC()
	before := procStatus(t, "VmRSS")
	peakReset := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
	stopSampling := sampleHeap()
	// Not b.call: under the race detector this takes longer than promptly.
	res, err := b.tool(t, process.ShellName).Call(t.Context(), c)
	heapPeak := stopSampling()
	if err != nil {
		t.Fatal(err)
	}
	hwm := procStatus(t, "VmHWM")

	if res.IsError || res.Output == nil || !res.Output.Spilled || res.Output.Bytes != size || res.Output.Ref == "" {
		t.Fatalf("result = %s (output %+v), want a spilled %d-byte output", res.Content, res.Output, size)
	}
	if got := decode(t, res); got.OutputRef != res.Output.Ref || len(got.Output) > 2*output.DefaultInline {
		t.Errorf("content = %.200s…, want the ref %s and a bounded preview", res.Content, res.Output.Ref)
	}
	const limit = 20 << 20
	t.Logf("heap peak %d KiB; resident memory %d KiB before, peak %d KiB (peak reset: %v)", heapPeak>>10, before>>10, hwm>>10, peakReset)
	if heapPeak > limit {
		t.Errorf("heap peaked at %d MB, want under %d MB", heapPeak>>20, limit>>20)
	}
	if peakReset && !raceEnabled && hwm-before > limit {
		t.Errorf("resident memory grew by %d MB, want under %d MB", (hwm-before)>>20, limit>>20)
	}

	var data int
	var spilled, end bool
	for _, e := range b.calls.of(c.ID) {
		switch e.typ {
		case event.ProcessOutput:
			if n := len(e.process().Data); n > 4<<10 {
				t.Errorf("a process.output chunk holds %d bytes", n)
			}
			data += len(e.process().Data)
		case event.OutputSpilled:
			p := e.p.(*event.OutputPayload)
			spilled = p.Bytes == size && p.StoredBytes == size && p.InlineBytes > 0
		case event.ProcessCompleted:
			end = e.process().Bytes == size
		}
	}
	if data > 64<<10 || data == 0 {
		t.Errorf("process.output events hold %d bytes, want at most 64 KiB", data)
	}
	if !spilled || !end {
		t.Errorf("output.spilled right = %v, process.completed with the total = %v; events %v", spilled, end, collapse(b.calls.of(c.ID)))
	}
}

// TestBackgroundSecretSplitAcrossReads: a secret a background process
// prints in two parts, with a read between them, is still redacted: the
// read does not release half a line.
func TestBackgroundSecretSplitAcrossReads(t *testing.T) {
	t.Parallel()
	b := setup(t)
	half := len(declaredSecret) / 2
	start := b.newCall(t, map[string]any{
		"command":    `printf 'pw=%s' "$A"; read x; printf '%s\n' "$B"; read y`,
		"env":        map[string]string{"A": declaredSecret[:half], "B": declaredSecret[half:]},
		"background": true, "yield_ms": 200,
	})
	res := b.call(t, nil, process.ShellName, start)
	got := decode(t, res)
	if res.IsError || got.Status != "running" {
		t.Fatalf("result = %+v, want a running process", res)
	}
	w := b.newCall(t, map[string]any{"process_id": got.ProcessID, "chars": "go\n", "yield_ms": 1000})
	res = b.call(t, nil, process.WriteName, w)
	out := got.Output + decode(t, res).Output
	if strings.Contains(out, declaredSecret[:half]) || strings.Contains(out, declaredSecret[half:]) || !strings.Contains(out, "pw=[REDACTED:secret_env]") {
		t.Errorf("output read in two parts = %q, want the whole secret redacted", out)
	}
	t2 := b.newCall(t, map[string]any{"process_id": got.ProcessID})
	b.call(t, nil, process.TerminateName, t2)
}

// TestLimitViolations: what the sandbox refuses or bounds beyond the
// file system — the write cap (checked after the command, which exited
// 0), the private /tmp's size, a new user namespace — fails the call with
// a sandbox.violation naming it and offering no escalation.
func TestLimitViolations(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, command string
		limits        sandbox.Limits
		want          sandbox.ViolationKind
	}{
		{"write cap", "for i in 1 2 3; do head -c 600K /dev/zero > f$i; done", sandbox.Limits{WriteBytes: 1 << 20}, sandbox.WriteLimit},
		{"tmp cap", `head -c 2M /dev/zero > "$TMPDIR/fill"`, sandbox.Limits{TmpBytes: 1 << 20}, sandbox.TmpLimit},
		{"user namespace", "unshare --user true", sandbox.Limits{}, sandbox.SyscallDenied},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			// A workspace of its own: the write cap counts every write
			// to the workspace while the command runs.
			b := setup(t)
			b.profile.Limits = tt.limits
			c := b.newCall(t, map[string]any{"command": tt.command})
			res := b.call(t, nil, process.ShellName, c)
			if !res.IsError || res.Violation == nil || res.Violation.Kind != tt.want {
				t.Fatalf("result = %+v (violation %+v), want %s", res, res.Violation, tt.want)
			}
			if got := decode(t, res); got.Violation != string(tt.want) || !strings.Contains(got.Error, string(tt.want)) {
				t.Errorf("content = %s, want violation %s", res.Content, tt.want)
			}
			var found bool
			for _, e := range b.calls.of(c.ID) {
				if e.typ == event.ProcessCompleted {
					t.Errorf("process.completed for a call that went over a limit")
				}
				if sp, ok := e.p.(*event.SandboxPayload); ok && e.typ == event.SandboxViolation {
					found = true
					if sp.Violation != string(tt.want) || sp.Escalation != "" || sp.Limits.WriteBytes != max(tt.limits.WriteBytes, 0) {
						t.Errorf("sandbox.violation = %+v", sp)
					}
				}
			}
			if !found {
				t.Errorf("no sandbox.violation among %v", typesOf(b.calls.of(c.ID)))
			}
		})
	}
}

// TestStdinTarget: write_process_stdin says which process a call writes
// to, how it was started and the unfinished line written before, so that
// the runtime decides text written to a shell as the command it makes.
func TestStdinTarget(t *testing.T) {
	t.Parallel()
	b := setup(t)
	start := func(name string, input map[string]any) string {
		input["background"], input["yield_ms"] = true, 10
		res := b.call(t, nil, name, b.newCall(t, input))
		if res.IsError {
			t.Fatalf("%s: %s", name, res.Content)
		}
		return decode(t, res).ProcessID
	}
	sh := start(process.ShellName, map[string]any{"command": "cat | bash"})
	ex := start(process.ExecName, map[string]any{"argv": []string{"bash", "-c", "it's"}})
	w := b.tool(t, process.WriteName).(tool.StdinWriter)
	write := func(id, chars string) {
		t.Helper()
		if res := b.call(t, nil, process.WriteName, b.newCall(t, map[string]any{"process_id": id, "chars": chars, "yield_ms": 0})); res.IsError {
			t.Fatalf("writing %q: %s", chars, res.Content)
		}
	}
	write(sh, "echo a\necho b; r")
	write(sh, "m -r\\\n")
	target := func(id, chars string) tool.StdinTarget {
		t.Helper()
		tg, ok := w.StdinTarget("sess-1", json.RawMessage(`{"process_id":"`+id+`","chars":"`+chars+`"}`))
		if !ok {
			t.Fatalf("no target for %s", id)
		}
		return tg
	}
	tg := target(sh, "f x")
	want := tool.StdinTarget{ProcessID: sh, Command: "cat | bash", Pending: "echo b; rm -r\\\n", Text: "f x", Profile: b.profile,
		Shell: b.tool(t, process.ShellName).Spec()}
	if diff := cmp.Diff(want, tg, cmp.Comparer(func(a, b tool.Spec) bool { return a.Name == b.Name && a.CommandField == b.CommandField })); diff != "" {
		t.Errorf("target (-want +got):\n%s", diff)
	}
	if tg := target(ex, ""); tg.Command != `bash -c 'it'\''s'` || tg.Pending != "" {
		t.Errorf("exec target = %+v, want its argv quoted and nothing pending", tg)
	}
	if _, ok := w.StdinTarget("sess-2", json.RawMessage(`{"process_id":"`+sh+`"}`)); ok {
		t.Error("another session got a target")
	}
	if _, ok := w.StdinTarget("sess-1", json.RawMessage(`{"process_id":"proc_none"}`)); ok {
		t.Error("an unknown process has a target")
	}
	// An unfinished line is bounded.
	long := strings.Repeat("x", 600<<10)
	write(sh, long)
	c := b.newCall(t, map[string]any{"process_id": sh, "chars": long, "yield_ms": 0})
	if res := b.call(t, nil, process.WriteName, c); !res.IsError || !strings.Contains(res.Content, "input line too long") {
		t.Errorf("a line past the bound = %+v, want input line too long", res)
	}
	if err := b.m.Write(t.Context(), sh, long, false); !errors.Is(err, process.ErrLineTooLong) {
		t.Errorf("Manager.Write past the bound = %v, want ErrLineTooLong", err)
	}
	write(sh, "\n")
	if tg := target(sh, ""); tg.Pending != "" {
		t.Errorf("after a newline, pending = %d bytes, want none", len(tg.Pending))
	}
}
