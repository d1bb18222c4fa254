package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/agentrt/agentrt/internal/yamlpos"
	"github.com/agentrt/agentrt/runtype"
)

// SubagentUse is one item of an agent's subagents list: a child agent
// the agent may delegate to, offered to its model as a tool.
type SubagentUse struct {
	// Agent is the child agent, a key under agents (the agent itself
	// included: the runtime's max_depth bounds the recursion).
	Agent string
	// AsTool is the tool the parent's model calls to delegate: the file's
	// as_tool, or "delegate_" + Agent.
	AsTool string
	// Description tells the parent's model what the child is for.
	Description string
	// InputSchema is the JSON Schema a delegation's input must match,
	// converted from YAML with the key order kept; its type is "object".
	// Nil means the runtime's default ({"task": string}).
	InputSchema json.RawMessage
	// MaxParallel bounds the children of this declaration one parent task
	// has running at once; zero means the runtime's default.
	MaxParallel int
	// Workspace is what the child works on, one of SubagentWorkspaces:
	// own (the default) or parent_readonly.
	Workspace string
	// AsJob makes the tool start a job: a call passes a list of items,
	// each worked on by the child in a task of its own, at most
	// MaxParallel at once. Not with workspace parent_readonly.
	AsJob bool
	// Context is what the child sees of its parent's conversation, one of
	// SubagentContexts: none (the default: its input alone) or parent
	// (the parent's recent messages precede its input).
	Context string
}

// SubagentWorkspaces lists the values of a subagent's workspace.
var SubagentWorkspaces = []string{runtype.WorkspaceOwn, runtype.WorkspaceParentReadOnly}

// SubagentContexts lists the values of a subagent's context.
var SubagentContexts = []string{runtype.ContextNone, runtype.ContextParent}

// DefaultSubagentTool returns the tool name of a subagent declaration
// that sets no as_tool.
func DefaultSubagentTool(agent string) string { return "delegate_" + agent }

// Delegation is the delegation section: limits of delegation trees.
type Delegation struct {
	// MaxDepth bounds how deep a delegation tree grows (a request's own
	// task is at depth 0, its subagents at 1); zero means the runtime's
	// default (3).
	MaxDepth int
}

var (
	subagentKeys   = []string{"agent", "as_job", "as_tool", "context", "description", "input_schema", "max_parallel", "workspace"}
	delegationKeys = []string{"max_depth"}
)

// Limits on delegation numbers.
const (
	maxSubagentParallel = 64
	maxDelegationDepth  = 10
)

// subagentRef is one subagent declaration, checked once every agent and
// tool is known.
type subagentRef struct {
	agent string // the declaring agent
	where string // as `subagents[0] of agent "a"`
	use   *SubagentUse
	// Positions of the item, its agent value and its tool name (the
	// item's when as_tool is not written).
	pos, agentPos, toolPos yamlpos.Pos
}

// delegation decodes the delegation section.
func (d *decoder) delegation(e yamlpos.Field, x *Delegation) {
	m, _ := d.mapping(e, "delegation")
	for _, f := range m.Fields() {
		switch f.Key {
		case "max_depth":
			if n, st := d.count(f, "delegation.max_depth", 1, maxDelegationDepth); st == valOK {
				x.MaxDepth = int(n)
			}
		default:
			d.unknownKey(f, "delegation", delegationKeys)
		}
	}
}

// subagents decodes an agent's subagents list.
func (d *decoder) subagents(e yamlpos.Field, agent, where string) []*SubagentUse {
	v, st := d.present(e, "subagents in "+where, "a list of mappings such as {agent: NAME}", is(yamlpos.Seq))
	if st != valOK {
		return nil
	}
	var out []*SubagentUse
	for i, item := range v.Items() {
		in := fmt.Sprintf("subagents[%d] of %s", i, where)
		switch {
		case item == nil:
			continue
		case item.Kind != yamlpos.Map:
			d.errorAt(item.Pos, "%s must be a mapping such as {agent: NAME}, got %s", in, item.Describe())
			continue
		}
		r, ok := d.subagent(item, in)
		if !ok {
			continue
		}
		if j := slices.IndexFunc(out, func(u *SubagentUse) bool { return u.AsTool == r.use.AsTool }); j >= 0 {
			d.errorAt(r.toolPos, "as_tool %q in %s is already the tool of subagents[%d]; give each subagent its own as_tool", r.use.AsTool, in, j)
			continue
		}
		r.agent = agent
		out = append(out, r.use)
		d.subRefs = append(d.subRefs, r)
	}
	return out
}

