package process

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/internal/proc"
	"github.com/agentrt/agentrt/output"
	"github.com/agentrt/agentrt/sandbox"
	"github.com/agentrt/agentrt/tool"
)

// Tool names.
const (
	ShellName     = "shell"
	ExecName      = "exec"
	WriteName     = "write_process_stdin"
	TerminateName = "terminate_process"
)

// Time bounds of the run tools.
const (
	// MaxTimeout is the run tools' Spec.Timeout and the most a foreground
	// command's timeout_ms may ask for.
	MaxTimeout = 10 * time.Minute
	// DefaultTimeout bounds a foreground command without timeout_ms.
	DefaultTimeout = 2 * time.Minute
	// DefaultYield is how long a background start or an input write
	// waits for the process without yield_ms; MaxYield is the most it
	// waits.
	DefaultYield = time.Second
	MaxYield     = 5 * time.Minute
)

const runProperties = `
    "cwd": {"type": "string", "description": "Working directory, relative to the workspace (default: the workspace root). It must stay inside the workspace."},
    "stdin": {"type": "string", "description": "Text written to the command's standard input."},
    "env": {"type": "object", "additionalProperties": {"type": "string"}, "description": "Extra environment variables. PATH and names starting with AGENTRT_ cannot be set."},
    "timeout_ms": {"type": "integer", "minimum": 1, "description": "Wall-clock limit in milliseconds (default 120000 for a foreground command, at most 600000; none for a background one). The process is terminated when it passes."},
    "idle_timeout_ms": {"type": "integer", "minimum": 0, "description": "Terminate the process when it prints nothing for this many milliseconds (default 0: never)."},
    "background": {"type": "boolean", "description": "Keep the process running after the call returns; drive it with write_process_stdin and terminate_process."},
    "yield_ms": {"type": "integer", "minimum": 0, "description": "Background only: how long to wait for output or exit before returning (default 1000)."}`

var (
	shellSchema = `{
  "type": "object",
  "properties": {
    "command": {"type": "string", "minLength": 1, "description": "The command line, run by /bin/sh -c."},` + runProperties + `
  },
  "required": ["command"],
  "additionalProperties": false
}`
	execSchema = `{
  "type": "object",
  "properties": {
    "argv": {"type": "array", "items": {"type": "string"}, "minItems": 1, "description": "The program and its arguments, run without a shell."},` + runProperties + `
  },
  "required": ["argv"],
  "additionalProperties": false
}`
)

const writeSchema = `{
  "type": "object",
  "properties": {
    "process_id": {"type": "string", "minLength": 1, "description": "The id a background shell or exec call returned."},
    "chars": {"type": "string", "description": "Text to write to the process's standard input (include the newline a line-reading program waits for)."},
    "close_stdin": {"type": "boolean", "description": "Close the process's standard input after writing."},
    "yield_ms": {"type": "integer", "minimum": 0, "description": "How long to wait for output or exit before returning (default 1000)."}
  },
  "required": ["process_id"],
  "additionalProperties": false
}`

const terminateSchema = `{
  "type": "object",
  "properties": {
    "process_id": {"type": "string", "minLength": 1, "description": "The id a background shell or exec call returned."}
  },
  "required": ["process_id"],
  "additionalProperties": false
}`

// runInput is the input of shell and exec.
type runInput struct {
	Command       string            `json:"command"`
	Argv          []string          `json:"argv"`
	Cwd           string            `json:"cwd"`
	Stdin         string            `json:"stdin"`
	Env           map[string]string `json:"env"`
	TimeoutMs     *int64            `json:"timeout_ms"`
	IdleTimeoutMs int64             `json:"idle_timeout_ms"`
	Background    bool              `json:"background"`
	YieldMs       *int64            `json:"yield_ms"`
}

// runTool is shell (shell set) or exec.
type runTool struct {
	m     *Manager
	shell bool
}

func (t *runTool) name() string {
	if t.shell {
		return ShellName
	}
	return ExecName
}

