package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/internal/yamlpos"
	"github.com/agentrt/agentrt/tool"
)

// The keys each mapping accepts.
var (
	topKeys         = []string{"data_dir", "server", "models", "agents", "tools", "budgets", "policy", "execution", "hooks", "durability", "health", "mcp_servers", "delegation", "webhooks", "schedules", "workflows", "store"}
	serverKeys      = []string{"listen", "read_header_timeout", "body_timeout", "idle_timeout", "max_header_bytes", "max_conns_per_client", "cors_origins"}
	agentMemoryKeys = []string{"inject"}
	agentKeys       = []string{"instructions", "model", "models", "profile", "tools", "require_completion", "max_tool_hops", "workspace", "mode", "scopes", "sandbox", "mcp", "context", "memory", "subagents", "state"}
	toolKeys        = []string{"description", "input_schema", "command", "timeout", "env", "annotations", "scopes", "intent", "command_field", "concurrency", "output"}
	annotationKeys  = []string{"read_only", "destructive", "idempotent"}
)

// namePattern is what agent and tool names must match; model providers
// accept tool names of this shape.
var namePattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// envNamePattern is what environment variable names must match.
var envNamePattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// intentPattern is what a tool's intent must match.
var intentPattern = regexp.MustCompile(`^[a-z_]{1,32}$`)

// status says what a value helper found.
type status int

const (
	valNull status = iota // absent or null
	valBad                // present with the wrong type or shape; reported
	valOK
)

// toolRef is one item of an agent's tools list, checked once every tool
// is known.
type toolRef struct {
	agent string
	tool  string
	pos   yamlpos.Pos
}

// policyUse is a key that only means something with a policy section,
// checked once the whole file is read.
type policyUse struct {
	key string // as agents.NAME.mode
	pos yamlpos.Pos
}

// decoder walks the YAML values, building the File and collecting errors.
type decoder struct {
	name       string
	dir        string
	builtins   []string // sorted
	refs       []toolRef
	modelRefs  []modelRef
	mcpRefs    []mcpRef
	subRefs    []subagentRef
	schedRefs  []scheduleRef
	stepAgents []stepAgentRef
	stateRefs  []stateRef
	policyUses []policyUse
	errs       Errors
}

func newDecoder(name, dir string, opts Options) *decoder {
	builtins := slices.Clone(opts.Builtins)
	slices.Sort(builtins)
	return &decoder{
		name:     name,
		dir:      dir,
		builtins: slices.Compact(builtins),
	}
}

// errorAt records an error at p.
func (d *decoder) errorAt(p yamlpos.Pos, format string, args ...any) {
	d.errs = append(d.errs, &Error{File: d.name, Line: p.Line, Column: p.Column, Message: fmt.Sprintf(format, args...)})
}

// yamlProblem records a problem with how the file is written as YAML.
func (d *decoder) yamlProblem(p yamlpos.Problem) {
	d.errorAt(p.Pos, "%s", p.Message)
}

// errors returns the collected errors, or nil.
func (d *decoder) errors() error {
	if len(d.errs) == 0 {
		return nil
	}
	return sortErrors(d.errs)
}