// subagent decodes one item of a subagents list; false when it names no
// child agent or its tool name is invalid.
func (d *decoder) subagent(v *yamlpos.Value, in string) (subagentRef, bool) {
	u := &SubagentUse{Workspace: runtype.WorkspaceOwn}
	r := subagentRef{where: in, use: u, pos: v.Pos, toolPos: v.Pos}
	ok, agentSt := true, valNull
	var wsPos yamlpos.Pos
	for _, f := range v.Fields() {
		label := f.Key + " in " + in
		switch f.Key {
		case "agent":
			var s string
			if s, agentSt = d.str(f, label); agentSt == valOK {
				u.Agent, r.agentPos = s, f.Value().Pos
			}
		case "as_tool":
			s, st := d.str(f, label)
			switch {
			case st != valOK:
			case !namePattern.MatchString(s):
				d.errorAt(f.Value().Pos, "invalid as_tool %q in %s: use 1 to 64 letters, digits, '_' or '-'", s, in)
				ok = false
			default:
				u.AsTool, r.toolPos = s, f.Value().Pos
			}
		case "description":
			if s, st := d.str(f, label); st == valOK {
				u.Description = s
			}
		case "input_schema":
			u.InputSchema, _ = d.inputSchema(f, in, false)
		case "max_parallel":
			if n, st := d.count(f, label, 1, maxSubagentParallel); st == valOK {
				u.MaxParallel = int(n)
			}
		case "workspace":
			if s, st := d.oneOf(f, label, SubagentWorkspaces); st == valOK {
				u.Workspace, wsPos = s, f.Value().Pos
			}
		case "as_job":
			if b, st := d.boolean(f, label); st == valOK {
				u.AsJob = b
			}
		case "context":
			if s, st := d.oneOf(f, label, SubagentContexts); st == valOK {
				u.Context = s
			}
		default:
			d.unknownKey(f, in, subagentKeys)
		}
	}
	if u.AsJob && u.Workspace == runtype.WorkspaceParentReadOnly {
		d.errorAt(wsPos, "workspace parent_readonly in %s cannot be combined with as_job: a job's items each work on the child's own workspace", in)
	}
	if u.Agent == "" {
		if agentSt == valBad {
			return r, false
		}
		d.errorAt(v.Pos, "agent is required in %s: the name of the agent to delegate to", in)
		return r, false
	}
	if u.AsTool == "" && ok {
		u.AsTool = DefaultSubagentTool(u.Agent)
		if !namePattern.MatchString(u.AsTool) {
			d.errorAt(v.Pos, "%s needs an as_tool: its default %q is not a valid tool name (1 to 64 letters, digits, '_' or '-')", in, u.AsTool)
			ok = false
		}
	}
	return r, ok
}

// checkSubagents reports subagent declarations naming agents that do not
// exist, and tool names that collide: with a builtin or declared tool, or
// with another agent's declaration of a different child or schema (a tool
// name is one tool across agents).
func (d *decoder) checkSubagents(f *File) {
	agents := f.AgentNames()
	first := make(map[string]subagentRef)
	for _, r := range d.subRefs {
		u := r.use
		if f.Agents[u.Agent] == nil {
			d.errorAt(r.agentPos, "agent %q in %s is not an agent under agents%s", u.Agent, r.where, didYouMean(u.Agent, agents))
		}
		switch a := f.Agents[r.agent]; {
		case slices.Contains(d.builtins, u.AsTool):
			d.errorAt(r.toolPos, "as_tool %q in %s is the name of a builtin tool; choose another", u.AsTool, r.where)
			continue
		case a != nil && slices.Contains(a.Tools, u.AsTool):
			d.errorAt(r.toolPos, "as_tool %q in %s is also in the tools of agent %q; choose another", u.AsTool, r.where, r.agent)
			continue
		case f.Tools[u.AsTool] != nil:
			d.errorAt(r.toolPos, "as_tool %q in %s is the name of a tool declared under tools; choose another", u.AsTool, r.where)
			continue
		}
		p, seen := first[u.AsTool]
		switch {
		case !seen:
			first[u.AsTool] = r
		case p.use.Agent != u.Agent:
			d.errorAt(r.toolPos, "as_tool %q in %s delegates to agent %q, but %s (line %d) delegates to %q under that name; a tool name is one tool across agents: choose another",
				u.AsTool, r.where, u.Agent, p.where, p.pos.Line, p.use.Agent)
		case p.use.AsJob != u.AsJob:
			d.errorAt(r.toolPos, "as_tool %q in %s sets as_job %v, but %s (line %d) sets %v; a tool name is one tool across agents: choose another",
				u.AsTool, r.where, u.AsJob, p.where, p.pos.Line, p.use.AsJob)
		case !bytes.Equal(p.use.InputSchema, u.InputSchema):
			d.errorAt(r.toolPos, "as_tool %q in %s has another input_schema than %s (line %d); a tool name is one tool across agents: write the same schema (a YAML anchor shares it) or choose another name",
				u.AsTool, r.where, p.where, p.pos.Line)
		}
	}
}