func (t *runTool) Spec() tool.Spec {
	spec := tool.Spec{
		Name:        ShellName,
		Description: "Run a shell command line (/bin/sh -c) in the workspace, sandboxed. Returns its exit code and its merged stdout and stderr; with background, returns a process id to drive with write_process_stdin and terminate_process.",
		InputSchema: json.RawMessage(shellSchema),
		Timeout:     MaxTimeout,
		Source:      "builtin",
		Intent:      "execute",
		Concurrency: tool.Exclusive,
		EnvField:    "env",
		StdinField:  "stdin",
	}
	if t.shell {
		spec.CommandField = "command"
	} else {
		spec.Name, spec.ArgvField = ExecName, "argv"
		spec.Description = "Run a program with arguments (no shell) in the workspace, sandboxed. Returns its exit code and its merged stdout and stderr; with background, returns a process id to drive with write_process_stdin and terminate_process."
		spec.InputSchema = json.RawMessage(execSchema)
	}
	return spec
}

// Call implements tool.Tool. Every failure is an error result; the
// returned error is always nil.
func (t *runTool) Call(ctx context.Context, call *tool.Call) (*tool.Result, error) {
	name := t.name()
	var in runInput
	if err := json.Unmarshal(orEmpty(call.Input), &in); err != nil {
		return errorResult(name, "decoding input: %v", err), nil
	}
	var argv []string
	var cmdline string
	if t.shell {
		if strings.TrimSpace(in.Command) == "" {
			return errorResult(name, "command is empty"), nil
		}
		argv, cmdline = []string{"/bin/sh", "-c", in.Command}, in.Command
	} else {
		if len(in.Argv) == 0 || in.Argv[0] == "" {
			return errorResult(name, "argv is empty"), nil
		}
		argv, cmdline = in.Argv, tool.QuoteArgv(in.Argv)
	}
	return t.m.run(ctx, call, name, &in, argv, cmdline), nil
}

// run runs argv for call.
func (m *Manager) run(ctx context.Context, call *tool.Call, name string, in *runInput, argv []string, cmdline string) *tool.Result {
	switch {
	case call.Sandbox == nil || call.Profile == nil:
		return errorResult(name, "no sandbox profile: refusing to run")
	case call.Outputs == nil || call.Redactor == nil:
		return errorResult(name, "no output store or redactor: refusing to run")
	}
	dir, err := workDir(call, in.Cwd)
	if err != nil {
		return errorResult(name, "%v", err)
	}
	env, err := m.environ(call, in.Env)
	if err != nil {
		return errorResult(name, "%v", err)
	}
	timeout, idle, yield, err := in.durations()
	if err != nil {
		return errorResult(name, "%v", err)
	}
	preview, _ := call.Redactor.String(cmdline)
	ref := Ref{SessionID: call.SessionID, TurnID: call.TurnID, RunID: call.RunID, ToolCallID: call.ID}
	p := &process{
		m:          m,
		id:         m.opts.NewID(),
		ref:        ref,
		background: in.Background,
		preview:    proc.Excerpt([]byte(preview), previewMax, len(preview)),
		cmdline:    cmdline,
		cwd:        dir,
		redactor:   call.Redactor,
		profile:    *call.Profile,
		timeout:    timeout,
		idle:       idle,
		grace:      m.opts.Grace,
		em:         &emitter{call: call.Emit, ref: ref, m: m},
		done:       make(chan struct{}),
		kick:       make(chan struct{}, 1),
		limits:     call.OutputLimits,
	}
	if p.em.call == nil {
		p.em.call = func(event.Type, event.Payload) {}
	}
	if err := m.register(p); err != nil {
		return errorResult(name, "%v", err)
	}
	if err := p.start(ctx, call, argv, dir, env, in.Stdin); err != nil {
		p.abort()
		return errorResult(name, "%v", err)
	}

	if !p.background {
		p.supervise(ctx)
		m.remove(p)
		return p.foregroundResult()
	}

	go func() {
		defer m.wg.Done()
		p.supervise(context.Background())
	}()
	var res *tool.Result
	if in.Stdin != "" {
		if err := p.writeInput(ctx, in.Stdin, false); err != nil {
			res = errorResult(name, "%v", err) // reported with the status below
		}
	}
	p.yield(ctx, yield)
	p.em.detach()
	st := p.status(inlineLimit(call), true)
	if res != nil {
		st.Error = strings.TrimPrefix(res.Content, name+": ")
	}
	return st.result(st.Error != "" || st.failed)
}