func (d *decoder) decode(data []byte) *File {
	doc, next, err := yamlpos.Parse(data, yamlpos.Options{Report: d.yamlProblem})
	switch {
	case err != nil:
		d.syntaxError(err)
		return nil
	case doc == nil:
		d.errorAt(yamlpos.Pos{Line: 1, Column: 1}, "empty document; expected a mapping with at least an agents key")
		return nil
	case next != yamlpos.Pos{}:
		d.errorAt(next, "more than one YAML document; the config is a single document")
		return nil
	}
	root := doc.Root()
	if root == nil {
		return nil
	}
	if root.Kind != yamlpos.Map {
		d.errorAt(root.Pos, "top level must be a mapping, got %s", root.Describe())
		return nil
	}
	f := &File{
		Path:       d.name,
		Dir:        d.dir,
		DataDir:    filepath.Join(d.dir, DefaultDataDir),
		Server:     Server{Listen: DefaultListen},
		Agents:     make(map[string]*Agent),
		Tools:      make(map[string]*Tool),
		Models:     make(map[string]*Model),
		MCPServers: make(map[string]*MCPServer),
		Budgets:    Budgets{TenantWindow: WindowTotal, LowThreshold: DefaultLowThreshold, OnExceeded: OnExceededWait},
	}
	entries := root.Fields()
	var agents, policy *yamlpos.Field
	for _, e := range entries {
		switch e.Key {
		case "data_dir":
			if p, st := d.path(e, "data_dir", "", wantDir|mayBeMissing); st == valOK {
				f.DataDir = p
			}
		case "server":
			d.server(e, &f.Server)
		case "agents":
			agents = &e
			d.agents(e, f.Agents)
		case "tools":
			d.tools(e, f.Tools)
		case "models":
			d.models(e, f.Models)
		case "budgets":
			d.budgets(e, &f.Budgets)
		case "policy":
			policy = &e
			f.Policy = d.policy(e)
		case "execution":
			d.execution(e, &f.Execution)
		case "hooks":
			f.Hooks = d.hooks(e)
		case "durability":
			d.durability(e, &f.Durability)
		case "health":
			d.health(e, &f.Health)
		case "mcp_servers":
			d.mcpServers(e, f.MCPServers)
		case "delegation":
			d.delegation(e, &f.Delegation)
		case "webhooks":
			f.Webhooks = d.webhooks(e)
		case "schedules":
			f.Schedules = d.schedules(e)
		case "workflows":
			f.Workflows = d.workflows(e)
		case "store":
			d.store(e, &f.Store)
		default:
			if !strings.HasPrefix(e.Key, "x-") {
				d.unknownKey(e, "", topKeys)
			}
		}
	}
	switch {
	case agents == nil && len(entries) > 0:
		d.errorAt(entries[0].KeyPos, "no agents defined; add at least one under agents")
	case agents == nil:
		d.errorAt(root.Pos, "no agents defined; add at least one under agents")
	case len(f.Agents) == 0:
		if v := agents.Value(); v != nil && (v.Kind == yamlpos.Map || v.Kind == yamlpos.Null) {
			d.errorAt(agents.KeyPos, "no agents defined; add at least one under agents")
		}
	}
	d.checkRefs(f)
	d.checkMCPRefs(f)
	d.checkSubagents(f)
	d.checkStates(f)
	d.checkSchedules(f)
	d.checkWorkflowAgents(f)
	d.resolveModels(f)
	if policy == nil {
		for _, u := range d.policyUses {
			d.errorAt(u.pos, "%s needs a policy section: add `policy:` to turn the policy kernel on", u.key)
		}
	}
	return f
}

// needPolicy records a key that is an error unless the file has a policy
// section.
func (d *decoder) needPolicy(pos yamlpos.Pos, key string) {
	d.policyUses = append(d.policyUses, policyUse{key: key, pos: pos})
}

// unknownKey reports a key that the mapping described by where does not
// accept; where is empty for the top level.
func (d *decoder) unknownKey(e yamlpos.Field, where string, known []string) {
	if where == "" {
		d.errorAt(e.KeyPos, "unknown top-level key %q%s", e.Key, didYouMean(e.Key, known))
		return
	}
	d.errorAt(e.KeyPos, "unknown key %q in %s%s", e.Key, where, didYouMean(e.Key, known))
}

// checkRefs reports agents listing tools that are neither declared nor
// builtin.
func (d *decoder) checkRefs(f *File) {
	var known []string
	for name := range f.Tools {
		known = append(known, name)
	}
	slices.Sort(known)
	known = append(known, d.builtins...)
	for _, r := range d.refs {
		if f.Tools[r.tool] != nil || slices.Contains(d.builtins, r.tool) {
			continue
		}
		if r.tool == InstanceStateTool {
			if a := f.Agents[r.agent]; a == nil || a.State == nil {
				d.errorAt(r.pos, "agent %q lists tool %q, which only an agent with a state section has; add state or remove it", r.agent, r.tool)
			}
			continue
		}
		d.errorAt(r.pos, "agent %q lists tool %q, which is neither declared under tools nor a builtin%s",
			r.agent, r.tool, didYouMean(r.tool, known))
	}
}

// Limits on the server section's numbers: a header must hold a request
// line and a bearer token.
const (
	minHeaderBytes    = 1 << 10
	maxHeaderBytes    = 1 << 20
	maxConnsPerClient = 1_000_000
)

