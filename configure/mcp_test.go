package configure_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/configure"
	"github.com/agentrt/agentrt/runtype"
)

// TestMCPFromFile: a stdio server's environment is only what its env
// key names, read from the runtime's environment (and PATH); a bearer
// token comes from its variable into the Authorization header; both
// values are secrets the redactor removes. A variable that is not set is
// an error naming it.
func TestMCPFromFile(t *testing.T) {
	t.Setenv("MCP_TEST_KEY", "key-value-from-the-env")
	t.Setenv("MCP_TEST_TOKEN", "token-value-from-the-env")
	t.Setenv("MCP_TEST_UNRELATED", "must-not-reach-the-server")
	dir := t.TempDir()
	write := func(body string) string {
		for name, b := range map[string]string{
			"s.replay.yaml": "responses: [{text: hi}]\n",
			"agentrt.yaml":  body,
		} {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(b), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return filepath.Join(dir, "agentrt.yaml")
	}
	cfg, _, err := configure.Load(write(`
mcp_servers:
  local:
    command: /bin/cat
    env: {API_KEY: MCP_TEST_KEY}
  remote:
    url: https://mcp.example.test/mcp
    headers: {X-Team: infra}
    bearer_token_env: MCP_TEST_TOKEN
agents:
  a:
    model: {provider: replay, script: s.replay.yaml}
    mcp:
      - local
      - server: remote
        tools: {deny: ["delete_*"]}
`))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.MCPServers) != 2 {
		t.Fatalf("servers = %+v", cfg.MCPServers)
	}
	local, remote := cfg.MCPServers[0], cfg.MCPServers[1]
	if local.Transport != runtype.TransportStdio || !slices.Contains(local.Env, "API_KEY=key-value-from-the-env") || local.ToolPrefix != "local__" {
		t.Errorf("local = %+v", local)
	}
	for _, kv := range local.Env {
		if strings.Contains(kv, "must-not-reach") || !(strings.HasPrefix(kv, "API_KEY=") || strings.HasPrefix(kv, "PATH=")) {
			t.Errorf("the stdio server's environment holds %q", kv)
		}
	}
	if remote.Transport != runtype.TransportStreamableHTTP || remote.Header.Get("Authorization") != "Bearer token-value-from-the-env" || remote.Header.Get("X-Team") != "infra" {
		t.Errorf("remote = %+v", remote)
	}
	for _, s := range []string{"key-value-from-the-env", "token-value-from-the-env"} {
		if !slices.Contains(cfg.Redact.Secrets, s) {
			t.Errorf("%s is not among the redactor's secrets", s)
		}
	}
	uses := cfg.Agents["a"].MCP
	if len(uses) != 2 || uses[1].Server != "remote" || uses[1].Allow("delete_all") || !uses[1].Allow("search") {
		t.Errorf("the agent's MCP uses = %+v", uses)
	}

	t.Setenv("MCP_TEST_TOKEN", "")
	if _, _, err := configure.Load(write(`
mcp_servers:
  remote:
    url: https://mcp.example.test/mcp
    bearer_token_env: MCP_TEST_TOKEN
agents:
  a:
    model: {provider: replay, script: s.replay.yaml}
    mcp: [remote]
`)); err == nil || !strings.Contains(err.Error(), "MCP_TEST_TOKEN") {
		t.Errorf("a bearer token variable that is not set: %v, want an error naming it", err)
	}
}