// start makes the sandboxed command and starts it, emitting
// sandbox.applied and process.started. An error means nothing runs.
func (p *process) start(ctx context.Context, call *tool.Call, argv []string, dir string, env []string, stdin string) error {
	cmdCtx := ctx
	if p.background {
		cmdCtx = context.WithoutCancel(ctx)
	}
	cmd, err := call.Sandbox.Command(cmdCtx, *call.Profile, sandbox.Spec{Argv: argv, Dir: dir, Workspace: call.WorkspaceDir, Env: env})
	if err != nil {
		return fmt.Errorf("sandbox refused to run the command: %w", err)
	}
	p.cmd = cmd
	var sink *output.Sink
	if !p.background {
		sink = call.Outputs.Sink(call.OutputLimits)
	}
	p.initOutput(sink)
	cmd.Stdout = streamWriter{p: p, stream: stdout}
	cmd.Stderr = streamWriter{p: p, stream: stderr}
	var stdinR *os.File
	switch {
	case p.background:
		r, w, err := os.Pipe()
		if err != nil {
			return fmt.Errorf("making the input pipe: %w", err)
		}
		stdinR, p.stdin = r, w
		cmd.Stdin = r
	case stdin != "":
		cmd.Stdin = strings.NewReader(stdin)
	}

	// Output waits for process.started.
	p.outMu.Lock()
	defer p.outMu.Unlock()
	p.base = time.Now()
	err = cmd.Start()
	if stdinR != nil {
		_ = stdinR.Close()
	}
	if err != nil {
		if p.stdin != nil {
			_ = p.stdin.Close()
			p.stdin = nil
		}
		if sink != nil {
			sink.Discard()
		}
		return fmt.Errorf("starting %s: %w", argv[0], err)
	}
	p.started = p.m.opts.Now()
	p.pid = cmd.Process.Pid
	p.mu.Lock()
	p.isStart = true
	p.mu.Unlock()

	applied := cmd.Applied.Payload()
	applied.ProcessID = p.id
	p.em.emit(event.SandboxApplied, applied)
	p.em.emit(event.ProcessStarted, &event.ProcessPayload{
		ProcessID: p.id,
		Command:   p.preview,
		Cwd:       p.cwd,
		Pid:       p.pid,
	})
	return nil
}

// abort forgets a registered process that did not start.
func (p *process) abort() {
	p.mu.Lock()
	p.finished = true
	p.mu.Unlock()
	close(p.done)
	p.m.remove(p)
	if p.background {
		p.m.wg.Done()
	}
}

// yield waits at most d for the process to end.
func (p *process) yield(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.done:
	case <-t.C:
	case <-ctx.Done():
	}
}

// ending returns how the process ended, nil while it runs.
func (p *process) ending() *ending {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.end // nil too for a process that never started
}

// fgResult is the content of a foreground command's result.
type fgResult struct {
	ExitCode    *int   `json:"exit_code,omitempty"`
	Signal      string `json:"signal,omitempty"`
	Terminated  string `json:"terminated,omitempty"`
	Violation   string `json:"violation,omitempty"`
	Error       string `json:"error,omitempty"`
	Output      string `json:"output"`
	OutputRef   string `json:"output_ref,omitempty"`
	Truncated   bool   `json:"truncated"`
	OutputError string `json:"output_error,omitempty"`
	DurationMs  int64  `json:"duration_ms"`
}

// foregroundResult is the result of a foreground command that ended.
func (p *process) foregroundResult() *tool.Result {
	e := p.ending()
	r := fgResult{
		ExitCode:   e.exitCode,
		Signal:     e.signal,
		Terminated: e.reason,
		Error:      p.endError(e),
		DurationMs: e.duration.Milliseconds(),
	}
	if e.keepErr != nil {
		r.OutputError = e.keepErr.Error()
	}
	if s := e.spill; s != nil {
		r.Output = s.Preview
		r.OutputRef = s.Ref
		r.Truncated = s.Truncated
	}
	if e.violation != nil {
		r.Violation = string(e.violation.Kind)
	}
	res := &tool.Result{Content: encode(r), IsError: e.failed(), Output: e.spill, Violation: e.violation}
	return res
}

// failed reports whether the process did not end well: a non-zero exit,
// a signal, termination or a sandbox violation.
func (e *ending) failed() bool {
	return e.reason != "" || e.violation != nil || e.exitCode == nil || *e.exitCode != 0
}