func (d *decoder) server(e yamlpos.Field, s *Server) {
	m, _ := d.mapping(e, "server")
	for _, f := range m.Fields() {
		switch f.Key {
		case "listen":
			v, st := d.str(f, "server.listen")
			if st != valOK {
				continue
			}
			if !validListen(v) {
				d.errorAt(f.Value().Pos, "server.listen must be host:port such as %s, got %q", DefaultListen, v)
				continue
			}
			s.Listen = v
		case "read_header_timeout", "body_timeout", "idle_timeout":
			if v, st := d.duration(f, "server."+f.Key); st == valOK {
				*map[string]*time.Duration{
					"read_header_timeout": &s.ReadHeaderTimeout, "body_timeout": &s.BodyTimeout, "idle_timeout": &s.IdleTimeout,
				}[f.Key] = v
			}
		case "max_header_bytes":
			if n, st := d.count(f, "server.max_header_bytes", minHeaderBytes, maxHeaderBytes); st == valOK {
				s.MaxHeaderBytes = int(n)
			}
		case "max_conns_per_client":
			if n, st := d.count(f, "server.max_conns_per_client", 1, maxConnsPerClient); st == valOK {
				s.MaxConnsPerClient = int(n)
			}
		case "cors_origins":
			s.CORSOrigins = d.origins(f)
		default:
			d.unknownKey(f, "server", serverKeys)
		}
	}
}

// origins decodes server.cors_origins: a list of origins.
func (d *decoder) origins(e yamlpos.Field) []string {
	v, _ := d.present(e, "server.cors_origins", "a list of origins such as https://console.example.com", is(yamlpos.Seq))
	var out []string
	for _, item := range v.Items() {
		if item == nil {
			continue
		}
		if !item.Scalar() {
			d.errorAt(item.Pos, "server.cors_origins must list origins such as https://console.example.com, got %s", item.Describe())
			continue
		}
		o, err := apitype.ParseOrigin(item.Text)
		switch {
		case err != nil:
			d.errorAt(item.Pos, "server.cors_origins: %v", err)
		case slices.Contains(out, o):
			d.errorAt(item.Pos, "origin %s is listed twice in server.cors_origins", o)
		default:
			out = append(out, o)
		}
	}
	return out
}

func (d *decoder) agents(e yamlpos.Field, out map[string]*Agent) {
	m, _ := d.mapping(e, "agents")
	for _, ae := range m.Fields() {
		a := d.agent(ae)
		out[a.Name] = a
	}
}

func (d *decoder) agent(ae yamlpos.Field) *Agent {
	name := ae.Key
	where := fmt.Sprintf("agent %q", name)
	if !namePattern.MatchString(name) {
		d.errorAt(ae.KeyPos, "invalid agent name %q: use 1 to 64 letters, digits, '_' or '-'", name)
	}
	a := &Agent{Name: name, MaxToolHops: DefaultMaxToolHops, Profile: Profile{Kind: name, Prefer: "order", Fallback: true}, Sandbox: defaultSandbox()}
	m, st := d.mapping(ae, where)
	if st == valBad {
		return a
	}
	var modelKey *yamlpos.Field
	for _, f := range m.Fields() {
		label := f.Key + " in " + where
		switch f.Key {
		case "instructions":
			if s, st := d.str(f, label); st == valOK {
				a.Instructions = s
			}
		case "model", "models":
			v := f.Value()
			if v != nil && v.Kind == yamlpos.Null {
				continue
			}
			if modelKey != nil {
				d.errorAt(f.KeyPos, "%s has both %s and %s; use model for one model, models for candidates", where, modelKey.Key, f.Key)
				continue
			}
			modelKey = &f
			if v != nil { // nil: unresolvable, and reported
				d.agentModels(f, a, where)
			}
		case "profile":
			d.profile(f, where, &a.Profile)
		case "tools":
			a.Tools = d.toolList(f, name, where)
		case "require_completion":
			if b, st := d.boolean(f, label); st == valOK {
				a.RequireCompletion = b
			}
		case "max_tool_hops":
			n, st := d.integer(f, label)
			if st != valOK {
				continue
			}
			if n < minToolHops || n > maxToolHops {
				d.errorAt(f.Value().Pos, "%s must be between %d and %d, got %d", label, minToolHops, maxToolHops, n)
				continue
			}
			a.MaxToolHops = int(n)
		case "workspace":
			if p, st := d.path(f, "workspace", " in "+where, wantDir); st == valOK {
				a.Workspace = p
			}
		case "mode":
			if s, st := d.mode(f, label); st == valOK {
				a.Mode = s
				d.needPolicy(f.KeyPos, "agents."+name+".mode")
			}
		case "scopes":
			if scopes, st := d.nameList(f, "scope", where); st == valOK {
				a.Scopes, a.ScopesRestricted = scopes, true
				d.needPolicy(f.KeyPos, "agents."+name+".scopes")
			}
		case "sandbox":
			a.Sandbox = d.sandbox(f, where)
		case "mcp":
			a.MCP = d.agentMCP(f, name, where)
		case "context":
			a.Context = d.agentContext(f, a, where)
		case "memory":
			d.agentMemory(f, where, &a.Memory)
		case "subagents":
			a.Subagents = d.subagents(f, name, where)
		case "state":
			a.State = d.agentState(f, name, where)
		default:
			d.unknownKey(f, where, agentKeys)
		}
	}
	if modelKey == nil {
		d.errorAt(ae.KeyPos, "model is required in %s (or models, a list of candidates)", where)
	}
	return a
}

