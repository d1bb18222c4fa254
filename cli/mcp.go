package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/configure"
	"github.com/agentrt/agentrt/loop"
	"github.com/agentrt/agentrt/policy"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/sandbox"
	"github.com/agentrt/agentrt/tool/mcp"
)

// MCPServerInfo is one configured MCP server as agentrt mcp list and
// agentrt mcp ping report it.
type MCPServerInfo struct {
	Name      string   `json:"name"`
	Transport string   `json:"transport"`
	Command   []string `json:"command,omitempty"`
	URL       string   `json:"url,omitempty"`
	// Status is ok (it started, answered a ping and listed its tools) or
	// failed (Error says why).
	Status          string `json:"status"`
	Error           string `json:"error,omitempty"`
	ProtocolVersion string `json:"protocolVersion,omitempty"`
	Tools           int    `json:"tools"`
	LatencyMs       int64  `json:"latencyMs"`
}

// MCPToolInfo is one tool of an MCP server as agentrt mcp tools reports
// it: its name as the model sees it, the server's own name, its
// annotations, and what the policy decides for a call of it by the
// agent.
type MCPToolInfo struct {
	Name        string `json:"name"`
	Server      string `json:"server"`
	Remote      string `json:"remote"`
	ReadOnly    bool   `json:"readOnly"`
	Idempotent  bool   `json:"idempotent"`
	Destructive bool   `json:"destructive"`
	OpenWorld   bool   `json:"openWorld"`
	// Agent is the agent the decision is for; Offered whether that agent
	// offers the tool to its model (its mcp key names the server and
	// allows the tool).
	Agent      string `json:"agent"`
	Offered    bool   `json:"offered"`
	Decision   string `json:"decision"`
	ReasonCode string `json:"reasonCode,omitempty"`
}

// MCP server statuses.
const (
	mcpOK     = "ok"
	mcpFailed = "failed"
)

func newMCPCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Inspect the configured MCP servers: list, tools, ping",
		Long: `Inspect the MCP servers of agentrt.yaml (mcp_servers). Each subcommand starts the
servers it reaches as the runtime would (stdio servers in the sandbox, workspace_write
profile) over a connection of its own, and closes them before it exits.`,
	}
	cmd.AddCommand(newMCPListCmd(), newMCPToolsCmd(), newMCPPingCmd())
	return cmd
}

// mcpCommon are the flags every mcp subcommand takes.
type mcpCommon struct {
	config  string
	json    bool
	timeout time.Duration
}

func (f *mcpCommon) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.config, "config", "agentrt.yaml", "the agentrt.yaml whose mcp_servers to reach")
	cmd.Flags().BoolVar(&f.json, "json", false, "print JSON")
	cmd.Flags().DurationVar(&f.timeout, "timeout", 30*time.Second, "how long reaching each server may take")
}

// openMCP loads the config and returns a manager of its MCP servers; the
// caller closes it.
func openMCP(f *mcpCommon) (agentrt.Config, *mcp.Manager, error) {
	if f.timeout <= 0 {
		return agentrt.Config{}, nil, usageErr("invalid --timeout %s: must be positive", f.timeout)
	}
	cfg, _, err := configure.Load(f.config)
	if err != nil {
		return cfg, nil, configErr(err)
	}
	p, _ := sandbox.Builtin(string(sandbox.WorkspaceWrite))
	m := mcp.NewManager(mcp.Options{Servers: cfg.MCPServers, Sandbox: sandbox.New(cfg.Sandbox), Profile: &p})
	return cfg, m, nil
}

// mcpServerNames checks that names are servers of m, and returns them
// (all of m's servers when names is empty).
func mcpServerNames(m *mcp.Manager, path string, names []string) ([]string, error) {
	known := m.Servers()
	if len(names) == 0 {
		return known, nil
	}
	for _, n := range names {
		if !slices.Contains(known, n) {
			if len(known) == 0 {
				return nil, usageErr("unknown MCP server %q: %s has no mcp_servers", n, path)
			}
			return nil, usageErr("unknown MCP server %q: %s defines %s", n, path, strings.Join(known, ", "))
		}
	}
	return names, nil
}

// pingServers pings the named servers at once, each within timeout.
func pingServers(ctx context.Context, m *mcp.Manager, names []string, timeout time.Duration) []MCPServerInfo {
	out := make([]MCPServerInfo, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		s, _ := m.Server(name)
		out[i] = MCPServerInfo{Name: name, Transport: s.Transport, Command: s.Command, URL: s.URL}
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			start := time.Now()
			version, tools, err := m.Ping(ctx, name)
			info := &out[i]
			info.LatencyMs = time.Since(start).Milliseconds()
			if err != nil {
				info.Status, info.Error = mcpFailed, oneLine(err.Error(), 400)
				return
			}
			info.Status, info.ProtocolVersion, info.Tools = mcpOK, version, len(tools)
		})
	}
	wg.Wait()
	return out
}