// endError explains an ending that failed for another reason than its
// exit code, "" otherwise.
func (p *process) endError(e *ending) string {
	switch e.reason {
	case "":
	case reasonTimeout:
		if e.cause != nil {
			return "timed out"
		}
		return fmt.Sprintf("timed out after %v", p.timeout)
	case reasonInactivity:
		return fmt.Sprintf("terminated after %v without output", p.idle)
	case reasonRunEnded:
		return "terminated: the run ended"
	case reasonCancelled:
		if e.cause != nil {
			return fmt.Sprintf("interrupted: %v", e.cause)
		}
		return "interrupted"
	default:
		return "terminated"
	}
	if v := e.violation; v != nil {
		msg := "the sandbox refused: " + string(v.Kind)
		if v.Detail != "" {
			msg += ": " + v.Detail
		}
		return msg
	}
	if e.exitCode == nil && e.waitErr != nil && e.signal == "" {
		return e.waitErr.Error()
	}
	return ""
}

// bgStatus is the content of a background process's results.
type bgStatus struct {
	ProcessID  string `json:"process_id"`
	Status     string `json:"status"` // running, exited, terminated
	ExitCode   *int   `json:"exit_code,omitempty"`
	Signal     string `json:"signal,omitempty"`
	Reason     string `json:"reason,omitempty"`
	Violation  string `json:"violation,omitempty"`
	Error      string `json:"error,omitempty"`
	Output     string `json:"output"`
	DurationMs *int64 `json:"duration_ms,omitempty"`

	failed    bool               // it ended and did not end well
	violation *sandbox.Violation // it ended with one
}

// status reads a background process's new output and its status; once
// the process ended, the manager forgets it when forget is set.
func (p *process) status(limit int, forget bool) *bgStatus {
	e := p.ending() // before reading, so that an ended process's output is whole
	st := &bgStatus{ProcessID: p.id, Status: "running"}
	if p.ring != nil {
		st.Output = p.readNew(limit)
	}
	if e == nil {
		return st
	}
	if forget {
		p.m.remove(p)
	}
	st.Status = "exited"
	if e.reason != "" {
		st.Status = "terminated"
	}
	st.ExitCode, st.Signal, st.Reason = e.exitCode, e.signal, e.reason
	st.Error = p.endError(e)
	ms := e.duration.Milliseconds()
	st.DurationMs = &ms
	if e.violation != nil {
		st.Violation = string(e.violation.Kind)
	}
	st.failed, st.violation = e.failed(), e.violation
	return st
}

func (st *bgStatus) result(isError bool) *tool.Result {
	return &tool.Result{Content: encode(st), IsError: isError, Violation: st.violation}
}

// writeInput is the input of write_process_stdin.
type writeInput struct {
	ProcessID  string `json:"process_id"`
	Chars      string `json:"chars"`
	CloseStdin bool   `json:"close_stdin"`
	YieldMs    *int64 `json:"yield_ms"`
}

// writeTool is write_process_stdin.
type writeTool struct{ m *Manager }

func (t *writeTool) Spec() tool.Spec {
	return tool.Spec{
		Name:        WriteName,
		Description: "Write text to the standard input of a background process this session started, wait yield_ms, and return the output it printed since the last read and whether it still runs.",
		InputSchema: json.RawMessage(writeSchema),
		Timeout:     MaxYield + time.Minute,
		Source:      "builtin",
		Intent:      "execute",
		Concurrency: "process:{process_id}",
	}
}

var _ tool.StdinWriter = (*writeTool)(nil)

// StdinTarget implements tool.StdinWriter.
func (t *writeTool) StdinTarget(sessionID string, input json.RawMessage) (tool.StdinTarget, bool) {
	var in writeInput
	if err := json.Unmarshal(orEmpty(input), &in); err != nil || in.ProcessID == "" {
		return tool.StdinTarget{}, false
	}
	p := t.m.lookup(sessionID, in.ProcessID)
	if p == nil || !p.background || p.isFinished() {
		return tool.StdinTarget{}, false
	}
	return p.target(in.Chars), true
}

