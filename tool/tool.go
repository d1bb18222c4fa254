// Package tool defines what a tool is to agentrt: the Tool interface, its
// Spec (name, description, JSON Schema input, annotations, timeout), the
// Registry that validates input against the schema and produces an agent's
// inventory, and the names of the control tools the coordinator handles
// itself. Implementations live in tool/builtin (files, complete_task) and
// tool/command (YAML-declared commands); Func adapts a Go function.
package tool

import (
	"context"
	"encoding/json"
	"os"
	"time"

	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/output"
	"github.com/agentrt/agentrt/sandbox"
)

// Control tools are handled by the coordinator: calling them changes the
// run's course rather than producing data.
const (
	// CompleteTaskName ends the run as completed with a result.
	CompleteTaskName = "complete_task"
)

// Annotations are hints about a tool's effects, used by policy and by the
// execution layer. They follow the MCP tool annotations (readOnlyHint,
// destructiveHint, idempotentHint, openWorldHint). A tool from an MCP
// server carries the server's word for them: policy rules can match them
// and override what they would imply.
type Annotations struct {
	ReadOnly    bool `json:"readOnly,omitempty" yaml:"read_only"`
	Destructive bool `json:"destructive,omitempty" yaml:"destructive"`
	Idempotent  bool `json:"idempotent,omitempty" yaml:"idempotent"`
	// OpenWorld: the tool reaches outside systems (the web, a third
	// party's API), not only the runtime's own environment.
	OpenWorld bool `json:"openWorld,omitempty" yaml:"open_world"`
}

// Spec describes a tool.
type Spec struct {
	// Name is unique in a registry: letters, digits, '_' and '-', at most
	// 64 characters, as model providers require.
	Name        string
	Description string
	// InputSchema is a JSON Schema (draft 2020-12) for the call's input,
	// which must be an object.
	InputSchema json.RawMessage
	Annotations Annotations
	// Timeout bounds one call; zero means DefaultTimeout.
	Timeout time.Duration
	// Source says where the tool comes from: builtin, command, go,
	// mcp:SERVER, or subagent (SourceSubagent).
	Source string
	// Scopes are the scopes a caller needs to call the tool; the policy
	// denies a call whose agent or principal lacks one.
	Scopes []string
	// Intent says what a call does, for policy rules: read, write,
	// execute, network, … Empty derives it from the annotations (read for
	// read-only tools, else write).
	Intent string
	// CommandField names the input field holding a shell command line,
	// for shell-like tools: policy command rules match every simple
	// command of it.
	CommandField string
	// ArgvField names the input field holding a program and its
	// arguments (an array of strings), for exec-like tools: policy
	// command rules see it as the command line of those words, quoted.
	ArgvField string
	// EnvField names the input field holding extra environment variables
	// (an object of strings) for the command of a shell- or exec-like
	// tool. The policy sees them as assignments in front of the command
	// (env K=V …), which no allow rule covers: LD_PRELOAD or BASH_ENV can
	// make any program run other code.
	EnvField string
	// StdinField names the input field holding the text a process tool
	// writes to its command's standard input. It says too that nothing
	// else reaches that input but writes the runtime decides one by one
	// (write_process_stdin), so that a shell reading it runs nothing the
	// policy does not see.
	StdinField string
	// Concurrency says how the tool's calls may overlap: Parallel,
	// Exclusive, or a resource key template such as "file:{path}" (input
	// fields in braces) whose calls with the same key never overlap,
	// across every run of the runtime. Empty means Parallel for
	// read-only tools and Exclusive otherwise.
	Concurrency string
	// Output bounds the call's output: what is shown inline and what is
	// stored. Zero fields take the runtime's limits.
	Output output.Limits
	// Interactive says the tool may report progress, ask a person for
	// input or have the agent's model answer a prompt while a call runs
	// (MCP tools do): its calls get Progress, Ask and Sample.
	Interactive bool
}

// Concurrency classes.
const (
	// Parallel calls may overlap with any call but an exclusive one.
	Parallel = "parallel"
	// Exclusive calls run alone within their session.
	Exclusive = "exclusive"
)

// CallConcurrency is the spec's Concurrency, or the class its annotations
// imply.
func (s Spec) CallConcurrency() string {
	switch {
	case s.Concurrency != "":
		return s.Concurrency
	case s.Annotations.ReadOnly:
		return Parallel
	}
	return Exclusive
}

// CallIntent is the spec's Intent, or the one its annotations imply.
func (s Spec) CallIntent() string {
	switch {
	case s.Intent != "":
		return s.Intent
	case s.Annotations.ReadOnly:
		return "read"
	}
	return "write"
}

// DefaultTimeout bounds a call whose Spec has no Timeout.
const DefaultTimeout = 60 * time.Second

// Tool is a capability a model may call. Implementations are safe for
// concurrent use.
type Tool interface {
	Spec() Spec
	// Call runs the tool. Input has been validated against the schema. A
	// returned error becomes an error result the model sees, as does a
	// Result with IsError; panics are recovered by the caller.
	Call(ctx context.Context, call *Call) (*Result, error)
}