func newMCPListCmd() *cobra.Command {
	var f mcpCommon
	cmd := &cobra.Command{
		Use:   "list [--config FILE] [--json]",
		Short: "List the MCP servers, reaching each: status, protocol version, tool count",
		Long: `List each MCP server of the config: its name, transport, command or URL, and whether it
could be reached (started, pinged, its tools listed): ok with the negotiated protocol
version and how many tools it lists, or failed with the reason.

Exit codes: 0 every server is ok, 1 a server failed, 2 the configuration does not load.`,
		Example: `  agentrt mcp list --config agentrt.yaml`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			_, m, err := openMCP(&f)
			if err != nil {
				return err
			}
			defer m.Close()
			infos := pingServers(commandContext(cmd), m, m.Servers(), f.timeout)
			if f.json {
				if err := writeJSON(cmd.OutOrStdout(), infos); err != nil {
					return err
				}
			} else {
				printMCPServers(cmd.OutOrStdout(), infos)
			}
			if slices.ContainsFunc(infos, func(i MCPServerInfo) bool { return i.Status != mcpOK }) {
				return &exitError{code: ExitFailed, err: fmt.Errorf("")}
			}
			return nil
		},
	}
	f.register(cmd)
	return cmd
}

func printMCPServers(w io.Writer, infos []MCPServerInfo) {
	if len(infos) == 0 {
		fmt.Fprintln(w, "no MCP servers configured")
		return
	}
	for _, i := range infos {
		where := cmp.Or(i.URL, strings.Join(i.Command, " "))
		if i.Status == mcpOK {
			fmt.Fprintf(w, "✔ %-16s %-15s %s\n      ok · protocol %s · %d tools · %dms\n", i.Name, i.Transport, where, i.ProtocolVersion, i.Tools, i.LatencyMs)
		} else {
			fmt.Fprintf(w, "✘ %-16s %-15s %s\n      failed after %dms: %s\n", i.Name, i.Transport, where, i.LatencyMs, i.Error)
		}
	}
}

func newMCPPingCmd() *cobra.Command {
	var f mcpCommon
	cmd := &cobra.Command{
		Use:   "ping [--config FILE] [--json] SERVER",
		Short: "Connect to an MCP server, ping it, and print its protocol version and the latency",
		Long: `Start (stdio) or reach (streamable HTTP) the named MCP server, initialize, ping it and
list its tools; print the negotiated protocol version and how long it took.

Exit codes: 0 it answered, 1 it failed (the reason is printed), 2 bad usage or a
configuration that does not load.`,
		Example: `  agentrt mcp ping --config agentrt.yaml everything`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			_, m, err := openMCP(&f)
			if err != nil {
				return err
			}
			defer m.Close()
			names, err := mcpServerNames(m, f.config, args)
			if err != nil {
				return err
			}
			info := pingServers(commandContext(cmd), m, names, f.timeout)[0]
			if f.json {
				if err := writeJSON(cmd.OutOrStdout(), info); err != nil {
					return err
				}
			} else if info.Status == mcpOK {
				fmt.Fprintf(cmd.OutOrStdout(), "%s: ok · protocol %s · %d tools · %dms\n", info.Name, info.ProtocolVersion, info.Tools, info.LatencyMs)
			}
			if info.Status != mcpOK {
				return &exitError{code: ExitFailed, err: fmt.Errorf("MCP server %s failed after %dms: %s", info.Name, info.LatencyMs, info.Error)}
			}
			return nil
		},
	}
	f.register(cmd)
	return cmd
}