// Call implements tool.Tool. Every failure is an error result; the
// returned error is always nil.
func (t *writeTool) Call(ctx context.Context, call *tool.Call) (*tool.Result, error) {
	var in writeInput
	if err := json.Unmarshal(orEmpty(call.Input), &in); err != nil {
		return errorResult(WriteName, "decoding input: %v", err), nil
	}
	yield, err := yieldDuration(in.YieldMs)
	if err != nil {
		return errorResult(WriteName, "%v", err), nil
	}
	p := t.m.lookup(call.SessionID, in.ProcessID)
	switch {
	case p == nil || in.ProcessID == "":
		return errorResult(WriteName, "unknown process %q", in.ProcessID), nil
	case !p.background:
		return errorResult(WriteName, "process %s takes no input", in.ProcessID), nil
	}
	limit := inlineLimit(call)
	if p.ending() != nil {
		st := p.status(limit, true)
		if in.Chars != "" || in.CloseStdin {
			st.Error = strings.TrimSpace("the process has ended; nothing was written. " + st.Error)
			return st.result(true), nil
		}
		return st.result(false), nil
	}
	if in.Chars != "" && call.Emit != nil {
		r := call.Redactor
		if r == nil {
			r = p.redactor
		}
		call.Emit(event.ProcessInput, p.inputPayload(r, in.Chars))
	}
	werr := p.writeInput(ctx, in.Chars, in.CloseStdin)
	if werr == nil {
		p.yield(ctx, yield)
	}
	st := p.status(limit, true)
	if werr != nil {
		st.Error = strings.TrimSpace(werr.Error() + ". " + st.Error)
		return st.result(true), nil
	}
	return st.result(false), nil
}

// terminateInput is the input of terminate_process.
type terminateInput struct {
	ProcessID string `json:"process_id"`
}

// terminateTool is terminate_process.
type terminateTool struct{ m *Manager }

func (t *terminateTool) Spec() tool.Spec {
	return tool.Spec{
		Name:        TerminateName,
		Description: "Terminate a process this session started (SIGTERM to its process group, SIGKILL if it does not exit) and return its final status and the output it printed since the last read.",
		InputSchema: json.RawMessage(terminateSchema),
		Timeout:     time.Minute,
		Source:      "builtin",
		Intent:      "execute",
		Concurrency: "process:{process_id}",
		Annotations: tool.Annotations{Idempotent: true},
	}
}

// Call implements tool.Tool. Every failure is an error result; the
// returned error is always nil.
func (t *terminateTool) Call(ctx context.Context, call *tool.Call) (*tool.Result, error) {
	var in terminateInput
	if err := json.Unmarshal(orEmpty(call.Input), &in); err != nil {
		return errorResult(TerminateName, "decoding input: %v", err), nil
	}
	p := t.m.lookup(call.SessionID, in.ProcessID)
	if p == nil || in.ProcessID == "" {
		return errorResult(TerminateName, "unknown process %q", in.ProcessID), nil
	}
	p.stop(reasonTerminated, false)
	select {
	case <-p.done:
	case <-ctx.Done():
		return errorResult(TerminateName, "waiting for process %s to end: %v", p.id, context.Cause(ctx)), nil
	}
	return p.status(inlineLimit(call), true).result(false), nil
}

// durations returns the wall-clock timeout, the inactivity timeout and
// the yield of a run input.
func (in *runInput) durations() (timeout, idle, yield time.Duration, err error) {
	if in.TimeoutMs != nil {
		if *in.TimeoutMs <= 0 {
			return 0, 0, 0, errors.New("timeout_ms must be positive")
		}
		timeout = msDuration(*in.TimeoutMs)
		if !in.Background {
			timeout = min(timeout, MaxTimeout)
		}
	} else if !in.Background {
		timeout = DefaultTimeout
	}
	if in.IdleTimeoutMs < 0 {
		return 0, 0, 0, errors.New("idle_timeout_ms must not be negative")
	}
	idle = msDuration(in.IdleTimeoutMs)
	yield, err = yieldDuration(in.YieldMs)
	return timeout, idle, yield, err
}

func yieldDuration(ms *int64) (time.Duration, error) {
	if ms == nil {
		return DefaultYield, nil
	}
	if *ms < 0 {
		return 0, errors.New("yield_ms must not be negative")
	}
	return min(msDuration(*ms), MaxYield), nil
}

