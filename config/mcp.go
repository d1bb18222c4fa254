package config

import (
	"fmt"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/agentrt/agentrt/internal/yamlpos"
)

// Transports of an MCP server.
const (
	MCPStdio          = "stdio"
	MCPStreamableHTTP = "streamable_http"
)

// MCP server defaults, for the timeouts the file does not set.
const (
	DefaultMCPConnectTimeout = 30 * time.Second
	DefaultMCPCallTimeout    = 5 * time.Minute
	DefaultMCPIdleTimeout    = 10 * time.Minute
)

// MCPServer is one server under mcp_servers: a Model Context Protocol
// server whose tools agents may call. It is started (stdio) or reached
// (streamable HTTP) by the runtime; config reads no environment variable
// and starts nothing.
type MCPServer struct {
	// Name is the server's key under mcp_servers.
	Name string
	// Transport is MCPStdio when the file gives command, MCPStreamableHTTP
	// when it gives url; it gives exactly one of them.
	Transport string

	// Command is the stdio server's program then its args. Command[0] is
	// resolved as a command tool's is: an absolute path when the file
	// wrote it as a path, a bare name (looked up in PATH) otherwise.
	Command []string
	// Env maps a variable the server sees to the runtime's environment
	// variable its value comes from (never a literal value); nil when
	// none.
	Env map[string]string
	// Cwd is the server's absolute working directory; empty means the
	// agent's workspace, or the config file's folder.
	Cwd string

	// URL is the streamable HTTP server's endpoint, http or https.
	URL string
	// Headers are literal header values sent with every request; nil when
	// none. They are not secrets: a header named Authorization is an error
	// (use BearerTokenEnv).
	Headers map[string]string
	// BearerTokenEnv names the environment variable holding a bearer
	// token; empty when none.
	BearerTokenEnv string

	// ToolPrefix is put before each tool's name as the model sees it;
	// default Name+"__", and empty when the file writes tool_prefix: "".
	ToolPrefix string
	// ConnectTimeout bounds connecting and initializing a session;
	// default DefaultMCPConnectTimeout.
	ConnectTimeout time.Duration
	// CallTimeout bounds one tool call; default DefaultMCPCallTimeout.
	CallTimeout time.Duration
	// IdleTimeout closes a session unused this long; default
	// DefaultMCPIdleTimeout.
	IdleTimeout time.Duration
}

// AgentMCP is one item of an agent's mcp list: a server the agent uses
// and which of its tools.
type AgentMCP struct {
	// Server names a server under mcp_servers.
	Server string
	// Allow and Deny are globs (path.Match) over the server's own tool
	// names, without prefix; nil when none. An empty Allow allows every
	// tool; Deny wins over Allow.
	Allow []string
	Deny  []string
}

// Allows reports whether the agent may use the server's tool named name
// (without prefix).
func (a *AgentMCP) Allows(name string) bool {
	if matchAny(a.Deny, name) {
		return false
	}
	return len(a.Allow) == 0 || matchAny(a.Allow, name)
}

// matchAny reports whether one of globs, valid by construction, matches
// name.
func matchAny(globs []string, name string) bool {
	for _, g := range globs {
		if ok, _ := path.Match(g, name); ok {
			return true
		}
	}
	return false
}

// The keys MCP mappings accept.
var (
	mcpServerKeys = []string{"command", "args", "env", "cwd", "url", "headers", "bearer_token_env",
		"tool_prefix", "connect_timeout", "call_timeout", "idle_timeout"}
	agentMCPKeys = []string{"server", "tools"}
	mcpToolsKeys = []string{"allow", "deny"}
)

// The keys that belong to one transport only.
var (
	stdioOnlyKeys = []string{"args", "env", "cwd"}
	httpOnlyKeys  = []string{"headers", "bearer_token_env"}
)