func newMCPToolsCmd() *cobra.Command {
	var f mcpCommon
	var agent string
	cmd := &cobra.Command{
		Use:   "tools [--config FILE] [--agent AGENT] [--json] [SERVER]",
		Short: "List the MCP servers' tools as the model sees them, with the policy's decision",
		Long: `List the tools of the MCP servers (or of SERVER): each under the name the model sees
(PREFIX + the server's name of it), the server and its own name of the tool, its
annotations (ro: read-only, idem: idempotent, destr: destructive, open: open world, as the
server says, with the protocol's defaults), whether the agent offers it (its mcp key names
the server and allows the tool), and what the policy decides for a call of it by the agent
with empty arguments (allow, deny or ask, and the reason code), as agentrt policy explain
would.

--agent may be left out when the config has one agent. Exit codes: 0 listed, 1 a server
could not be reached (its tools are missing), 2 bad usage or a configuration that does not
load.`,
		Example: `  agentrt mcp tools --config agentrt.yaml --agent helper everything`,
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, m, err := openMCP(&f)
			if err != nil {
				return err
			}
			defer m.Close()
			names, err := mcpServerNames(m, f.config, args)
			if err != nil {
				return err
			}
			agents := slices.Sorted(func(yield func(string) bool) {
				for n := range cfg.Agents {
					if !yield(n) {
						return
					}
				}
			})
			switch {
			case agent != "":
				if _, ok := cfg.Agents[agent]; !ok {
					return usageErr("unknown agent %q: %s defines %s", agent, f.config, strings.Join(agents, ", "))
				}
			case len(agents) == 1:
				agent = agents[0]
			default:
				return usageErr("--agent is required: %s defines %s", f.config, strings.Join(agents, ", "))
			}
			ctx := commandContext(cmd)
			infos := pingServers(ctx, m, names, f.timeout)
			out := []MCPToolInfo{}
			var failed []string
			for _, info := range infos {
				if info.Status != mcpOK {
					failed = append(failed, info.Name+": "+info.Error)
					continue
				}
				tools, err := mcpToolInfos(ctx, cfg, m, info.Name, agent)
				if err != nil {
					return &exitError{code: ExitFailed, err: err}
				}
				out = append(out, tools...)
			}
			if f.json {
				if err := writeJSON(cmd.OutOrStdout(), out); err != nil {
					return err
				}
			} else {
				printMCPTools(cmd.OutOrStdout(), out, agent)
			}
			if len(failed) > 0 {
				return &exitError{code: ExitFailed, err: fmt.Errorf("MCP servers not reached: %s", strings.Join(failed, "; "))}
			}
			return nil
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&agent, "agent", "", "the agent whose policy decisions to show")
	return cmd
}

// mcpToolInfos returns the listed tools of server, each with the policy's
// decision for a call of it by agent, built as the runtime builds it.
func mcpToolInfos(ctx context.Context, cfg agentrt.Config, m *mcp.Manager, server, agent string) ([]MCPToolInfo, error) {
	tools, err := m.Tools(server, nil)
	if err != nil {
		return nil, err
	}
	var use *agentrt.MCPUse
	for i, u := range cfg.Agents[agent].MCP {
		if u.Server == server {
			use = &cfg.Agents[agent].MCP[i]
		}
	}
	ev := cfg.Policy
	if ev == nil {
		ev = policy.DefaultEvaluator{}
	}
	var out []MCPToolInfo
	for _, t := range tools {
		spec := t.Spec()
		remote := spec.Name
		if r, ok := t.(interface{ Remote() string }); ok {
			remote = r.Remote()
		}
		req := loop.PolicyRequest(spec, json.RawMessage(`{}`))
		req.Owner = runtype.Owner{TenantID: apitype.DefaultTenant}
		req.Agent = agent
		info := MCPToolInfo{
			Name: spec.Name, Server: server, Remote: remote, Agent: agent,
			ReadOnly: spec.Annotations.ReadOnly, Idempotent: spec.Annotations.Idempotent,
			Destructive: spec.Annotations.Destructive, OpenWorld: spec.Annotations.OpenWorld,
			Offered: use != nil && (use.Allow == nil || use.Allow(remote)),
		}
		d, err := ev.Evaluate(ctx, req)
		if err != nil {
			info.Decision, info.ReasonCode = "error", err.Error()
		} else {
			info.Decision, info.ReasonCode = string(d.Outcome), d.ReasonCode
		}
		out = append(out, info)
	}
	return out, nil
}

func printMCPTools(w io.Writer, tools []MCPToolInfo, agent string) {
	if len(tools) == 0 {
		fmt.Fprintln(w, "no MCP tools")
		return
	}
	fmt.Fprintf(w, "%-44s %-14s %-22s %-8s %s\n", "TOOL", "SERVER", "ANNOTATIONS", "OFFERED", "DECISION ("+agent+")")
	for _, t := range tools {
		var ann []string
		for _, a := range []struct {
			on   bool
			name string
		}{{t.ReadOnly, "ro"}, {t.Idempotent, "idem"}, {t.Destructive, "destr"}, {t.OpenWorld, "open"}} {
			if a.on {
				ann = append(ann, a.name)
			}
		}
		offered := "no"
		if t.Offered {
			offered = "yes"
		}
		fmt.Fprintf(w, "%-44s %-14s %-22s %-8s %s\n", t.Name, t.Server, cmp.Or(strings.Join(ann, ","), "-"), offered, strings.TrimSpace(t.Decision+" "+t.ReasonCode))
	}
}