// msDuration converts milliseconds, saturating rather than overflowing.
func msDuration(ms int64) time.Duration {
	const maxMs = int64(1<<63-1) / int64(time.Millisecond)
	return time.Duration(min(ms, maxMs)) * time.Millisecond
}

// workDir is the directory to run in: cwd, relative to the workspace,
// which it must not leave.
func workDir(call *tool.Call, cwd string) (string, error) {
	if cwd == "" || cwd == "." {
		return call.WorkspaceDir, nil
	}
	if call.WorkspaceDir == "" {
		return "", fmt.Errorf("cwd %q: this agent has no workspace", cwd)
	}
	if filepath.IsAbs(cwd) {
		return "", fmt.Errorf("cwd %q is absolute; give a path relative to the workspace", cwd)
	}
	clean := filepath.Clean(cwd)
	if !filepath.IsLocal(clean) {
		return "", fmt.Errorf("cwd %q leaves the workspace", cwd)
	}
	var fi os.FileInfo
	var err error
	if call.Workspace != nil {
		fi, err = call.Workspace.Stat(clean) // refuses symbolic links out of the workspace
	} else {
		fi, err = os.Stat(filepath.Join(call.WorkspaceDir, clean))
	}
	switch {
	case err != nil:
		if u := errors.Unwrap(err); u != nil {
			err = u // the path is in the message already
		}
		return "", fmt.Errorf("cwd %q: %w", cwd, err)
	case !fi.IsDir():
		return "", fmt.Errorf("cwd %q is not a directory", cwd)
	}
	return filepath.Join(call.WorkspaceDir, clean), nil
}

// environ builds a process's environment from scratch.
func (m *Manager) environ(call *tool.Call, extra map[string]string) ([]string, error) {
	for k, v := range extra {
		switch {
		case k == "" || strings.ContainsAny(k, "=\x00") || strings.Contains(v, "\x00"):
			return nil, fmt.Errorf("env: invalid variable %q", k)
		case k == "PATH" || strings.HasPrefix(k, "AGENTRT_"):
			return nil, fmt.Errorf("env: %s cannot be set", k)
		}
	}
	env := proc.BaseEnv()
	for _, k := range m.opts.EnvAllow {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(extra)) {
		env = append(env, k+"="+extra[k])
	}
	env = append(env,
		"AGENTRT_TOOL_CALL_ID="+call.ID,
		"AGENTRT_SESSION_ID="+call.SessionID,
		"AGENTRT_TURN_ID="+call.TurnID,
		"AGENTRT_IDEMPOTENCY_KEY="+call.IdempotencyKey,
	)
	return dedupEnv(env), nil
}

// dedupEnv keeps the last value of each variable, in the position of its
// first.
func dedupEnv(env []string) []string {
	last := make(map[string]string, len(env))
	var order []string
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if _, ok := last[k]; !ok {
			order = append(order, k)
		}
		last[k] = kv
	}
	out := make([]string, len(order))
	for i, k := range order {
		out[i] = last[k]
	}
	return out
}

// tailPreview renders the last limit bytes of data as valid UTF-8, saying
// how many earlier bytes it leaves out (dropped of them were not kept).
func tailPreview(data []byte, dropped int64, limit int) string {
	if len(data) > limit {
		cut := len(data) - limit
		for cut < len(data) && !utf8.RuneStart(data[cut]) {
			cut++
		}
		dropped += int64(cut)
		data = data[cut:]
	}
	s := strings.ToValidUTF8(string(data), "\uFFFD")
	if dropped > 0 {
		s = fmt.Sprintf("[… %d earlier bytes not shown]\n", dropped) + s
	}
	return s
}

// inlineLimit is how much output a result shows.
func inlineLimit(call *tool.Call) int {
	if call.OutputLimits.Inline > 0 {
		return call.OutputLimits.Inline
	}
	return output.DefaultInline
}

// encode renders v as compact JSON without HTML escaping.
func encode(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprintf(`{"error":%q}`, "encoding result: "+err.Error())
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func orEmpty(input json.RawMessage) json.RawMessage {
	if len(input) == 0 {
		return json.RawMessage("{}")
	}
	return input
}

func errorResult(name, format string, args ...any) *tool.Result {
	return &tool.Result{Content: name + ": " + fmt.Sprintf(format, args...), IsError: true}
}
