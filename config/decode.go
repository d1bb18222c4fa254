package config

import (
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	yaml "github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
)

// The keys each mapping accepts.
var (
	topKeys        = []string{"data_dir", "server", "agents", "tools"}
	serverKeys     = []string{"listen"}
	agentKeys      = []string{"instructions", "model", "tools", "require_completion", "max_tool_hops", "workspace"}
	modelKeys      = []string{"provider", "script", "model"}
	toolKeys       = []string{"description", "input_schema", "command", "timeout", "env", "annotations"}
	annotationKeys = []string{"read_only", "destructive", "idempotent"}
)

// futureProviders are model providers the file format reserves but the
// runtime does not support yet.
var futureProviders = []string{"openai", "anthropic", "openai_compatible"}

// namePattern is what agent and tool names must match; model providers
// accept tool names of this shape.
var namePattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// envNamePattern is what environment variable names must match.
var envNamePattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

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
	node  ast.Node
}

// decoder walks the YAML AST, building the File and collecting errors.
type decoder struct {
	name     string
	dir      string
	builtins []string // sorted
	anchors  []*ast.AnchorNode
	aliases  map[*ast.AliasNode]ast.Node // resolved aliases; nil for unknown
	merges   int                         // merge-key expansions so far
	refs     []toolRef
	errs     Errors
}

func newDecoder(name, dir string, opts Options) *decoder {
	builtins := slices.Clone(opts.Builtins)
	slices.Sort(builtins)
	return &decoder{
		name:     name,
		dir:      dir,
		builtins: slices.Compact(builtins),
		aliases:  make(map[*ast.AliasNode]ast.Node),
	}
}

// errorf records an error at n's position.
func (d *decoder) errorf(n ast.Node, format string, args ...any) {
	line, col := 0, 0
	if n != nil {
		if tk := n.GetToken(); tk != nil && tk.Position != nil {
			line, col = tk.Position.Line, tk.Position.Column
		}
	}
	d.errorAt(line, col, format, args...)
}

func (d *decoder) errorAt(line, col int, format string, args ...any) {
	d.errs = append(d.errs, &Error{File: d.name, Line: line, Column: col, Message: fmt.Sprintf(format, args...)})
}

// errors returns the collected errors, or nil.
func (d *decoder) errors() error {
	if len(d.errs) == 0 {
		return nil
	}
	return sortErrors(d.errs)
}

func (d *decoder) decode(data []byte) *File {
	af, err := parser.ParseBytes(data, 0)
	if err != nil {
		d.syntaxError(err)
		return nil
	}
	var docs []*ast.DocumentNode
	for _, doc := range af.Docs {
		if doc.Body != nil {
			docs = append(docs, doc)
		}
	}
	if len(docs) == 0 {
		d.errorAt(1, 1, "empty document; expected a mapping with at least an agents key")
		return nil
	}
	if len(docs) > 1 {
		tk := docs[1].Body.GetToken()
		if docs[1].Start != nil {
			tk = docs[1].Start
		}
		d.errorAt(tk.Position.Line, tk.Position.Column, "more than one YAML document; the config is a single document")
		return nil
	}
	body := docs[0].Body
	c := &anchorCollector{}
	ast.Walk(c, body)
	d.anchors = c.anchors

	root := d.resolve(body)
	if root == nil {
		return nil
	}
	if !isMapping(root) {
		d.errorf(body, "top level must be a mapping, got %s", describe(root))
		return nil
	}
	f := &File{
		Path:    d.name,
		Dir:     d.dir,
		DataDir: filepath.Join(d.dir, DefaultDataDir),
		Server:  Server{Listen: DefaultListen},
		Agents:  make(map[string]*Agent),
		Tools:   make(map[string]*Tool),
	}
	entries := d.entries(root)
	var agents *entry
	for _, e := range entries {
		switch e.key {
		case "data_dir":
			d.dataDir(e, f)
		case "server":
			d.server(e, &f.Server)
		case "agents":
			agents = &e
			d.agents(e, f.Agents)
		case "tools":
			d.tools(e, f.Tools)
		default:
			if !strings.HasPrefix(e.key, "x-") {
				d.unknownKey(e, "", topKeys)
			}
		}
	}
	switch {
	case agents == nil && len(entries) > 0:
		d.errorf(entries[0].keyNode, "no agents defined; add at least one under agents")
	case agents == nil:
		d.errorf(root, "no agents defined; add at least one under agents")
	case len(f.Agents) == 0:
		if v := d.resolve(agents.value); v != nil && (isMapping(v) || isNull(v)) {
			d.errorf(agents.keyNode, "no agents defined; add at least one under agents")
		}
	}
	d.checkRefs(f)
	return f
}

