package config

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestLoadMCPExample loads testdata/mcp.yaml, the example of
// docs/config.md, and checks every value it sets.
func TestLoadMCPExample(t *testing.T) {
	t.Parallel()

	f, err := Load("testdata/mcp.yaml", Options{Builtins: builtins})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	dir, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	wantServers := map[string]*MCPServer{
		"everything": {
			Name:           "everything",
			Transport:      MCPStdio,
			Command:        []string{"npx", "-y", "@modelcontextprotocol/server-everything"},
			Env:            map[string]string{"HOME_TOKEN": "HOME_TOKEN"},
			Cwd:            filepath.Join(dir, "srv"),
			ToolPrefix:     "ev__",
			ConnectTimeout: 10 * time.Second,
			CallTimeout:    2 * time.Minute,
			IdleTimeout:    15 * time.Minute,
		},
		"remote": {
			Name:           "remote",
			Transport:      MCPStreamableHTTP,
			URL:            "https://example.test/mcp",
			Headers:        map[string]string{"X-Team": "infra"},
			BearerTokenEnv: "REMOTE_MCP_TOKEN",
			ToolPrefix:     "remote__",
			ConnectTimeout: DefaultMCPConnectTimeout,
			CallTimeout:    DefaultMCPCallTimeout,
			IdleTimeout:    DefaultMCPIdleTimeout,
		},
	}
	if diff := cmp.Diff(wantServers, f.MCPServers); diff != "" {
		t.Errorf("MCPServers mismatch (-want +got):\n%s", diff)
	}
	wantMCP := []*AgentMCP{
		{Server: "everything"},
		{Server: "remote", Allow: []string{"search*"}, Deny: []string{"delete_*"}},
	}
	if diff := cmp.Diff(wantMCP, f.Agents["helper"].MCP); diff != "" {
		t.Errorf("agent helper's MCP mismatch (-want +got):\n%s", diff)
	}
}

