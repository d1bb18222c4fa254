package cli_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/cli"
	"github.com/agentrt/agentrt/internal/testenv"
	"github.com/agentrt/agentrt/sandbox"
)

// mcpConfig writes a config with the everything server (stdio), a server
// that exits at once (broken), and the agent helper using everything,
// with extra appended; it skips without the reference servers or a
// sandbox.
func mcpConfig(t *testing.T, extra string) string {
	t.Helper()
	if _, err := sandbox.New(sandbox.Options{}).Enforcer(); err != nil {
		testenv.Missing(t, "no sandbox can be enforced here: %v", err)
	}
	argv := testenv.MCPServer(t, "everything")
	b := setup(t)
	b.write(t, "s.replay.yaml", "responses:\n  - text: done\n")
	return b.write(t, "mcp.yaml", fmt.Sprintf(`models:
  r: {provider: replay, script: s.replay.yaml}
agents:
  helper: {model: r, mcp: [everything]}
mcp_servers:
  everything: {command: %q, args: [%q]}
  broken: {command: /bin/false}
%s`, argv[0], argv[1], extra))
}

// TestMCPListAndPing: mcp list reaches every server, ok with its protocol
// version and tool count or failed with the reason (exit 1); mcp ping
// names the protocol and latency, fails with the reason for a server that
// exits, and refuses an unknown server naming the known ones.
func TestMCPListAndPing(t *testing.T) {
	t.Parallel()
	cfg := mcpConfig(t, "")

	r := run(t, "", "mcp", "list", "--config", cfg, "--json")
	if r.code != cli.ExitFailed {
		t.Errorf("mcp list: exit %d, want %d (broken fails)\n%s%s", r.code, cli.ExitFailed, r.stdout, r.stderr)
	}
	var infos []cli.MCPServerInfo
	if err := json.Unmarshal([]byte(r.stdout), &infos); err != nil {
		t.Fatalf("mcp list --json: %v\n%s", err, r.stdout)
	}
	if len(infos) != 2 || infos[0].Name != "broken" || infos[1].Name != "everything" {
		t.Fatalf("mcp list: got %+v, want broken and everything", infos)
	}
	if b := infos[0]; b.Status != "failed" || b.Error == "" || b.Transport != "stdio" || b.Command[0] != "/bin/false" {
		t.Errorf("broken: got %+v, want failed with a reason", b)
	}
	if e := infos[1]; e.Status != "ok" || e.ProtocolVersion == "" || e.Tools == 0 {
		t.Errorf("everything: got %+v, want ok with a protocol version and tools", e)
	}

	r = run(t, "", "mcp", "list", "--config", cfg)
	matchLines(t, r.stdout, []string{
		`✘ broken           stdio           /bin/false`,
		`      failed after {ANY}ms: connecting: {ANY}`,
		`✔ everything       stdio           {ANY}node {ANY}index.js`,
		`      ok · protocol {ANY} · {ANY} tools · {ANY}ms`,
	})

	r = runOK(t, "", "mcp", "ping", "--config", cfg, "everything")
	matchLines(t, r.stdout, []string{`everything: ok · protocol {ANY} · {ANY} tools · {ANY}ms`})

	r = run(t, "", "mcp", "ping", "--config", cfg, "broken")
	if r.code != cli.ExitFailed || !strings.Contains(r.stderr, "MCP server broken failed after") {
		t.Errorf("ping broken: exit %d, stderr %q; want %d and the reason", r.code, r.stderr, cli.ExitFailed)
	}

	r = run(t, "", "mcp", "ping", "--config", cfg, "nope")
	if want := `unknown MCP server "nope": ` + cfg; r.code != cli.ExitUsage || !strings.Contains(r.stderr, want) || !strings.Contains(r.stderr, "defines broken, everything") {
		t.Errorf("ping nope: exit %d, stderr %q; want %d naming the known servers", r.code, r.stderr, cli.ExitUsage)
	}
}

