package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/sandbox"
	"github.com/agentrt/agentrt/tool"
	"github.com/agentrt/agentrt/tool/mcp"
)

// MCPOptions are the parameters of the MCP tool call benchmark: Calls
// calls of the echo tool of the server ServerCommand starts (the
// reference everything server), through agentrt's client and through
// the SDK's client directly, interleaved.
type MCPOptions struct {
	// ServerCommand is the stdio server's program and arguments.
	ServerCommand []string
	Calls         int
	// Warmup calls of each client are made first and not measured: the
	// first call of agentrt's opens the capability session (starting the
	// sandboxed server), once per session.
	Warmup int
}

// Validate reports whether o describes a run this build can do.
func (o MCPOptions) Validate() error {
	if len(o.ServerCommand) == 0 {
		return fmt.Errorf("%w: --server-command is required (the everything MCP server: node and its dist/index.js)", ErrInvalidOptions)
	}
	if o.Calls < 1 || o.Warmup < 0 {
		return fmt.Errorf("%w: need --calls ≥ 1, --warmup ≥ 0", ErrInvalidOptions)
	}
	return nil
}

// MCPResult is the MCP benchmark's RESULT line. The figures are medians
// over the calls, in microseconds: a call through agentrt's client (an
// mcp.Manager's tool, stdio, sandboxed, in one capability session), a
// call through the SDK's client on an unsandboxed server process, and
// the median of the paired differences (each agentrt call against the
// direct call next to it).
type MCPResult struct {
	Bench             string   `json:"bench"`
	Server            []string `json:"server"`
	Calls             int      `json:"calls"`
	SessionStartMs    float64  `json:"session_start_ms"`
	AgentrtUsPerCall  float64  `json:"agentrt_us_per_call"`
	DirectUsPerCall   float64  `json:"direct_us_per_call"`
	OverheadUsPerCall float64  `json:"overhead_us_per_call"`
}

// MCP runs the MCP tool call benchmark.
func MCP(ctx context.Context, o MCPOptions) (*MCPResult, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	input := json.RawMessage(`{"message":"hello from the benchmark"}`)

	// agentrt's client: discovery, then one capability session.
	profile, _ := sandbox.Builtin(string(sandbox.WorkspaceWrite))
	sb := sandbox.New(sandbox.Options{})
	m := mcp.NewManager(mcp.Options{
		Servers: []*mcp.Server{{
			Name: "everything", Transport: runtype.TransportStdio, Command: o.ServerCommand,
			Env: []string{"PATH=" + os.Getenv("PATH")}, ToolPrefix: "everything__",
		}},
		Sandbox: sb, Profile: &profile,
	})
	defer m.Close()
	if err := m.Discover(ctx); err != nil {
		return nil, err
	}
	tools, err := m.Tools("everything", func(n string) bool { return n == "echo" })
	if err != nil {
		return nil, err
	}
	if len(tools) != 1 {
		return nil, fmt.Errorf("the server has no echo tool")
	}
	echo := tools[0]
	ws, err := os.MkdirTemp("", "agentrt-bench-mcp-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(ws)
	n := 0
	viaAgentrt := func() (time.Duration, error) {
		n++
		call := &tool.Call{
			ID: fmt.Sprintf("call_%d", n), TenantID: apitype.DefaultTenant, SessionID: "ses_bench", RunID: "run_bench",
			Input: input, Sandbox: sb, Profile: &profile, WorkspaceDir: ws,
		}
		start := time.Now()
		res, err := echo.Call(ctx, call)
		d := time.Since(start)
		switch {
		case err != nil:
			return 0, err
		case res.IsError:
			return 0, fmt.Errorf("echo through agentrt: %s", res.Content)
		}
		return d, nil
	}

	// The SDK's client, directly.
	cmd := exec.CommandContext(ctx, o.ServerCommand[0], o.ServerCommand[1:]...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "agentrt-bench", Version: "0"}, nil).Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		return nil, fmt.Errorf("connecting the direct client: %w", err)
	}
	defer cs.Close()
	args := map[string]any{"message": "hello from the benchmark"}
	direct := func() (time.Duration, error) {
		start := time.Now()
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "echo", Arguments: args})
		d := time.Since(start)
		switch {
		case err != nil:
			return 0, err
		case res.IsError:
			return 0, fmt.Errorf("echo through the SDK returned an error")
		}
		return d, nil
	}

	start, err := viaAgentrt() // opens the capability session
	if err != nil {
		return nil, err
	}
	for range o.Warmup {
		if _, err := viaAgentrt(); err != nil {
			return nil, err
		}
		if _, err := direct(); err != nil {
			return nil, err
		}
	}
	var a, d, diff []time.Duration
	for i := range o.Calls {
		var da, dd time.Duration
		var err1, err2 error
		// Alternate which goes first, so that neither always runs on a
		// warmer machine.
		if i%2 == 0 {
			da, err1 = viaAgentrt()
			dd, err2 = direct()
		} else {
			dd, err2 = direct()
			da, err1 = viaAgentrt()
		}
		if err1 != nil {
			return nil, err1
		}
		if err2 != nil {
			return nil, err2
		}
		a, d, diff = append(a, da), append(d, dd), append(diff, da-dd)
	}
	return &MCPResult{
		Bench: "mcp", Server: o.ServerCommand, Calls: o.Calls, SessionStartMs: ms(start),
		AgentrtUsPerCall: us(Median(a)), DirectUsPerCall: us(Median(d)), OverheadUsPerCall: us(Median(diff)),
	}, nil
}

// Median is the middle of ds (the upper middle of an even count).
func Median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func us(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }

// ParseCommand splits a --server-command value on white space. Words
// that are relative paths (holding a /) are made absolute: the sandboxed
// server starts in another directory.
func ParseCommand(s string) []string {
	words := strings.Fields(s)
	for i, w := range words {
		if strings.Contains(w, "/") && !filepath.IsAbs(w) {
			if abs, err := filepath.Abs(w); err == nil {
				words[i] = abs
			}
		}
	}
	return words
}