// duplicateKey matches the parser's message for a key defined twice.
var duplicateKey = regexp.MustCompile(`^mapping key (".*") already defined at \[(\d+):(\d+)\]$`)

// syntaxError records a parser error at its position.
func (d *decoder) syntaxError(err error) {
	var ye yaml.Error
	if errors.As(err, &ye) {
		line, col := 1, 1
		if tk := ye.GetToken(); tk != nil && tk.Position != nil {
			line, col = tk.Position.Line, tk.Position.Column
		}
		msg := ye.GetMessage()
		if m := duplicateKey.FindStringSubmatch(msg); m != nil {
			d.errorAt(line, col, "duplicate key %s (first defined at line %s, column %s)", m[1], m[2], m[3])
			return
		}
		d.errorAt(line, col, "syntax error: %s", msg)
		return
	}
	d.errorAt(1, 1, "syntax error: %v", err)
}

// unknownKey reports a key that the mapping described by where does not
// accept; where is empty for the top level.
func (d *decoder) unknownKey(e entry, where string, known []string) {
	if where == "" {
		d.errorf(e.keyNode, "unknown top-level key %q%s", e.key, didYouMean(e.key, known))
		return
	}
	d.errorf(e.keyNode, "unknown key %q in %s%s", e.key, where, didYouMean(e.key, known))
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
		d.errorf(r.node, "agent %q lists tool %q, which is neither declared under tools nor a builtin%s",
			r.agent, r.tool, didYouMean(r.tool, known))
	}
}

func (d *decoder) dataDir(e entry, f *File) {
	s, st := d.str(e, "data_dir")
	if st != valOK {
		return
	}
	if s == "" {
		d.errorf(e.value, "data_dir must not be empty")
		return
	}
	p := d.abs(s)
	if d.checkPath(e.value, fmt.Sprintf("data_dir %q", s), p, wantDir|mayBeMissing) {
		f.DataDir = p
	}
}

func (d *decoder) server(e entry, s *Server) {
	m, _ := d.mapping(e, "server")
	for _, f := range d.entries(m) {
		switch f.key {
		case "listen":
			v, st := d.str(f, "server.listen")
			if st != valOK {
				continue
			}
			if !validListen(v) {
				d.errorf(f.value, "server.listen must be host:port such as %s, got %q", DefaultListen, v)
				continue
			}
			s.Listen = v
		default:
			d.unknownKey(f, "server", serverKeys)
		}
	}
}

func (d *decoder) agents(e entry, out map[string]*Agent) {
	m, st := d.mapping(e, "agents")
	if st != valOK {
		return
	}
	for _, ae := range d.entries(m) {
		a := d.agent(ae)
		out[a.Name] = a
	}
}

func (d *decoder) agent(ae entry) *Agent {
	name := ae.key
	where := fmt.Sprintf("agent %q", name)
	if !namePattern.MatchString(name) {
		d.errorf(ae.keyNode, "invalid agent name %q: use 1 to 64 letters, digits, '_' or '-'", name)
	}
	a := &Agent{Name: name, MaxToolHops: DefaultMaxToolHops}
	m, st := d.mapping(ae, where)
	if st == valBad {
		return a
	}
	modelSt := valNull
	for _, f := range d.entries(m) {
		label := f.key + " in " + where
		switch f.key {
		case "instructions":
			if s, st := d.str(f, label); st == valOK {
				a.Instructions = s
			}
		case "model":
			modelSt = d.model(f, where, &a.Model)
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
				d.errorf(f.value, "%s must be between %d and %d, got %d", label, minToolHops, maxToolHops, n)
				continue
			}
			a.MaxToolHops = int(n)
		case "workspace":
			s, st := d.str(f, label)
			if st != valOK {
				continue
			}
			if s == "" {
				d.errorf(f.value, "%s must not be empty", label)
				continue
			}
			p := d.abs(s)
			if d.checkPath(f.value, fmt.Sprintf("workspace %q in %s", s, where), p, wantDir) {
				a.Workspace = p
			}
		default:
			d.unknownKey(f, where, agentKeys)
		}
	}
	if modelSt == valNull {
		d.errorf(ae.keyNode, "model is required in %s", where)
	}
	return a
}