// TestParseMCPValues checks each valid form of an MCP server and of an
// agent's mcp item.
func TestParseMCPValues(t *testing.T) {
	t.Parallel()

	stdio := func(name string, cmd ...string) *MCPServer {
		return &MCPServer{Name: name, Transport: MCPStdio, Command: cmd, ToolPrefix: name + "__",
			ConnectTimeout: DefaultMCPConnectTimeout, CallTimeout: DefaultMCPCallTimeout, IdleTimeout: DefaultMCPIdleTimeout}
	}
	http := func(name, url string) *MCPServer {
		return &MCPServer{Name: name, Transport: MCPStreamableHTTP, URL: url, ToolPrefix: name + "__",
			ConnectTimeout: DefaultMCPConnectTimeout, CallTimeout: DefaultMCPCallTimeout, IdleTimeout: DefaultMCPIdleTimeout}
	}
	tests := []struct {
		name    string
		servers string // the mcp_servers section's items
		mcp     string // agent a's mcp value; empty for none
		want    func(dir string) map[string]*MCPServer
		wantMCP []*AgentMCP
	}{
		{
			name:    "StdioBareCommandDefaults",
			servers: "  mem: {command: server-memory}\n",
			want:    func(string) map[string]*MCPServer { return map[string]*MCPServer{"mem": stdio("mem", "server-memory")} },
		},
		{
			name:    "StdioPathCommandArgs",
			servers: "  run: {command: ./tools/run.sh, args: [--port, 0, \"a b\"]}\n",
			want: func(dir string) map[string]*MCPServer {
				return map[string]*MCPServer{"run": stdio("run", filepath.Join(dir, "tools", "run.sh"), "--port", "0", "a b")}
			},
		},
		{
			name:    "StdioEnvMapCwd",
			servers: "  s: {command: srv, env: {API_KEY: MY_KEY_VAR, HOME: HOME}, cwd: ws}\n",
			want: func(dir string) map[string]*MCPServer {
				s := stdio("s", "srv")
				s.Env = map[string]string{"API_KEY": "MY_KEY_VAR", "HOME": "HOME"}
				s.Cwd = filepath.Join(dir, "ws")
				return map[string]*MCPServer{"s": s}
			},
		},
		{
			name:    "StdioEnvList",
			servers: "  s:\n    command: srv\n    env: [A, B_2]\n",
			want: func(string) map[string]*MCPServer {
				s := stdio("s", "srv")
				s.Env = map[string]string{"A": "A", "B_2": "B_2"}
				return map[string]*MCPServer{"s": s}
			},
		},
		{
			name:    "EmptyToolPrefix",
			servers: "  s: {command: srv, tool_prefix: \"\"}\n",
			want: func(string) map[string]*MCPServer {
				s := stdio("s", "srv")
				s.ToolPrefix = ""
				return map[string]*MCPServer{"s": s}
			},
		},
		{
			name:    "NullToolPrefixIsDefault",
			servers: "  s: {command: srv, tool_prefix: ~}\n",
			want:    func(string) map[string]*MCPServer { return map[string]*MCPServer{"s": stdio("s", "srv")} },
		},
		{
			name:    "HTTPPlain",
			servers: "  web: {url: \"http://127.0.0.1:8080/mcp\", call_timeout: 30s}\n",
			want: func(string) map[string]*MCPServer {
				s := http("web", "http://127.0.0.1:8080/mcp")
				s.CallTimeout = 30 * time.Second
				return map[string]*MCPServer{"web": s}
			},
		},
		{
			name:    "MaxLengthName",
			servers: "  " + strings.Repeat("n", 32) + ": {url: \"https://h.test\"}\n",
			want: func(string) map[string]*MCPServer {
				n := strings.Repeat("n", 32)
				return map[string]*MCPServer{n: http(n, "https://h.test")}
			},
		},
		{
			name:    "AgentStringAndMappingForms",
			servers: "  s: {command: srv}\n  t: {command: srv}\n  u: {command: srv}\n",
			mcp:     "[s, {server: t, tools: {deny: [rm*]}}, {server: u}]",
			want: func(string) map[string]*MCPServer {
				return map[string]*MCPServer{"s": stdio("s", "srv"), "t": stdio("t", "srv"), "u": stdio("u", "srv")}
			},
			wantMCP: []*AgentMCP{{Server: "s"}, {Server: "t", Deny: []string{"rm*"}}, {Server: "u"}},
		},
		{
			name:    "AgentEmptyList",
			servers: "  s: {command: srv}\n",
			mcp:     "[]",
			want:    func(string) map[string]*MCPServer { return map[string]*MCPServer{"s": stdio("s", "srv")} },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := fixture(t)
			src := "mcp_servers:\n" + tt.servers + okAgent
			if tt.mcp != "" {
				src += "    mcp: " + tt.mcp + "\n"
			}
			f, err := Parse("agentrt.yaml", []byte(src), dir, Options{Builtins: builtins})
			if err != nil {
				t.Fatalf("Parse:\n%v", err)
			}
			if diff := cmp.Diff(tt.want(dir), f.MCPServers); diff != "" {
				t.Errorf("MCPServers mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantMCP, f.Agents["a"].MCP); diff != "" {
				t.Errorf("agent's MCP mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseMCPNoneIsEmpty(t *testing.T) {
	t.Parallel()

	f, err := Parse("agentrt.yaml", []byte(okAgent+"mcp_servers:\n"), fixture(t), Options{})
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if f.MCPServers == nil || len(f.MCPServers) != 0 || f.Agents["a"].MCP != nil {
		t.Errorf("MCPServers = %v, agent's MCP = %v; want an empty map and nil", f.MCPServers, f.Agents["a"].MCP)
	}
}

func TestAgentMCPAllows(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name  string
		a     AgentMCP
		tools map[string]bool
	}{
		{"AllowAll", AgentMCP{Server: "s"}, map[string]bool{"search": true, "delete_all": true, "": true}},
		{"AllowList", AgentMCP{Allow: []string{"search*", "get_?"}}, map[string]bool{"search": true, "search_web": true, "get_x": true, "get_xy": false, "delete": false}},
		{"DenyOnly", AgentMCP{Deny: []string{"delete_*"}}, map[string]bool{"delete_all": false, "delete": true, "search": true}},
		{"DenyWins", AgentMCP{Allow: []string{"*"}, Deny: []string{"delete_*", "rm"}}, map[string]bool{"delete_all": false, "rm": false, "search": true}},
		{"Class", AgentMCP{Allow: []string{"[a-c]*"}}, map[string]bool{"add": true, "delete": false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := map[string]bool{}
			for name := range tt.tools {
				got[name] = tt.a.Allows(name)
			}
			if diff := cmp.Diff(tt.tools, got); diff != "" {
				t.Errorf("Allows mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestParseMCPErrors is the golden list of error messages of mcp_servers
// and agents' mcp lists; agent a is on lines 1 to 3, mcp_servers starts
// on line 4.
func TestParseMCPErrors(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name string
		yaml string
		want []string
	}{
		{
			name: "SectionNotMapping",
			yaml: okAgent + "mcp_servers: [a]\n",
			want: []string{`agentrt.yaml:4:14: mcp_servers must be a mapping, got a list`},
		},
		{
			name: "ServerNotMapping",
			yaml: okAgent + "mcp_servers:\n  s: npx\n",
			want: []string{`agentrt.yaml:5:6: MCP server "s" must be a mapping, got string "npx"`},
		},
		{
			name: "ServerNames",
			yaml: okAgent + "mcp_servers:\n  bad.name: {command: x}\n  " + strings.Repeat("n", 33) + ": {command: x}\n",
			want: []string{
				`agentrt.yaml:5:3: invalid MCP server name "bad.name": use 1 to 32 letters, digits, '_' or '-'`,
				`agentrt.yaml:6:3: invalid MCP server name "` + strings.Repeat("n", 33) + `": use 1 to 32 letters, digits, '_' or '-'`,
			},
		},
		{
			name: "UnknownKey",
			yaml: okAgent + "mcp_servers:\n  s: {command: x, tool_prefx: p, timeout: 1s}\n",
			want: []string{
				`agentrt.yaml:5:19: unknown key "tool_prefx" in MCP server "s"; did you mean tool_prefix?`,
				`agentrt.yaml:5:34: unknown key "timeout" in MCP server "s"`,
			},
		},
		{
			name: "CommandAndURL",
			yaml: okAgent + "mcp_servers:\n  s:\n    command: x\n    url: https://h.test\n",
			want: []string{
				`agentrt.yaml:7:5: MCP server "s" has both command and url; set command for a stdio server or url for a streamable HTTP one`,
			},
		},
		{
			name: "NeitherCommandNorURL",
			yaml: okAgent + "mcp_servers:\n  s: {tool_prefix: p}\n  t: {}\n",
			want: []string{
				`agentrt.yaml:5:3: command or url is required in MCP server "s"`,
				`agentrt.yaml:6:3: command or url is required in MCP server "t"`,
			},
		},
		{
			name: "StdioKeysWithURL",
			yaml: okAgent + "mcp_servers:\n  s:\n    url: https://h.test\n    args: [a]\n    cwd: ws\n    env: [A]\n",
			want: []string{
				`agentrt.yaml:7:5: args in MCP server "s" applies to command servers only, and this server has a url`,
				`agentrt.yaml:8:5: cwd in MCP server "s" applies to command servers only, and this server has a url`,
				`agentrt.yaml:9:5: env in MCP server "s" applies to command servers only, and this server has a url`,
			},
		},
		{
			name: "HTTPKeysWithCommand",
			yaml: okAgent + "mcp_servers:\n  s:\n    command: x\n    headers: {X-A: b}\n    bearer_token_env: TOKEN\n",
			want: []string{
				`agentrt.yaml:7:5: headers in MCP server "s" applies to url servers only, and this server has a command`,
				`agentrt.yaml:8:5: bearer_token_env in MCP server "s" applies to url servers only, and this server has a command`,
			},
		},
		{
			name: "Command",
			yaml: okAgent + "mcp_servers:\n" +
				"  a: {command: [npx, -y]}\n" +
				"  b: {command: \"\"}\n" +
				"  c: {command: ./tools/missing.sh}\n" +
				"  d: {command: ./tools/plain.sh}\n" +
				"  e: {command: x, args: [a, [b]]}\n",
			want: []string{
				`agentrt.yaml:5:16: command in MCP server "a" must be a program such as npx or ./bin/server (its arguments go under args), got a list`,
				`agentrt.yaml:6:16: command in MCP server "b" must not be empty`,
				`agentrt.yaml:7:16: command "./tools/missing.sh" in MCP server "c" does not exist (resolved to $DIR/tools/missing.sh)`,
				`agentrt.yaml:8:16: command "./tools/plain.sh" in MCP server "d" is not executable (chmod +x $DIR/tools/plain.sh)`,
				`agentrt.yaml:9:29: args in MCP server "e" must list arguments, got a list`,
			},
		},
		{
			name: "Cwd",
			yaml: okAgent + "mcp_servers:\n  a: {command: x, cwd: notes.txt}\n  b: {command: x, cwd: nowhere}\n",
			want: []string{
				`agentrt.yaml:5:24: cwd "notes.txt" in MCP server "a" is not a directory`,
				`agentrt.yaml:6:24: cwd "nowhere" in MCP server "b" does not exist (resolved to $DIR/nowhere)`,
			},
		},
		{
			name: "Env",
			yaml: okAgent + "mcp_servers:\n" +
				"  a: {command: x, env: [GOOD, 1BAD, GOOD]}\n" +
				"  b: {command: x, env: {API-KEY: K, TOKEN: sk-live-123, OK: [A]}}\n" +
				"  c: {command: x, env: KEY}\n",
			want: []string{
				`agentrt.yaml:5:31: invalid variable name "1BAD" in env in MCP server "a": use letters, digits and '_', not starting with a digit`,
				`agentrt.yaml:5:37: variable "GOOD" is listed twice in env in MCP server "a"`,
				`agentrt.yaml:6:25: env key "API-KEY" in MCP server "b" is not a valid variable name`,
				`agentrt.yaml:6:44: env TOKEN in MCP server "b" must name an environment variable of the runtime, which holds the value, got string "sk-live-123"`,
				`agentrt.yaml:6:61: env OK in MCP server "b" must name an environment variable of the runtime, which holds the value, got a list`,
				`agentrt.yaml:7:24: env in MCP server "c" must be a list of environment variable names, or a mapping such as {API_KEY: MY_KEY_VAR}, got string "KEY"`,
			},
		},
		{
			name: "URL",
			yaml: okAgent + "mcp_servers:\n" +
				"  a: {url: ftp://h.test/mcp}\n" +
				"  b: {url: /mcp}\n" +
				"  c: {url: \"https://user:pw@h.test/mcp\"}\n" +
				"  d: {url: \"http://[::1\"}\n",
			want: []string{
				`agentrt.yaml:5:12: url in MCP server "a" must be an http or https URL such as https://mcp.example.com/mcp, got "ftp://h.test/mcp"`,
				`agentrt.yaml:6:12: url in MCP server "b" must be an http or https URL such as https://mcp.example.com/mcp, got "/mcp"`,
				`agentrt.yaml:7:12: url in MCP server "c" must not hold credentials: use bearer_token_env`,
				`agentrt.yaml:8:12: url in MCP server "d" must be an http or https URL such as https://mcp.example.com/mcp, got "http://[::1"`,
			},
		},
		{
			name: "HeadersAndBearer",
			yaml: okAgent + "mcp_servers:\n" +
				"  a: {url: \"https://h.test\", headers: {authorization: Bearer x, X-Ok: y}}\n" +
				"  b: {url: \"https://h.test\", headers: {\"bad header\": x, X-A: [1]}}\n" +
				"  c: {url: \"https://h.test\", bearer_token_env: \"$TOKEN\"}\n",
			want: []string{
				`agentrt.yaml:5:40: header authorization in MCP server "a" would put a secret in the file: name the variable holding the token with bearer_token_env`,
				`agentrt.yaml:6:40: header name "bad header" in MCP server "b" is not a valid HTTP header name`,
				`agentrt.yaml:6:62: header X-A in MCP server "b" must be a string, got a list`,
				`agentrt.yaml:7:48: bearer_token_env in MCP server "c" must name an environment variable (letters, digits and '_', not starting with a digit), got "$TOKEN"`,
			},
		},
		{
			name: "ToolPrefix",
			yaml: okAgent + "mcp_servers:\n  a: {command: x, tool_prefix: \"a.\"}\n  b: {command: x, tool_prefix: [a]}\n",
			want: []string{
				`agentrt.yaml:5:32: tool_prefix in MCP server "a" may hold only letters, digits, '_' or '-' (or be "" for none), got "a."`,
				`agentrt.yaml:6:32: tool_prefix in MCP server "b" must be a string, got a list`,
			},
		},
		{
			name: "Timeouts",
			yaml: okAgent + "mcp_servers:\n  a:\n    command: x\n    connect_timeout: 0s\n    call_timeout: -1m\n    idle_timeout: 10\n",
			want: []string{
				`agentrt.yaml:7:22: connect_timeout in MCP server "a" must be positive, got string "0s"`,
				`agentrt.yaml:8:19: call_timeout in MCP server "a" must be positive, got string "-1m"`,
				`agentrt.yaml:9:19: idle_timeout in MCP server "a" must be a duration such as 10s or 1m30s, got integer 10`,
			},
		},
		{
			name: "AgentUnknownServer",
			yaml: "mcp_servers:\n  everything: {command: x}\n  remote: {url: \"https://h.test\"}\n" + okAgent + "    mcp: [everythin, other]\n",
			want: []string{
				`agentrt.yaml:7:11: agent "a" lists MCP server "everythin", which is not under mcp_servers (declared: everything, remote); did you mean everything?`,
				`agentrt.yaml:7:22: agent "a" lists MCP server "other", which is not under mcp_servers (declared: everything, remote)`,
			},
		},
		{
			name: "AgentServerWithoutSection",
			yaml: okAgent + "    mcp: [s]\n",
			want: []string{`agentrt.yaml:4:11: agent "a" lists MCP server "s", but mcp_servers declares none`},
		},
		{
			name: "AgentServerTwice",
			yaml: "mcp_servers:\n  s: {command: x}\n" + okAgent + "    mcp:\n      - s\n      - {server: s, tools: {allow: [a]}}\n",
			want: []string{`agentrt.yaml:8:9: MCP server "s" is listed twice in agent "a"`},
		},
		{
			name: "AgentMCPShapes",
			yaml: "mcp_servers:\n  s: {command: x}\n" + okAgent +
				"    mcp: [[s], {tools: {allow: [a]}}, {server: s, tool: x, tools: {allow: a, denied: [b]}}]\n",
			want: []string{
				`agentrt.yaml:6:11: mcp in agent "a" must list MCP server names or {server: NAME, tools: {allow: […], deny: […]}}, got a list`,
				`agentrt.yaml:6:16: server is required in each mapping of mcp in agent "a"`,
				`agentrt.yaml:6:51: unknown key "tool" in mcp in agent "a"; did you mean tools?`,
				`agentrt.yaml:6:75: tools.allow of mcp in agent "a" must be a list of tool name patterns such as search_*, got string "a"`,
				`agentrt.yaml:6:78: unknown key "denied" in tools of mcp in agent "a"`,
			},
		},
		{
			name: "AgentMCPNotList",
			yaml: "mcp_servers:\n  s: {command: x}\n" + okAgent + "    mcp: s\n",
			want: []string{`agentrt.yaml:6:10: mcp in agent "a" must be a list of MCP server names, got string "s"`},
		},
		{
			name: "BadGlobs",
			yaml: "mcp_servers:\n  s: {command: x}\n" + okAgent + "    mcp: [{server: s, tools: {allow: [\"[a-\"], deny: [\"\", \"x\\\\\"]}}]\n",
			want: []string{
				`agentrt.yaml:6:39: tools.allow of mcp in agent "a" holds "[a-", which is not a valid pattern (use * and ?, [a-z] for a class)`,
				`agentrt.yaml:6:54: tools.deny of mcp in agent "a" holds "", which is not a valid pattern (use * and ?, [a-z] for a class)`,
				`agentrt.yaml:6:58: tools.deny of mcp in agent "a" holds "x\\", which is not a valid pattern (use * and ?, [a-z] for a class)`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := fixture(t)
			f, err := Parse("agentrt.yaml", []byte(tt.yaml), dir, Options{Builtins: builtins})
			if err == nil {
				t.Fatal("Parse: no error")
			}
			if f != nil {
				t.Errorf("Parse returned a file along with errors")
			}
			got := errorLines(t, err, dir)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("errors mismatch (-want +got):\n%s\ngot:\n%s", diff, "\t`"+strings.Join(got, "`,\n\t`")+"`,")
			}
		})
	}
}