// agentMemory decodes an agent's memory section.
func (d *decoder) agentMemory(e yamlpos.Field, where string, out *AgentMemory) {
	where = "memory in " + where
	m, st := d.mapping(e, where)
	if st != valOK {
		return
	}
	for _, f := range m.Fields() {
		label := f.Key + " in " + where
		switch f.Key {
		case "inject":
			n, st := d.integer(f, label)
			if st != valOK {
				continue
			}
			if n < 0 || n > MaxMemoryInject {
				d.errorAt(f.Value().Pos, "%s must be between 0 and %d, got %d", label, MaxMemoryInject, n)
				continue
			}
			out.Inject = int(n)
		default:
			d.unknownKey(f, where, agentMemoryKeys)
		}
	}
}

// toolList decodes an agent's tools list, recording each item for
// checkRefs.
func (d *decoder) toolList(e yamlpos.Field, agent, where string) []string {
	v, _ := d.present(e, "tools in "+where, "a list of tool names", is(yamlpos.Seq))
	var out []string
	for _, item := range v.Items() {
		switch {
		case item == nil:
		case !item.Scalar():
			d.errorAt(item.Pos, "tools in %s must list tool names, got %s", where, item.Describe())
		case slices.Contains(out, item.Text):
			d.errorAt(item.Pos, "tool %q is listed twice in %s", item.Text, where)
		default:
			out = append(out, item.Text)
			d.refs = append(d.refs, toolRef{agent: agent, tool: item.Text, pos: item.Pos})
		}
	}
	return out
}

func (d *decoder) tools(e yamlpos.Field, out map[string]*Tool) {
	m, _ := d.mapping(e, "tools")
	for _, te := range m.Fields() {
		t := d.tool(te)
		out[t.Name] = t
	}
}

func (d *decoder) tool(te yamlpos.Field) *Tool {
	name := te.Key
	where := fmt.Sprintf("tool %q", name)
	if !namePattern.MatchString(name) {
		d.errorAt(te.KeyPos, "invalid tool name %q: use 1 to 64 letters, digits, '_' or '-'", name)
	}
	if slices.Contains(d.builtins, name) {
		d.errorAt(te.KeyPos, "tool %q has the same name as a builtin tool; rename it", name)
	}
	t := &Tool{Name: name}
	m, st := d.mapping(te, where)
	if st == valBad {
		return t
	}
	commandSt, schemaSt := valNull, valNull
	var commandField, concurrency *yamlpos.Value
	for _, f := range m.Fields() {
		label := f.Key + " in " + where
		switch f.Key {
		case "description":
			if s, st := d.str(f, label); st == valOK {
				t.Description = s
			}
		case "input_schema":
			t.InputSchema, schemaSt = d.inputSchema(f, where, true)
		case "command":
			t.Command, commandSt = d.command(f, where)
		case "timeout":
			if v, st := d.duration(f, label); st == valOK {
				t.Timeout = v
			}
		case "env":
			t.Env = d.env(f, where)
		case "annotations":
			t.Annotations = d.annotations(f, where)
		case "scopes":
			if scopes, st := d.nameList(f, "scope", where); st == valOK {
				t.Scopes = scopes
				d.needPolicy(f.KeyPos, "tools."+name+".scopes")
			}
		case "intent":
			s, st := d.str(f, label)
			switch {
			case st != valOK:
			case !intentPattern.MatchString(s):
				d.errorAt(f.Value().Pos, "%s must be 1 to 32 lowercase letters or '_', such as read or execute, got %q", label, s)
			default:
				t.Intent = s
			}
		case "command_field":
			if s, st := d.str(f, label); st == valOK {
				t.CommandField, commandField = s, f.Value()
			}
		case "concurrency":
			if s, st := d.concurrency(f, label); st == valOK {
				t.Concurrency, concurrency = s, f.Value()
			}
		case "output":
			t.Output = d.outputLimits(f, "output of "+where, func(k string) string { return "output." + k + " in " + where })
		default:
			d.unknownKey(f, where, toolKeys)
		}
	}
	if commandSt == valNull {
		d.errorAt(te.KeyPos, "command is required in %s", where)
	}
	if schemaSt == valNull {
		d.errorAt(te.KeyPos, "input_schema is required in %s", where)
	}
	if commandField != nil && schemaSt == valOK {
		d.checkCommandField(t, commandField.Pos, where)
	}
	if concurrency != nil && schemaSt == valOK {
		d.checkConcurrency(t, concurrency.Pos, where)
	}
	return t
}

