// Package builtin provides the tools every agentrt runtime offers: file
// access inside the agent's workspace (read_file, list_dir, write_file)
// and the completion tool, complete_task.
//
// File tools act only through Call.Workspace, the *os.Root the runtime
// opened on the agent's workspace directory. Paths are relative to that
// root; os.Root refuses ".." traversal, absolute paths and symbolic links
// that lead outside it. Within it they refuse, as permission denied, the
// runtime's hidden paths (Call.Sandbox.HiddenPaths: its data directory,
// configuration and key files), checked on what was actually opened, and
// list_dir leaves them out. Problems the model can act on (a missing
// file, a refused path) come back as error results, not Go errors.
package builtin

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agentrt/agentrt/tool"
)

// Tool names.
const (
	ReadFileName     = "read_file"
	ListDirName      = "list_dir"
	WriteFileName    = "write_file"
	CompleteTaskName = tool.CompleteTaskName
)

// Tools returns the builtin tools.
func Tools() []tool.Tool {
	return []tool.Tool{readFile(), listDir(), writeFile(), completeTask()}
}

// Register adds the builtin tools to r.
func Register(r *tool.Registry) error {
	for _, t := range Tools() {
		if err := r.Register(t); err != nil {
			return fmt.Errorf("registering builtin tools: %w", err)
		}
	}
	return nil
}

// builtinTool is a builtin tool: a spec and a function producing the
// result. run never returns a Go error: every failure is a result the
// model sees.
type builtinTool struct {
	spec tool.Spec
	run  func(ctx context.Context, call *tool.Call) *tool.Result
}

func (t *builtinTool) Spec() tool.Spec { return t.spec }

func (t *builtinTool) Call(ctx context.Context, call *tool.Call) (*tool.Result, error) {
	return t.run(ctx, call), nil
}

// errorResult is an error result prefixed with the tool's name.
func errorResult(name string, format string, args ...any) *tool.Result {
	return &tool.Result{Content: name + ": " + fmt.Sprintf(format, args...), IsError: true}
}

// workspaceTool wraps a file tool: it decodes the input into In and makes
// sure there is a workspace.
func workspaceTool[In any](spec tool.Spec, fn func(ctx context.Context, ws *workspace, in *In) *tool.Result) *builtinTool {
	spec.Source = "builtin"
	return &builtinTool{spec: spec, run: func(ctx context.Context, call *tool.Call) *tool.Result {
		if call.Workspace == nil {
			return errorResult(spec.Name, "this agent has no workspace")
		}
		in := new(In)
		if err := json.Unmarshal(call.Input, in); err != nil {
			return errorResult(spec.Name, "decoding input: %v", err)
		}
		hidden, err := call.Sandbox.HiddenPaths()
		if err != nil {
			return errorResult(spec.Name, "the runtime's hidden paths cannot be resolved, so nothing is read or written: %v", err)
		}
		return fn(ctx, &workspace{Root: call.Workspace, dir: call.WorkspaceDir, hidden: hidden}, in)
	}}
}

// jsonResult encodes v as the content of a successful result.
func jsonResult(name string, v any) *tool.Result {
	b, err := json.Marshal(v)
	if err != nil {
		return errorResult(name, "encoding result: %v", err)
	}
	return &tool.Result{Content: string(b)}
}

const completeTaskSchema = `{
  "type": "object",
  "properties": {
    "result": {"type": "string", "minLength": 1, "description": "The final result of the task, for the person who asked."},
    "evidence": {"type": "array", "items": {"type": "string"}, "description": "How the result was checked: tests run, files written, sources consulted."}
  },
  "required": ["result"],
  "additionalProperties": false
}`

// completeTask is the completion tool. The coordinator intercepts calls
// to it by name and ends the run; Call only acknowledges.
func completeTask() tool.Tool {
	return &builtinTool{
		spec: tool.Spec{
			Name:        CompleteTaskName,
			Description: "Finish the task. Call this once the task is done, with the final result and, optionally, the evidence that it is correct.",
			InputSchema: json.RawMessage(completeTaskSchema),
			Annotations: tool.Annotations{Idempotent: true},
			Source:      "builtin",
		},
		run: func(context.Context, *tool.Call) *tool.Result {
			return &tool.Result{Content: "task completed"}
		},
	}
}