// mcpServerNamePattern is what a server's name must match: it is part of
// the names of its tools as the model sees them.
var mcpServerNamePattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,32}$`)

// toolPrefixPattern is what a tool_prefix must match.
var toolPrefixPattern = regexp.MustCompile(`^[A-Za-z0-9_-]*$`)

// mcpRef is one item of an agent's mcp list, checked once every server
// is known.
type mcpRef struct {
	agent  string
	server string
	pos    yamlpos.Pos
}

// mcpServers decodes the mcp_servers section.
func (d *decoder) mcpServers(e yamlpos.Field, out map[string]*MCPServer) {
	m, _ := d.mapping(e, "mcp_servers")
	for _, se := range m.Fields() {
		s := d.mcpServer(se)
		out[s.Name] = s
	}
}

func (d *decoder) mcpServer(se yamlpos.Field) *MCPServer {
	name := se.Key
	where := fmt.Sprintf("MCP server %q", name)
	if !mcpServerNamePattern.MatchString(name) {
		d.errorAt(se.KeyPos, "invalid MCP server name %q: use 1 to 32 letters, digits, '_' or '-'", name)
	}
	s := &MCPServer{Name: name, ToolPrefix: name + "__", ConnectTimeout: DefaultMCPConnectTimeout,
		CallTimeout: DefaultMCPCallTimeout, IdleTimeout: DefaultMCPIdleTimeout}
	m, st := d.mapping(se, where)
	if st == valBad {
		return s
	}
	var command, urlKey *yamlpos.Field
	var args []string
	written := map[string]yamlpos.Pos{} // keys with a value, for the transport checks
	for _, f := range m.Fields() {
		label := f.Key + " in " + where
		if v := f.Value(); v != nil && v.Kind != yamlpos.Null {
			written[f.Key] = f.KeyPos
		}
		switch f.Key {
		case "command":
			if prog, st := d.mcpCommand(f, where); st == valOK {
				command, s.Command = &f, []string{prog}
			}
		case "args":
			d.scalarList(f, label, "arguments", func(item *yamlpos.Value) { args = append(args, item.Text) })
		case "env":
			s.Env = d.mcpEnv(f, where)
		case "cwd":
			s.Cwd, _ = d.path(f, "cwd", " in "+where, wantDir)
		case "url":
			if u, st := d.str(f, label); st == valOK {
				urlKey = &f
				s.URL = d.mcpURL(f.Value().Pos, u, label)
			}
		case "headers":
			s.Headers = d.mcpHeaders(f, where)
		case "bearer_token_env":
			s.BearerTokenEnv = d.envName(f, label)
		case "tool_prefix":
			if p, st := d.str(f, label); st == valOK {
				if toolPrefixPattern.MatchString(p) {
					s.ToolPrefix = p
				} else {
					d.errorAt(f.Value().Pos, "%s may hold only letters, digits, '_' or '-' (or be \"\" for none), got %q", label, p)
				}
			}
		case "connect_timeout", "call_timeout", "idle_timeout":
			if v, st := d.duration(f, label); st == valOK {
				*map[string]*time.Duration{
					"connect_timeout": &s.ConnectTimeout, "call_timeout": &s.CallTimeout, "idle_timeout": &s.IdleTimeout,
				}[f.Key] = v
			}
		default:
			d.unknownKey(f, where, mcpServerKeys)
		}
	}
	d.mcpTransport(s, se.KeyPos, where, written)
	if s.Transport == MCPStdio && command != nil {
		s.Command = append(s.Command, args...)
	} else {
		s.Command, s.Env, s.Cwd = nil, nil, ""
	}
	if s.Transport != MCPStreamableHTTP || urlKey == nil {
		s.URL, s.Headers, s.BearerTokenEnv = "", nil, ""
	}
	return s
}

// mcpTransport sets s.Transport from the keys written (with the position
// of each key) and reports a server with both command and url, neither,
// or keys of the other transport.
func (d *decoder) mcpTransport(s *MCPServer, keyPos yamlpos.Pos, where string, written map[string]yamlpos.Pos) {
	cmdPos, hasCmd := written["command"]
	urlPos, hasURL := written["url"]
	switch {
	case hasCmd && hasURL:
		later := cmdPos
		if before(cmdPos, urlPos) {
			later = urlPos
		}
		d.errorAt(later, "%s has both command and url; set command for a stdio server or url for a streamable HTTP one", where)
		return
	case !hasCmd && !hasURL:
		d.errorAt(keyPos, "command or url is required in %s", where)
		return
	case hasCmd:
		s.Transport = MCPStdio
		for _, k := range httpOnlyKeys {
			if p, ok := written[k]; ok {
				d.errorAt(p, "%s in %s applies to url servers only, and this server has a command", k, where)
			}
		}
	default:
		s.Transport = MCPStreamableHTTP
		for _, k := range stdioOnlyKeys {
			if p, ok := written[k]; ok {
				d.errorAt(p, "%s in %s applies to command servers only, and this server has a url", k, where)
			}
		}
	}
}

// before reports whether p comes before q in the file.
func before(p, q yamlpos.Pos) bool {
	return p.Line < q.Line || p.Line == q.Line && p.Column < q.Column
}

// mcpCommand decodes a stdio server's command: one program, its arguments
// under args. A path is resolved and checked as a command tool's is.
func (d *decoder) mcpCommand(f yamlpos.Field, where string) (string, status) {
	label := "command in " + where
	v, st := d.present(f, label, "a program such as npx or ./bin/server (its arguments go under args)", (*yamlpos.Value).Scalar)
	if st != valOK {
		return "", st
	}
	prog := v.Text
	switch {
	case prog == "":
		d.errorAt(v.Pos, "%s must not be empty", label)
		return "", valBad
	case strings.ContainsRune(prog, '/'):
		p := d.abs(prog)
		if !d.checkPath(v.Pos, fmt.Sprintf("command %q in %s", prog, where), p, wantExec) {
			return "", valBad
		}
		return p, valOK
	}
	return prog, valOK
}

// mcpEnv decodes a stdio server's env: a list of variable names passed
// through under the same names, or a mapping from the name the server
// sees to the runtime's variable that holds the value.
func (d *decoder) mcpEnv(f yamlpos.Field, where string) map[string]string {
	label := "env in " + where
	const want = "a list of environment variable names, or a mapping such as {API_KEY: MY_KEY_VAR}"
	v, st := d.present(f, label, want, func(v *yamlpos.Value) bool { return v.Kind == yamlpos.Seq || v.Kind == yamlpos.Map })
	if st != valOK {
		return nil
	}
	out := make(map[string]string)
	if v.Kind == yamlpos.Seq {
		for _, name := range d.envNameList(f, label) {
			out[name] = name
		}
		return out
	}
	for _, ef := range v.Fields() {
		ev := ef.Value()
		switch {
		case !envNamePattern.MatchString(ef.Key):
			d.errorAt(ef.KeyPos, "env key %q in %s is not a valid variable name", ef.Key, where)
		case ev == nil:
		case !ev.Scalar() || !envNamePattern.MatchString(ev.Text):
			d.errorAt(ev.Pos, "env %s in %s must name an environment variable of the runtime, which holds the value, got %s",
				ef.Key, where, ev.Describe())
		default:
			out[ef.Key] = ev.Text
		}
	}
	return out
}

// envName decodes f's value as an environment variable's name.
func (d *decoder) envName(f yamlpos.Field, label string) string {
	s, st := d.str(f, label)
	if st == valOK && !envNamePattern.MatchString(s) {
		d.errorAt(f.Value().Pos, "%s must name an environment variable (letters, digits and '_', not starting with a digit), got %q", label, s)
		return ""
	}
	return s
}

// mcpURL checks a streamable HTTP server's URL.
func (d *decoder) mcpURL(pos yamlpos.Pos, s, label string) string {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		d.errorAt(pos, "%s must be an http or https URL such as https://mcp.example.com/mcp, got %q", label, s)
		return ""
	}
	if u.User != nil {
		d.errorAt(pos, "%s must not hold credentials: use bearer_token_env", label)
		return ""
	}
	return s
}

// mcpHeaders decodes a streamable HTTP server's headers, which may not
// carry the Authorization header: its value would be a secret in the file.
func (d *decoder) mcpHeaders(f yamlpos.Field, where string) map[string]string {
	hs := d.hookHeaders(f, where)
	for _, hf := range f.Value().Fields() {
		if _, ok := hs[hf.Key]; ok && strings.EqualFold(hf.Key, "Authorization") {
			d.errorAt(hf.KeyPos, "header %s in %s would put a secret in the file: name the variable holding the token with bearer_token_env", hf.Key, where)
			delete(hs, hf.Key)
		}
	}
	if len(hs) == 0 {
		return nil
	}
	return hs
}

// agentMCP decodes an agent's mcp list, recording each server for
// checkMCPRefs.
func (d *decoder) agentMCP(e yamlpos.Field, agent, where string) []*AgentMCP {
	label := "mcp in " + where
	v, st := d.present(e, label, "a list of MCP server names", is(yamlpos.Seq))
	if st != valOK {
		return nil
	}
	var out []*AgentMCP
	for _, item := range v.Items() {
		var a *AgentMCP
		switch {
		case item == nil:
			continue
		case item.Scalar():
			a = &AgentMCP{Server: item.Text}
		case item.Kind == yamlpos.Map:
			if a = d.agentMCPEntry(item, where); a == nil {
				continue
			}
		default:
			d.errorAt(item.Pos, "%s must list MCP server names or {server: NAME, tools: {allow: […], deny: […]}}, got %s", label, item.Describe())
			continue
		}
		if slices.ContainsFunc(out, func(b *AgentMCP) bool { return b.Server == a.Server }) {
			d.errorAt(item.Pos, "MCP server %q is listed twice in %s", a.Server, where)
			continue
		}
		out = append(out, a)
		d.mcpRefs = append(d.mcpRefs, mcpRef{agent: agent, server: a.Server, pos: item.Pos})
	}
	return out
}

// agentMCPEntry decodes an item of an agent's mcp list written as a
// mapping; nil when it names no server.
func (d *decoder) agentMCPEntry(v *yamlpos.Value, where string) *AgentMCP {
	a := &AgentMCP{}
	in := "mcp in " + where
	for _, f := range v.Fields() {
		switch f.Key {
		case "server":
			a.Server, _ = d.str(f, "server in "+in)
		case "tools":
			m, _ := d.mapping(f, "tools of "+in)
			for _, tf := range m.Fields() {
				switch tf.Key {
				case "allow":
					a.Allow = d.globs(tf, "tools.allow of "+in)
				case "deny":
					a.Deny = d.globs(tf, "tools.deny of "+in)
				default:
					d.unknownKey(tf, "tools of "+in, mcpToolsKeys)
				}
			}
		default:
			d.unknownKey(f, in, agentMCPKeys)
		}
	}
	if a.Server == "" {
		d.errorAt(v.Pos, "server is required in each mapping of %s", in)
		return nil
	}
	return a
}

// globs decodes a list of path.Match patterns.
func (d *decoder) globs(f yamlpos.Field, label string) []string {
	var out []string
	d.scalarList(f, label, "tool name patterns such as search_*", func(item *yamlpos.Value) {
		if _, err := path.Match(item.Text, ""); err != nil || item.Text == "" {
			d.errorAt(item.Pos, "%s holds %q, which is not a valid pattern (use * and ?, [a-z] for a class)", label, item.Text)
			return
		}
		out = append(out, item.Text)
	})
	return out
}

// checkMCPRefs reports agents listing MCP servers not under mcp_servers.
func (d *decoder) checkMCPRefs(f *File) {
	var known []string
	for name := range f.MCPServers {
		known = append(known, name)
	}
	slices.Sort(known)
	for _, r := range d.mcpRefs {
		if f.MCPServers[r.server] != nil {
			continue
		}
		if len(known) == 0 {
			d.errorAt(r.pos, "agent %q lists MCP server %q, but mcp_servers declares none", r.agent, r.server)
			continue
		}
		d.errorAt(r.pos, "agent %q lists MCP server %q, which is not under mcp_servers (declared: %s)%s",
			r.agent, r.server, strings.Join(known, ", "), didYouMean(r.server, known))
	}
}