// model decodes an agent's model mapping; it returns valNull when the
// model is absent.
func (d *decoder) model(e entry, where string, m *Model) status {
	mm, st := d.mapping(e, "model in "+where)
	if st != valOK {
		return st
	}
	var provider entry
	providerSt, scriptSt := valNull, valNull
	for _, f := range d.entries(mm) {
		label := "model." + f.key + " in " + where
		switch f.key {
		case "provider":
			provider = f
			m.Provider, providerSt = d.str(f, label)
		case "script":
			var s string
			s, scriptSt = d.str(f, label)
			if scriptSt != valOK {
				continue
			}
			if s == "" {
				d.errorf(f.value, "%s must not be empty", label)
				continue
			}
			p := d.abs(s)
			if d.checkPath(f.value, fmt.Sprintf("model.script %q in %s", s, where), p, 0) {
				m.Script = p
			}
		case "model":
			if s, st := d.str(f, label); st == valOK {
				m.Name = s
			}
		default:
			d.unknownKey(f, "model of "+where, modelKeys)
		}
	}
	if providerSt == valNull {
		d.errorf(e.keyNode, "model.provider is required in %s", where)
	}
	if providerSt != valOK {
		return valOK
	}
	switch p := m.Provider; {
	case p == ProviderReplay:
		if scriptSt == valNull {
			d.errorf(e.keyNode, "model.script is required in %s for provider %s", where, ProviderReplay)
		}
	case slices.Contains(futureProviders, p):
		d.errorf(provider.value, "provider %s is not supported yet in %s (supported: %s)", p, where, ProviderReplay)
	default:
		known := append([]string{ProviderReplay}, futureProviders...)
		if s := didYouMean(p, known); s != "" {
			d.errorf(provider.value, "unknown model provider %q in %s%s", p, where, s)
		} else {
			d.errorf(provider.value, "unknown model provider %q in %s (supported: %s)", p, where, ProviderReplay)
		}
	}
	return valOK
}

// toolList decodes an agent's tools list, recording each item for
// checkRefs.
func (d *decoder) toolList(e entry, agent, where string) []string {
	v := d.resolve(e.value)
	if v == nil || isNull(v) {
		return nil
	}
	seq, ok := v.(*ast.SequenceNode)
	if !ok {
		d.errorf(e.value, "tools in %s must be a list of tool names, got %s", where, describe(v))
		return nil
	}
	var out []string
	for _, item := range seq.Values {
		iv := d.resolve(item)
		if iv == nil {
			continue
		}
		s, ok := scalarText(iv)
		if !ok {
			d.errorf(item, "tools in %s must list tool names, got %s", where, describe(iv))
			continue
		}
		if slices.Contains(out, s) {
			d.errorf(item, "tool %q is listed twice in %s", s, where)
			continue
		}
		out = append(out, s)
		d.refs = append(d.refs, toolRef{agent: agent, tool: s, node: item})
	}
	return out
}

func (d *decoder) tools(e entry, out map[string]*Tool) {
	m, st := d.mapping(e, "tools")
	if st != valOK {
		return
	}
	for _, te := range d.entries(m) {
		t := d.tool(te)
		out[t.Name] = t
	}
}

func (d *decoder) tool(te entry) *Tool {
	name := te.key
	where := fmt.Sprintf("tool %q", name)
	if !namePattern.MatchString(name) {
		d.errorf(te.keyNode, "invalid tool name %q: use 1 to 64 letters, digits, '_' or '-'", name)
	}
	if slices.Contains(d.builtins, name) {
		d.errorf(te.keyNode, "tool %q has the same name as a builtin tool; rename it", name)
	}
	t := &Tool{Name: name}
	m, st := d.mapping(te, where)
	if st == valBad {
		return t
	}
	commandSt, schemaSt := valNull, valNull
	for _, f := range d.entries(m) {
		label := f.key + " in " + where
		switch f.key {
		case "description":
			if s, st := d.str(f, label); st == valOK {
				t.Description = s
			}
		case "input_schema":
			t.InputSchema, schemaSt = d.inputSchema(f, where)
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
		default:
			d.unknownKey(f, where, toolKeys)
		}
	}
	if commandSt == valNull {
		d.errorf(te.keyNode, "command is required in %s", where)
	}
	if schemaSt == valNull {
		d.errorf(te.keyNode, "input_schema is required in %s", where)
	}
	return t
}

