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
)

// Control tools are handled by the coordinator: calling them changes the
// run's course rather than producing data.
const (
	// CompleteTaskName ends the run as completed with a result.
	CompleteTaskName = "complete_task"
)

// Annotations are hints about a tool's effects, used by policy and by the
// execution layer. They follow the MCP tool annotations.
type Annotations struct {
	ReadOnly    bool `json:"readOnly,omitempty" yaml:"read_only"`
	Destructive bool `json:"destructive,omitempty" yaml:"destructive"`
	Idempotent  bool `json:"idempotent,omitempty" yaml:"idempotent"`
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
	// Source says where the tool comes from: builtin, command, go, or
	// mcp:SERVER.
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
	ID        string // the tool call id
	SessionID string
	TurnID    string
	RunID     string
	// IdempotencyKey is stable for this call across retries and resumes.
	IdempotencyKey string
	Input          json.RawMessage
	// Workspace is the agent's workspace root; nil when it has none.
	// WorkspaceDir is its path on disk ("" when none).
	Workspace    *os.Root
	WorkspaceDir string
}

// Result is what a call produced. Content is what the model sees: JSON or
// text.
type Result struct {
	Content string
	IsError bool
}
