package configure

import (
	"fmt"
	"net/http"
	"os"
	"slices"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/config"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/tool/mcp"
)

// mcpFromFile turns the file's mcp_servers into the runtime's, reading
// the environment variables they name now: a stdio server's environment
// and a bearer token. What they hold is a secret the redactor removes
// from everything the runtime keeps or shows.
func mcpFromFile(f *config.File, cfg *agentrt.Config) error {
	servers, secrets, err := MCPServers(f)
	if err != nil {
		return err
	}
	cfg.MCPServers = servers
	cfg.Redact.Secrets = append(cfg.Redact.Secrets, secrets...)
	return nil
}

// MCPServers returns the file's MCP servers as package mcp reaches them,
// in name order, and the secret values read from the environment for
// them.
func MCPServers(f *config.File) ([]*mcp.Server, []string, error) {
	var out []*mcp.Server
	var secrets []string
	for _, name := range sortedKeys(f.MCPServers) {
		s := f.MCPServers[name]
		ms := &mcp.Server{
			Name: name, ToolPrefix: s.ToolPrefix, Cwd: s.Cwd,
			ConnectTimeout: s.ConnectTimeout, CallTimeout: s.CallTimeout, IdleTimeout: s.IdleTimeout,
		}
		switch s.Transport {
		case config.MCPStdio:
			ms.Transport, ms.Command = runtype.TransportStdio, s.Command
			for _, k := range sortedKeys(s.Env) {
				v, ok := os.LookupEnv(s.Env[k])
				if !ok {
					return nil, nil, fmt.Errorf("MCP server %s: environment variable %s (for its %s) is not set", name, s.Env[k], k)
				}
				ms.Env = append(ms.Env, k+"="+v)
				if len(v) >= 8 {
					secrets = append(secrets, v)
				}
			}
			if !slices.ContainsFunc(ms.Env, func(kv string) bool { return len(kv) > 5 && kv[:5] == "PATH=" }) {
				// A program found on PATH needs one; the runtime's is not a
				// secret.
				ms.Env = append(ms.Env, "PATH="+os.Getenv("PATH"))
			}
		case config.MCPStreamableHTTP:
			ms.Transport, ms.URL = runtype.TransportStreamableHTTP, s.URL
			ms.Header = http.Header{}
			for _, k := range sortedKeys(s.Headers) {
				ms.Header.Set(k, s.Headers[k])
			}
			if s.BearerTokenEnv != "" {
				tok := os.Getenv(s.BearerTokenEnv)
				if tok == "" {
					return nil, nil, fmt.Errorf("MCP server %s: environment variable %s (its bearer_token_env) is not set", name, s.BearerTokenEnv)
				}
				ms.Header.Set("Authorization", "Bearer "+tok)
				secrets = append(secrets, tok)
			}
		}
		out = append(out, ms)
	}
	return out, secrets, nil
}

// mcpUses are an agent's MCP servers with the tools it may use of each.
func mcpUses(a *config.Agent) []agentrt.MCPUse {
	var out []agentrt.MCPUse
	for _, u := range a.MCP {
		out = append(out, agentrt.MCPUse{Server: u.Server, Allow: u.Allows})
	}
	return out
}