// checkCommandField reports a command_field that does not name a property
// of type string in the tool's input schema, which is valid JSON by now.
func (d *decoder) checkCommandField(t *Tool, pos yamlpos.Pos, where string) {
	var schema, props, prop map[string]json.RawMessage
	if json.Unmarshal(t.InputSchema, &schema) != nil || json.Unmarshal(schema["properties"], &props) != nil {
		props = nil
	}
	raw, ok := props[t.CommandField]
	if !ok {
		names := slices.Sorted(maps.Keys(props))
		hint := didYouMean(t.CommandField, names)
		if len(names) == 0 {
			hint = "; it declares no properties"
		}
		d.errorAt(pos, "command_field in %s names %q, which is not a property of its input_schema%s", where, t.CommandField, hint)
		return
	}
	var typ string
	if json.Unmarshal(raw, &prop) == nil && json.Unmarshal(prop["type"], &typ) == nil && typ == "string" {
		return
	}
	got := "it has no type"
	if tr := prop["type"]; tr != nil {
		got = "its type is " + strings.Trim(string(tr), `"`)
	}
	d.errorAt(pos, "command_field in %s names %q, which must have type: string in its input_schema (%s)", where, t.CommandField, got)
}

// command decodes a tool's command list and checks that a command given
// as a path is an executable file.
func (d *decoder) command(e yamlpos.Field, where string) ([]string, status) {
	v, st := d.present(e, "command in "+where, "a list such as [./tools/run.sh, --flag]", is(yamlpos.Seq))
	if st != valOK {
		return nil, st
	}
	items := v.Items()
	if len(items) == 0 {
		d.errorAt(v.Pos, "command in %s must not be empty", where)
		return nil, valBad
	}
	cmd := make([]string, 0, len(items))
	for i, item := range items {
		switch {
		case item == nil:
			st = valBad
		case !item.Scalar():
			d.errorAt(item.Pos, "command[%d] in %s must be a string, got %s", i, where, item.Describe())
			st = valBad
		default:
			cmd = append(cmd, item.Text)
		}
	}
	if st != valOK {
		return nil, valBad
	}
	prog := cmd[0]
	switch {
	case prog == "":
		d.errorAt(items[0].Pos, "command[0] in %s must not be empty", where)
		return nil, valBad
	case strings.ContainsRune(prog, '/') || strings.ContainsRune(prog, filepath.Separator):
		p := d.abs(prog)
		if !d.checkPath(items[0].Pos, fmt.Sprintf("command %q in %s", prog, where), p, wantExec) {
			return nil, valBad
		}
		cmd[0] = p
	}
	return cmd, valOK
}

