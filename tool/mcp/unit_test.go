package mcp_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentrt/agentrt/internal/testenv"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/sandbox"
	"github.com/agentrt/agentrt/tool"
	"github.com/agentrt/agentrt/tool/mcp"
)

func ptr[T any](v T) *T { return &v }

// TestAnnotations: a server's tool annotations map onto agentrt's, with
// the protocol's defaults where a hint is missing.
func TestAnnotations(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		in   *sdk.ToolAnnotations
		want tool.Annotations
	}{
		{"none: destructive and open-world by default", nil, tool.Annotations{Destructive: true, OpenWorld: true}},
		{"read-only is not destructive", &sdk.ToolAnnotations{ReadOnlyHint: true}, tool.Annotations{ReadOnly: true, OpenWorld: true}},
		{"every hint", &sdk.ToolAnnotations{IdempotentHint: true, DestructiveHint: ptr(false), OpenWorldHint: ptr(false)}, tool.Annotations{Idempotent: true}},
		{"destructive said", &sdk.ToolAnnotations{DestructiveHint: ptr(true), OpenWorldHint: ptr(true)}, tool.Annotations{Destructive: true, OpenWorld: true}},
		{"read-only wins over destructive", &sdk.ToolAnnotations{ReadOnlyHint: true, DestructiveHint: ptr(true)}, tool.Annotations{ReadOnly: true, OpenWorld: true}},
	} {
		if got := mcp.Annotations(tc.in); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// TestToolName: a server's tool names become names every provider takes.
func TestToolName(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ prefix, name, want string }{
		{"fs__", "read_file", "fs__read_file"},
		{"", "get-sum", "get-sum"},
		{"x__", "weird.name/with spaces", "x__weird_name_with_spaces"},
		{"x__", strings.Repeat("a", 80), "x__" + strings.Repeat("a", 61)},
	} {
		got := mcp.ToolName(tc.prefix, tc.name)
		if got != tc.want || !tool.ValidName(got) {
			t.Errorf("ToolName(%q, %q) = %q, want %q (valid)", tc.prefix, tc.name, got, tc.want)
		}
	}
}

// blockingServer serves "wait", which blocks until its call is
// cancelled and counts the cancellations it saw, and checks each
// request's Authorization header.
type blockingServer struct {
	cancelled chan struct{} // receives when a handler saw its call cancelled
	started   chan struct{}
	auth      atomic.Pointer[string]
	url       string
}

func newBlockingServer(t *testing.T) *blockingServer {
	b := &blockingServer{started: make(chan struct{}, 8), cancelled: make(chan struct{}, 8)}
	s := sdk.NewServer(&sdk.Implementation{Name: "blocking", Version: "1"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: "wait"}, func(ctx context.Context, req *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
		b.started <- struct{}{}
		<-ctx.Done()
		b.cancelled <- struct{}{}
		return nil, nil, ctx.Err()
	})
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a := r.Header.Get("Authorization")
		b.auth.Store(&a)
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
		for ss := range s.Sessions() {
			ss.Close()
		}
	})
	b.url = srv.URL
	return b
}

// TestCancelSendsNotification: a call whose context ends (the turn was
// interrupted) sends notifications/cancelled: the server's handler sees
// its own context cancelled. The configured headers reach the server.
func TestCancelSendsNotification(t *testing.T) {
	t.Parallel()
	b := newBlockingServer(t)
	m := mcp.NewManager(mcp.Options{Servers: []*mcp.Server{{Name: "b", Transport: runtype.TransportStreamableHTTP, URL: b.url,
		Header: http.Header{"Authorization": {"Bearer tok-123"}}}}})
	defer m.Close()
	if err := m.Discover(t.Context()); err != nil {
		t.Fatal(err)
	}
	wait := lookup(t, m, "b", "wait")
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := wait.Call(ctx, &tool.Call{ID: "call_1", TenantID: "t", SessionID: "s", Input: json.RawMessage(`{}`)})
		done <- err
	}()
	<-b.started
	cancel()
	if err := <-done; err == nil {
		t.Fatal("a cancelled call returned no error")
	}
	// The handler returns only when its context ends: the server got
	// notifications/cancelled.
	select {
	case <-b.cancelled:
	case <-t.Context().Done():
		t.Fatal("the server never saw the cancellation")
	}
	if got := b.auth.Load(); got == nil || *got != "Bearer tok-123" {
		t.Errorf("Authorization = %v, want the configured bearer token", got)
	}
}

// TestHostileStdioServer: a stdio "server" that writes garbage instead of
// JSON-RPC fails to connect with a clear error, and nothing is left
// running.
func TestHostileStdioServer(t *testing.T) {
	t.Parallel()
	sb := sandbox.New(sandbox.Options{})
	if _, err := sb.Enforcer(); err != nil {
		testenv.Missing(t, "no sandbox can be enforced here: %v", err)
	}
	prof, _ := sandbox.Builtin(string(sandbox.WorkspaceWrite))
	m := mcp.NewManager(mcp.Options{Servers: []*mcp.Server{{Name: "junk", Transport: runtype.TransportStdio,
		Command:        []string{"/bin/sh", "-c", "echo 'this is not JSON-RPC'; echo '{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":'; cat >/dev/null"},
		ConnectTimeout: 5e9}}, Sandbox: sb, Profile: &prof})
	defer m.Close()
	err := m.Discover(t.Context())
	if err == nil || !strings.Contains(err.Error(), "MCP server junk") {
		t.Fatalf("Discover of a server writing garbage: %v, want a clear error", err)
	}
	if tools, _ := m.Tools("junk", nil); len(tools) != 0 {
		t.Errorf("tools of a broken server: %d", len(tools))
	}
	if diff := cmp.Diff([]string{"junk"}, m.Servers()); diff != "" {
		t.Error(diff)
	}
}
