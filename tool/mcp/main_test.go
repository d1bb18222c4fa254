package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/sandbox"
	"github.com/agentrt/agentrt/tool"
	"github.com/agentrt/agentrt/tool/mcp"
)

// stdioServerEnv makes the test binary an MCP server over stdio (see
// testServer), for tests that kill it mid-call.
const stdioServerEnv = "AGENTRT_TEST_MCP_STDIO_SERVER"

// conformanceClientEnv makes the test binary, when the conformance suite
// also sets MCP_CONFORMANCE_SCENARIO, the MCP client under test (see
// conformanceClient and TestConformance).
const conformanceClientEnv = "AGENTRT_MCP_CONFORMANCE_CLIENT"

func TestMain(m *testing.M) {
	if os.Getenv(stdioServerEnv) == "1" {
		if err := testServer().Run(context.Background(), &sdk.StdioTransport{}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if os.Getenv(conformanceClientEnv) == "1" && os.Getenv("MCP_CONFORMANCE_SCENARIO") != "" {
		// The suite runs "BINARY -test.run=^$ URL": the URL comes last.
		flag.Parse()
		if flag.NArg() == 0 {
			fmt.Fprintln(os.Stderr, "conformance client: no server URL among the arguments")
			os.Exit(1)
		}
		if err := conformanceClient(flag.Arg(flag.NArg() - 1)); err != nil {
			fmt.Fprintln(os.Stderr, "conformance client:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	sandbox.Main() // sandboxed commands run through this binary
	goleak.VerifyTestMain(m)
}

// conformanceClient is agentrt's MCP client as a conformance scenario
// sees it: it lists the server's tools and calls each once, add_numbers
// with a=5, b=3 and the others with no arguments, accepting every
// elicitation with empty content (an operator who accepts the schema's
// defaults, which the SDK fills in).
func conformanceClient(url string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	const server = "conformance"
	m := mcp.NewManager(mcp.Options{Servers: []*mcp.Server{{
		Name: server, Transport: runtype.TransportStreamableHTTP, URL: url, ToolPrefix: server + "__",
	}}})
	defer m.Close()
	if err := m.Discover(ctx); err != nil {
		return err
	}
	tools, err := m.Tools(server, nil)
	if err != nil {
		return err
	}
	accept := func(context.Context, *tool.Question) (*tool.Answer, error) {
		return &tool.Answer{Decision: runtype.DecisionAccept, Content: json.RawMessage(`{}`)}, nil
	}
	var errs []error
	for i, tl := range tools {
		input := json.RawMessage(`{}`)
		if tl.(interface{ Remote() string }).Remote() == "add_numbers" {
			input = json.RawMessage(`{"a":5,"b":3}`)
		}
		res, err := tl.Call(ctx, &tool.Call{
			ID: fmt.Sprintf("call_%d", i), TenantID: "conformance", SessionID: "sess_conformance", RunID: "run_conformance",
			Input: input, Ask: accept,
		})
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("%s: %w", tl.Spec().Name, err))
		case res.IsError:
			errs = append(errs, fmt.Errorf("%s: the tool answered an error: %s", tl.Spec().Name, res.Content))
		}
	}
	return errors.Join(errs...)
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
