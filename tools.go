package agentrt

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/loop"
	"github.com/agentrt/agentrt/memory"
	"github.com/agentrt/agentrt/policy"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/tool"
	"github.com/agentrt/agentrt/tool/builtin"
	"github.com/agentrt/agentrt/tool/process"
)

// BuiltinToolNames returns the names of the tools every runtime offers,
// sorted: the file tools and complete_task (package tool/builtin), the
// process tools shell, exec, write_process_stdin and terminate_process
// (package tool/process) and the memory tools memory_save, memory_search
// and memory_forget (package memory).
func BuiltinToolNames() []string {
	var names []string
	for _, t := range builtinTools(idleProcesses(), nil, nil) {
		names = append(names, t.Spec().Name)
	}
	slices.Sort(names)
	return names
}

// NewToolRegistry returns the tools a runtime built from cfg offers, as
// New registers them: the built-in tools (BuiltinToolNames) and
// cfg.Tools. It is for looking at them without a runtime — their specs,
// their input checks, what the policy would decide, as agentrt policy
// explain does: its process tools belong to no runtime and refuse to run.
func NewToolRegistry(cfg Config) (*tool.Registry, error) {
	return newToolRegistry(idleProcesses(), nil, nil, cfg.Tools)
}

// newToolRegistry registers the built-in tools, whose process tools run
// their commands with procs and whose memory tools keep memories in the
// store mems returns, and then tools.
func newToolRegistry(procs *process.Manager, mems func() store.Memories, now func() time.Time, tools []tool.Tool) (*tool.Registry, error) {
	reg := tool.NewRegistry()
	for _, t := range builtinTools(procs, mems, now) {
		if err := reg.Register(t); err != nil {
			return nil, fmt.Errorf("registering built-in tools: %w", err)
		}
	}
	for _, t := range tools {
		if err := reg.Register(t); err != nil {
			return nil, err
		}
	}
	return reg, nil
}

// builtinTools returns the tools every runtime offers; the process tools
// run their commands with procs, the memory tools keep memories in the
// store mems returns (nil: none).
func builtinTools(procs *process.Manager, mems func() store.Memories, now func() time.Time) []tool.Tool {
	return slices.Concat(builtin.Tools(), procs.Tools(), memory.Tools(mems, now))
}

// idleProcesses returns a closed process manager: process tools made
// with it refuse to start anything.
func idleProcesses() *process.Manager {
	m := process.NewManager(process.Options{})
	m.Close()
	return m
}

// ToolInventory lists the tools an agent exposes to the model (with
// complete_task when the agent requires completion), each with the
// decision the policy would make for the caller's calls of it in the
// mode asked for. An unknown agent is ErrNotFound; an unknown mode an
// *InvalidError.
func (rt *Runtime) ToolInventory(ctx context.Context, p *apitype.ToolInventoryParams) (*apitype.ToolInventory, error) {
	owner := ownerOrDefault(p.Owner)
	mode := policy.Mode(p.Mode)
	if mode != "" && !mode.Valid() {
		return nil, invalid("mode", "unknown mode %q: use default, read_only, accept_edits, auto or bypass", p.Mode)
	}
	a, ok := rt.agents[p.Agent]
	if !ok {
		return nil, fmt.Errorf("agent %q (this runtime runs %s): %w", p.Agent, strings.Join(slices.Sorted(slices.Values(rt.AgentNames())), ", "), apitype.ErrNotFound)
	}
	tools := a.Tools
	if a.RequireCompletion && !slices.ContainsFunc(tools, func(t tool.Tool) bool { return t.Spec().Name == tool.CompleteTaskName }) {
		if t, ok := rt.registry.Lookup(tool.CompleteTaskName); ok {
			tools = append(tools[:len(tools):len(tools)], t)
		}
	}
	inv := &apitype.ToolInventory{Agent: p.Agent, Principal: owner.PrincipalID, Mode: p.Mode, Tools: make([]apitype.ToolRead, 0, len(tools))}
	for _, t := range tools {
		spec := t.Spec()
		req := loop.PolicyRequest(spec, json.RawMessage(`{}`))
		req.Owner, req.Agent, req.Mode = owner, p.Agent, mode
		if pr, ok := rt.cfg.Principals[owner.PrincipalID]; ok {
			req.Roles = pr.Roles
		}
		tp, err := rt.toolPolicy(ctx, req)
		if err != nil {
			return nil, fmt.Errorf("deciding %s: %w", spec.Name, err)
		}
		tr := apitype.ToolRead{
			Name: spec.Name, Description: spec.Description, Source: spec.Source, MCPServer: req.MCPServer,
			InputSchema: spec.InputSchema, ReadOnly: spec.Annotations.ReadOnly, Destructive: spec.Annotations.Destructive,
			Intent: spec.CallIntent(), Scopes: spec.Scopes, Policy: tp,
		}
		if len(tr.InputSchema) == 0 {
			tr.InputSchema = json.RawMessage(`{"type":"object"}`)
		}
		inv.Tools = append(inv.Tools, tr)
	}
	inv.MCPServers = rt.mcpServerReads(p.Agent)
	return inv, nil
}

// toolPolicy decides req as the runtime's policy would, and whether
// another input could decide it otherwise: the kernel explains its
// decision (the same code agentrt policy explain runs); another
// evaluator only decides, and its decision is taken as it is.
func (rt *Runtime) toolPolicy(ctx context.Context, req *policy.Request) (apitype.ToolPolicy, error) {
	k, ok := rt.cfg.Policy.(*policy.Kernel)
	if !ok {
		d, err := rt.cfg.Policy.Evaluate(ctx, req)
		if err != nil {
			return apitype.ToolPolicy{}, err
		}
		return toolPolicyOf(d), nil
	}
	ex, err := k.Explain(ctx, req)
	if err != nil {
		return apitype.ToolPolicy{}, err
	}
	tp := toolPolicyOf(ex.Decision)
	tp.ConditionalRuleIDs = conditionalRules(ex)
	if len(tp.ConditionalRuleIDs) > 0 {
		tp.Decision = "conditional"
	}
	return tp, nil
}

func toolPolicyOf(d policy.Decision) apitype.ToolPolicy {
	return apitype.ToolPolicy{
		Decision: string(d.Outcome), EmptyArguments: string(d.Outcome), Source: string(d.Source), ReasonCode: d.ReasonCode,
		Mode: string(d.Mode), RuleIDs: d.RuleIDs, MissingScopes: d.MissingScopes,
	}
}

// conditionalRules returns the rules that could decide a call otherwise
// with other arguments: those that depend on the input and rank at or
// above the deciding rule (any, when no rule decided), that matched or
// decide differently. A decision no rule can change (a missing scope, an
// unknown mode, read_only mode refusing a tool that is not read-only) has
// none.
func conditionalRules(ex *policy.Explanation) []string {
	d := ex.Decision
	if d.Source == policy.SourceScope || (d.Source == policy.SourceMode && (d.ReasonCode == "mode_unknown" || d.ReasonCode == "mode_read_only")) {
		return nil
	}
	var out []string
	for _, r := range ex.Rules { // highest ranked first
		if r.InputDependent && (r.Matched || r.Decision != d.Outcome) {
			out = append(out, r.Rule.ID)
		}
		if r.Deciding {
			break
		}
	}
	return out
}