// Call is one invocation.
type Call struct {
	ID       string // the tool call id
	TenantID string
	// PrincipalID is who submitted the turn; Agent the agent running it.
	PrincipalID string
	Agent       string
	SessionID   string
	TurnID      string
	TaskID      string
	RunID       string
	// IdempotencyKey is stable for this call across retries and resumes.
	IdempotencyKey string
	Input          json.RawMessage
	// Workspace is the agent's workspace root; nil when it has none.
	// WorkspaceDir is its path on disk ("" when none).
	Workspace    *os.Root
	WorkspaceDir string

	// Emit records a fact of the call (process.started, sandbox.applied,
	// output.redacted, …) in the run's event log; the event gets the
	// call's ids. Nil discards. Safe for concurrent use. output.spilled
	// and output.truncated are recorded by the runtime from
	// Result.Output, with the output ref; a tool need not emit them.
	Emit func(t event.Type, p event.Payload)
	// Sandbox runs the call's processes under Profile. Tools that run
	// processes refuse to run without them (fail closed).
	Sandbox *sandbox.Sandbox
	Profile *sandbox.Profile
	// Outputs keeps output larger than OutputLimits.Inline; Redactor
	// removes secrets from output before anything keeps or shows it.
	// Tools that stream output use them and set Result.Output.
	Outputs      *output.Store
	Redactor     *output.Redactor
	OutputLimits output.Limits

	// Progress, Ask and Sample are set for tools whose Spec says
	// Interactive; nil otherwise.
	//
	// Progress reports how far a long call has come (an MCP server's
	// progress notifications): the runtime records it as tool.progress,
	// rate-limited, and keeps the last value in the read model. Nil
	// discards. Safe for concurrent use.
	Progress func(progress, total float64, message string)
	// Ask asks a person for input the call needs before it can go on (an
	// MCP server's elicitation), described by a JSON Schema, and waits
	// for the answer. While it waits the call holds no worker. Nil means
	// nobody can be asked: the tool declines.
	Ask func(ctx context.Context, q *Question) (*Answer, error)
	// Sample has the agent's model answer a prompt the tool sends (an
	// MCP server's sampling request), governed like any model call of
	// the run: a policy decision, routing, budget and cost. Nil refuses.
	Sample func(ctx context.Context, req *SampleRequest) (*SampleResult, error)
}

// Question is input a tool asks a person for mid-call.
type Question struct {
	// Server names who asks (an MCP server's name).
	Server  string
	Message string
	// Schema is the JSON Schema the answer's content must validate
	// against: an object of primitive properties, as MCP elicitation
	// allows.
	Schema json.RawMessage
}

// Answer is a person's answer to a Question: Decision is accept (with
// Content, a JSON object valid against the schema), decline or cancel.
type Answer struct {
	Decision string
	Content  json.RawMessage
}

// SampleRequest is a prompt a tool asks the agent's model to answer.
type SampleRequest struct {
	Server       string
	SystemPrompt string
	Messages     []SampleMessage
	MaxTokens    int
}

// SampleMessage is one message of a SampleRequest: Role is user or
// assistant.
type SampleMessage struct {
	Role string
	Text string
}

// SampleResult is the model's answer to a SampleRequest.
type SampleResult struct {
	Model      string
	Text       string
	StopReason string
}

// Result is what a call produced. Content is what the model sees: JSON or
// text.
type Result struct {
	Content string
	IsError bool
	// Output, when set, is output the tool already redacted and stored
	// through Call.Outputs; Content is then what the model sees (its
	// preview) and the runtime does not redact or spill it again.
	Output *output.Spill
	// Violation, when set, says the call failed because the sandbox
	// refused something or a limit was hit: the runtime reports it as
	// such and may offer to rerun the call with a wider profile.
	Violation *sandbox.Violation
	// Structured is the call's structured result (an MCP tool's
	// structuredContent), kept as JSON beside Content; nil when none.
	Structured json.RawMessage
	// Artifacts are binary results (an MCP tool's images and audio): the
	// runtime stores each as a blob and records artifact.changed.
	Artifacts []Artifact
	// EffectUnknown says the call failed in a way that leaves unknown
	// whether it took effect (the connection to its server was lost
	// while it ran): the runtime asks an operator what became of it
	// (side_effect_unknown) rather than telling the model it failed.
	EffectUnknown bool
	// Waiting says the call handed its work to a child task (a
	// subagent) that has not settled: the call has no result yet. The
	// run parks waiting for its children (waiting_resource, reason
	// waiting_children) and calls the tool again, with the same call id,
	// when they settle; the tool then returns the result. Content says
	// what it waits for. Only an idempotent tool may wait.
	Waiting bool
}

// Artifact is a binary result of a call.
type Artifact struct {
	MediaType string
	Data      []byte
}

// SourceSubagent is the Source of a subagent tool: a call delegates to a
// child agent (docs/subagents.md). It runs no code of its own beyond a
// few reads and the commit that starts the child.
const SourceSubagent = "subagent"