// inputSchema converts an input_schema to JSON after checking that it
// describes an object. Without needType a schema that names no type gets
// type: object.
func (d *decoder) inputSchema(e yamlpos.Field, where string, needType bool) ([]byte, status) {
	label := "input_schema in " + where
	v, st := d.present(e, label, "a mapping holding a JSON Schema", is(yamlpos.Map))
	if st != valOK {
		return nil, st
	}
	ok, typed := true, false
	for _, f := range v.Fields() {
		fv := f.Value()
		switch {
		case fv == nil:
			ok = false
		case f.Key == "type":
			typed = true
			if !fv.Scalar() || fv.Text != "object" {
				d.errorAt(fv.Pos, "%s must have type: object, got %s", label, fv.Describe())
				ok = false
			}
		case f.Key == "properties" && fv.Kind != yamlpos.Map:
			d.errorAt(fv.Pos, "input_schema.properties in %s must be a mapping, got %s", where, fv.Describe())
			ok = false
		case f.Key == "required" && !stringList(fv):
			d.errorAt(fv.Pos, "input_schema.required in %s must be a list of property names, got %s", where, fv.Describe())
			ok = false
		}
	}
	if !typed && needType {
		d.errorAt(e.KeyPos, "%s must have type: object", label)
		ok = false
	}
	raw, converted := d.toJSON(v, label)
	if !ok || !converted {
		return nil, valBad
	}
	if !typed {
		raw = withObjectType(raw)
	}
	// The tool layer compiles the schema when the runtime starts; compiling
	// it here as well puts a file position on what it would refuse.
	if err := tool.CheckInputSchema(raw); err != nil {
		d.errorAt(v.Pos, "%s is not a valid JSON Schema: %v", label, err)
		return nil, valBad
	}
	return raw, valOK
}

// withObjectType returns the JSON object raw with "type": "object" as
// its first key.
func withObjectType(raw json.RawMessage) json.RawMessage {
	rest := bytes.TrimSpace(raw[1:])
	if len(rest) > 0 && rest[0] != '}' {
		rest = append([]byte(","), rest...)
	}
	return append([]byte(`{"type":"object"`), rest...)
}

// stringList reports whether v is a list of scalars.
func stringList(v *yamlpos.Value) bool {
	if v.Kind != yamlpos.Seq {
		return false
	}
	for _, item := range v.Items() {
		if item == nil || !item.Scalar() {
			return false
		}
	}
	return true
}

func (d *decoder) env(e yamlpos.Field, where string) map[string]string {
	m, st := d.mapping(e, "env in "+where)
	if st != valOK {
		return nil
	}
	out := make(map[string]string)
	for _, f := range m.Fields() {
		if !envNamePattern.MatchString(f.Key) {
			d.errorAt(f.KeyPos, "env key %q in %s is not a valid variable name", f.Key, where)
			continue
		}
		switch v := f.Value(); {
		case v == nil:
		case !v.Scalar():
			d.errorAt(v.Pos, "env %s in %s must be a string, got %s", f.Key, where, v.Describe())
		default:
			out[f.Key] = v.Text
		}
	}
	return out
}

func (d *decoder) annotations(e yamlpos.Field, where string) Annotations {
	var a Annotations
	m, _ := d.mapping(e, "annotations in "+where)
	for _, f := range m.Fields() {
		label := "annotations." + f.Key + " in " + where
		var dst *bool
		switch f.Key {
		case "read_only":
			dst = &a.ReadOnly
		case "destructive":
			dst = &a.Destructive
		case "idempotent":
			dst = &a.Idempotent
		default:
			d.unknownKey(f, "annotations of "+where, annotationKeys)
			continue
		}
		if b, st := d.boolean(f, label); st == valOK {
			*dst = b
		}
	}
	if a.ReadOnly && a.Destructive {
		d.errorAt(e.KeyPos, "annotations in %s cannot be both read_only and destructive", where)
	}
	return a
}

// path decodes f's value as a path, resolved against the config file's
// folder, and checks that it holds what want says; name and in name the
// key in messages, as "workspace" and ` in agent "a"` do.
func (d *decoder) path(f yamlpos.Field, name, in string, want pathCheck) (string, status) {
	v, st := d.present(f, name+in, "a string", (*yamlpos.Value).Scalar)
	if st != valOK {
		return "", st
	}
	return d.pathValue(v, name, in, want)
}

// pathValue is path for a scalar v, such as an item of a list.
func (d *decoder) pathValue(v *yamlpos.Value, name, in string, want pathCheck) (string, status) {
	switch {
	case v.Text == "":
		d.errorAt(v.Pos, "%s%s must not be empty", name, in)
		return "", valBad
	}
	p := d.abs(v.Text)
	if !d.checkPath(v.Pos, fmt.Sprintf("%s %q%s", name, v.Text, in), p, want) {
		return "", valBad
	}
	return p, valOK
}

// abs resolves p against the config file's folder.
func (d *decoder) abs(p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(d.dir, p)
}