// command decodes a tool's command list and checks that a command given
// as a path is an executable file.
func (d *decoder) command(e entry, where string) ([]string, status) {
	v := d.resolve(e.value)
	if v == nil {
		return nil, valBad
	}
	if isNull(v) {
		return nil, valNull
	}
	seq, ok := v.(*ast.SequenceNode)
	if !ok {
		d.errorf(e.value, "command in %s must be a list such as [./tools/run.sh, --flag], got %s", where, describe(v))
		return nil, valBad
	}
	if len(seq.Values) == 0 {
		d.errorf(e.value, "command in %s must not be empty", where)
		return nil, valBad
	}
	cmd := make([]string, 0, len(seq.Values))
	st := valOK
	for i, item := range seq.Values {
		iv := d.resolve(item)
		if iv == nil {
			st = valBad
			continue
		}
		s, ok := scalarText(iv)
		if !ok {
			d.errorf(item, "command[%d] in %s must be a string, got %s", i, where, describe(iv))
			st = valBad
			continue
		}
		cmd = append(cmd, s)
	}
	if st != valOK {
		return nil, valBad
	}
	prog := cmd[0]
	switch {
	case prog == "":
		d.errorf(seq.Values[0], "command[0] in %s must not be empty", where)
		return nil, valBad
	case strings.ContainsRune(prog, '/') || strings.ContainsRune(prog, filepath.Separator):
		p := d.abs(prog)
		if !d.checkPath(seq.Values[0], fmt.Sprintf("command %q in %s", prog, where), p, wantExec) {
			return nil, valBad
		}
		cmd[0] = p
	}
	return cmd, valOK
}

// inputSchema converts a tool's input_schema to JSON after checking that
// it describes an object.
func (d *decoder) inputSchema(e entry, where string) ([]byte, status) {
	v := d.resolve(e.value)
	if v == nil {
		return nil, valBad
	}
	if isNull(v) {
		return nil, valNull
	}
	label := "input_schema in " + where
	if !isMapping(v) {
		d.errorf(e.value, "%s must be a mapping holding a JSON Schema, got %s", label, describe(v))
		return nil, valBad
	}
	ok := true
	var typ *entry
	for _, f := range d.entries(v) {
		fv := d.resolve(f.value)
		if fv == nil {
			ok = false
			continue
		}
		switch f.key {
		case "type":
			typ = &f
			if s, _ := scalarText(fv); s != "object" {
				d.errorf(f.value, "%s must have type: object, got %s", label, describe(fv))
				ok = false
			}
		case "properties":
			if !isMapping(fv) {
				d.errorf(f.value, "input_schema.properties in %s must be a mapping, got %s", where, describe(fv))
				ok = false
			}
		case "required":
			if !d.stringList(fv) {
				d.errorf(f.value, "input_schema.required in %s must be a list of property names, got %s", where, describe(fv))
				ok = false
			}
		}
	}
	if typ == nil {
		d.errorf(e.keyNode, "%s must have type: object", label)
		ok = false
	}
	raw, converted := d.toJSON(e.value, label)
	if !ok || !converted {
		return nil, valBad
	}
	return raw, valOK
}

// stringList reports whether v (resolved) is a list of scalars.
func (d *decoder) stringList(v ast.Node) bool {
	seq, ok := v.(*ast.SequenceNode)
	if !ok {
		return false
	}
	for _, item := range seq.Values {
		iv := d.resolve(item)
		if iv == nil {
			return false
		}
		if _, ok := scalarText(iv); !ok {
			return false
		}
	}
	return true
}

func (d *decoder) env(e entry, where string) map[string]string {
	m, st := d.mapping(e, "env in "+where)
	if st != valOK {
		return nil
	}
	out := make(map[string]string)
	for _, f := range d.entries(m) {
		if !envNamePattern.MatchString(f.key) {
			d.errorf(f.keyNode, "env key %q in %s is not a valid variable name", f.key, where)
			continue
		}
		v := d.resolve(f.value)
		if v == nil {
			continue
		}
		s, ok := scalarText(v)
		if !ok {
			d.errorf(f.value, "env %s in %s must be a string, got %s", f.key, where, describe(v))
			continue
		}
		out[f.key] = s
	}
	return out
}

func (d *decoder) annotations(e entry, where string) Annotations {
	var a Annotations
	m, st := d.mapping(e, "annotations in "+where)
	if st != valOK {
		return a
	}
	for _, f := range d.entries(m) {
		label := "annotations." + f.key + " in " + where
		var dst *bool
		switch f.key {
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
		d.errorf(e.keyNode, "annotations in %s cannot be both read_only and destructive", where)
	}
	return a
}

// abs resolves p against the config file's folder.
func (d *decoder) abs(p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(d.dir, p)
}