// TestMCPTools: mcp tools lists a server's tools under the names the
// model sees, with their annotations, whether the agent offers them, and
// the policy's decision for the agent.
func TestMCPTools(t *testing.T) {
	t.Parallel()
	cfg := mcpConfig(t, `policy:
  rules: [mcp.rules.yaml]
`)
	if err := os.WriteFile(filepath.Join(filepath.Dir(cfg), "mcp.rules.yaml"), []byte(`tier: workspace
rules:
  - id: mcp-reads
    mcp_servers: [everything]
    annotations: {read_only: true}
    decision: allow
    reason_code: mcp_read
  - id: mcp-rest
    mcp_servers: [everything]
    priority: -1
    decision: deny
    reason_code: mcp_write
`), 0o644); err != nil {
		t.Fatal(err)
	}
	r := runOK(t, "", "mcp", "tools", "--config", cfg, "--json", "everything")
	var tools []cli.MCPToolInfo
	if err := json.Unmarshal([]byte(r.stdout), &tools); err != nil {
		t.Fatalf("mcp tools --json: %v\n%s", err, r.stdout)
	}
	got := map[string]cli.MCPToolInfo{}
	for _, tl := range tools {
		got[tl.Name] = tl
	}
	echo, ok := got["everything__echo"]
	if !ok {
		t.Fatalf("no everything__echo among %d tools", len(tools))
	}
	if echo.Server != "everything" || echo.Remote != "echo" || !echo.ReadOnly || echo.Destructive || !echo.Offered || echo.Agent != "helper" {
		t.Errorf("echo: got %+v", echo)
	}
	if echo.Decision != "allow" {
		t.Errorf("echo: decision %q (%s), want allow", echo.Decision, echo.ReasonCode)
	}
	if d := got["everything__toggle-simulated-logging"]; d.Decision != "deny" || d.ReasonCode == "" {
		t.Errorf("toggle-simulated-logging: decision %q (%s), want deny by the rule on non-read-only MCP tools", d.Decision, d.ReasonCode)
	}

	r = run(t, "", "mcp", "tools", "--config", cfg, "--agent", "ghost")
	if r.code != cli.ExitUsage || !strings.Contains(r.stderr, `unknown agent "ghost"`) {
		t.Errorf("--agent ghost: exit %d, stderr %q", r.code, r.stderr)
	}
}

// TestDoctorMCP: doctor checks each MCP server starts and lists its
// tools, and warns with the reason for one that does not, without
// failing the check.
func TestDoctorMCP(t *testing.T) {
	t.Parallel()
	cfg := mcpConfig(t, "")
	r := runOK(t, "", "doctor", "--config", cfg)
	lines := strings.Split(r.stdout, "\n")
	i := slices.Index(lines, "mcp servers")
	if i < 0 {
		t.Fatalf("no mcp servers section:\n%s", r.stdout)
	}
	matchLines(t, strings.Join(lines[i:], "\n"), []string{
		"mcp servers",
		`  ! broken             stdio: warning: its tools will not be offered: connecting: {ANY}`,
		`  ✔ everything         stdio: started, {ANY} tools, protocol {ANY} ({ANY}ms)`,
	})
	r = runOK(t, "", "doctor", "--config", cfg, "--json")
	var rep cli.DoctorReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.MCP) != 2 || rep.MCP[0].Status != "failed" || rep.MCP[1].Status != "ok" || !rep.OK {
		t.Errorf("doctor --json: ok %v, mcp %+v", rep.OK, rep.MCP)
	}
}

// TestBenchMCP: bench mcp times echo calls through agentrt's client and
// the SDK's directly and prints one RESULT line with both medians and the
// overhead.
func TestBenchMCP(t *testing.T) {
	t.Parallel()
	if _, err := sandbox.New(sandbox.Options{}).Enforcer(); err != nil {
		testenv.Missing(t, "no sandbox can be enforced here: %v", err)
	}
	argv := testenv.MCPServer(t, "everything")
	r := runOK(t, "", "bench", "mcp", "--calls", "20", "--warmup", "2", "--server-command", strings.Join(argv, " "))
	line, ok := strings.CutPrefix(strings.TrimSpace(r.stdout), "RESULT ")
	if !ok || strings.Contains(line, "\n") {
		t.Fatalf("want exactly one RESULT line, got:\n%s", r.stdout)
	}
	var res map[string]any
	if err := json.Unmarshal([]byte(line), &res); err != nil {
		t.Fatal(err)
	}
	if res["bench"] != "mcp" || res["calls"] != 20.0 {
		t.Errorf("RESULT %s: want bench mcp, 20 calls", line)
	}
	for _, k := range []string{"agentrt_us_per_call", "direct_us_per_call", "session_start_ms"} {
		if v, _ := res[k].(float64); v <= 0 {
			t.Errorf("RESULT %s: %s = %v, want > 0", line, k, res[k])
		}
	}
	if _, ok := res["overhead_us_per_call"].(float64); !ok {
		t.Errorf("RESULT %s: no overhead_us_per_call", line)
	}

	r = run(t, "", "bench", "mcp", "--calls", "0", "--server-command", strings.Join(argv, " "))
	if r.code != cli.ExitUsage {
		t.Errorf("--calls 0: exit %d, want %d", r.code, cli.ExitUsage)
	}
}
