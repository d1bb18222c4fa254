package mcp_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/agentrt/agentrt/sandbox"
)

// stdioServerEnv makes the test binary an MCP server over stdio (see
// testServer), for tests that kill it mid-call.
const stdioServerEnv = "AGENTRT_TEST_MCP_STDIO_SERVER"

func TestMain(m *testing.M) {
	if os.Getenv(stdioServerEnv) == "1" {
		if err := testServer().Run(context.Background(), &sdk.StdioTransport{}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	sandbox.Main() // sandboxed commands run through this binary
	goleak.VerifyTestMain(m)
}

// testServer is a server with tools that kill the server while they
// run, once per working directory:
//   - write (neither read-only nor idempotent),
//   - read (read-only),
//   - echo (read-only, answers at once).
//
// A second call of write or read in the same directory answers at once:
// a marker file says the first ran.
func testServer() *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "agentrt-test", Version: "1"}, nil)
	type in struct {
		Text string `json:"text,omitempty"`
	}
	blocking := func(name string) sdk.ToolHandlerFor[in, any] {
		return func(ctx context.Context, req *sdk.CallToolRequest, _ in) (*sdk.CallToolResult, any, error) {
			marker := filepath.Join(".", name+".ran")
			if _, err := os.Stat(marker); err == nil {
				return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: name + " ran again"}}}, nil, nil
			}
			if err := os.WriteFile(marker, nil, 0o600); err != nil {
				return nil, nil, err
			}
			// Die mid-call, as a crashed server would.
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		}
	}
	sdk.AddTool(s, &sdk.Tool{Name: "write", Annotations: &sdk.ToolAnnotations{}}, blocking("write"))
	sdk.AddTool(s, &sdk.Tool{Name: "read", Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}}, blocking("read"))
	sdk.AddTool(s, &sdk.Tool{Name: "echo", Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *sdk.CallToolRequest, a in) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: a.Text}}}, nil, nil
		})
	return s
}
