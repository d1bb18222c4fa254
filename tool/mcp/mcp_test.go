package mcp_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentrt/agentrt/internal/testenv"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/sandbox"
	"github.com/agentrt/agentrt/tool"
	"github.com/agentrt/agentrt/tool/mcp"
)

// records collects what a manager records.
type records struct {
	mu   sync.Mutex
	recs []runtype.CapabilitySession
	runs []string
	// ch receives each status as it is recorded.
	ch chan runtype.CapabilitySessionStatus
}

func newRecords() *records { return &records{ch: make(chan runtype.CapabilitySessionStatus, 64)} }

func (r *records) record(_ context.Context, rec *runtype.CapabilitySession, runID string, _ []string) {
	r.mu.Lock()
	r.recs = append(r.recs, *rec)
	if runID != "" {
		r.runs = append(r.runs, runID)
	}
	r.mu.Unlock()
	r.ch <- rec.Status
}

func (r *records) statuses() []runtype.CapabilitySessionStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []runtype.CapabilitySessionStatus
	for _, rec := range r.recs {
		if len(out) == 0 || out[len(out)-1] != rec.Status {
			out = append(out, rec.Status)
		}
	}
	return out
}

func (r *records) last() runtype.CapabilitySession {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.recs[len(r.recs)-1]
}

// await waits until status is recorded.
func (r *records) await(t *testing.T, status runtype.CapabilitySessionStatus) {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case s := <-r.ch:
			if s == status {
				return
			}
		case <-timeout:
			t.Fatalf("status %s never recorded; recorded %v", status, r.statuses())
		}
	}
}

// lookup finds the tool the model knows as name.
func lookup(t *testing.T, m *mcp.Manager, server, name string) tool.Tool {
	t.Helper()
	tools, err := m.Tools(server, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range tools {
		if tl.Spec().Name == name {
			return tl
		}
	}
	t.Fatalf("no tool %s among %d", name, len(tools))
	return nil
}

// flakyHTTPServer is a streamable HTTP MCP server that can forget its
// sessions (drop) or restart on the same address. count counts the calls
// its tool ran.
type flakyHTTPServer struct {
	count   atomic.Int32
	handler atomic.Pointer[http.Handler]
	srv     *httptest.Server
	addr    string
	servers []*sdk.Server // every server it was, to close at the end
}

func newFlakyHTTPServer(t *testing.T) *flakyHTTPServer {
	f := &flakyHTTPServer{}
	f.drop()
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { (*f.handler.Load()).ServeHTTP(w, r) }))
	f.addr = f.srv.Listener.Addr().String()
	t.Cleanup(func() {
		f.srv.CloseClientConnections()
		f.srv.Close()
		for _, s := range f.servers {
			for ss := range s.Sessions() {
				ss.Close()
			}
		}
	})
	return f
}

// drop replaces the handler: the sessions the old one knew are gone.
func (f *flakyHTTPServer) drop() {
	s := sdk.NewServer(&sdk.Implementation{Name: "flaky", Version: "1"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: "bump"}, func(ctx context.Context, req *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
		n := f.count.Add(1)
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: strconv.Itoa(int(n))}}}, nil, nil
	})
	f.servers = append(f.servers, s)
	var h http.Handler = sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil)
	f.handler.Store(&h)
}

// restart stops the server and starts a new one on the same address.
func (f *flakyHTTPServer) restart(t *testing.T) {
	f.srv.CloseClientConnections() // the standalone event streams too
	f.srv.Close()
	f.drop()
	l, err := net.Listen("tcp", f.addr)
	if err != nil {
		t.Fatalf("listening again on %s: %v", f.addr, err)
	}
	f.srv = &httptest.Server{Listener: l, Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		(*f.handler.Load()).ServeHTTP(w, r)
	})}}
	f.srv.Start()
}

// TestHTTPSessionExpiry: a server that forgot the session (a 404 for its
// Mcp-Session-Id), by dropping it or by restarting, gets a new
// initialize and the call is sent once more: it succeeds, the record goes
// expired → reinitializing → ready, and no call ran twice.
func TestHTTPSessionExpiry(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"drop", "restart"} {
		t.Run(how, func(t *testing.T) {
			f := newFlakyHTTPServer(t)
			recs := newRecords()
			m := mcp.NewManager(mcp.Options{
				Servers: []*mcp.Server{{Name: "flaky", Transport: runtype.TransportStreamableHTTP, URL: f.srv.URL, ToolPrefix: "flaky__"}},
				Record:  recs.record,
			})
			defer m.Close()
			if err := m.Discover(t.Context()); err != nil {
				t.Fatal(err)
			}
			bump := lookup(t, m, "flaky", "flaky__bump")
			call := &tool.Call{ID: "call_1", TenantID: "t1", SessionID: "sess_1", RunID: "run_1", Input: json.RawMessage(`{}`)}
			if res, err := bump.Call(t.Context(), call); err != nil || res.Content != "1" {
				t.Fatalf("first call: %+v, %v", res, err)
			}
			first := recs.last()
			if first.ServerSessionID == "" {
				t.Fatalf("no Mcp-Session-Id recorded: %+v", first)
			}
			if how == "drop" {
				f.drop()
			} else {
				f.restart(t)
			}
			call.ID = "call_2"
			res, err := bump.Call(t.Context(), call)
			if err != nil || res.Content != "2" || res.IsError {
				t.Fatalf("call after %s: %+v, %v", how, res, err)
			}
			if n := f.count.Load(); n != 2 {
				t.Errorf("the tool ran %d times for 2 calls", n)
			}
			want := []runtype.CapabilitySessionStatus{runtype.CapabilityConnecting, runtype.CapabilityReady,
				runtype.CapabilityExpired, runtype.CapabilityReinitializing, runtype.CapabilityReady}
			if how == "restart" {
				// The restart breaks the session's event stream too: the
				// client may notice (and reconnect) before the call does.
				if st := recs.statuses(); st[len(st)-2] == runtype.CapabilityReinitializing {
					want = []runtype.CapabilitySessionStatus{runtype.CapabilityConnecting, runtype.CapabilityReady,
						runtype.CapabilityReinitializing, runtype.CapabilityReady}
				}
				if st := recs.statuses(); len(st) > len(want) {
					want = st // both: the stream, then the call's 404
				}
			}
			if diff := cmp.Diff(want, recs.statuses()); diff != "" {
				t.Errorf("statuses (-want +got):\n%s", diff)
			}
			last := recs.last()
			if last.Generation < 2 || last.ServerSessionID == first.ServerSessionID || last.ServerSessionID == "" {
				t.Errorf("after reinitialising: generation %d, session id %q (was %q)", last.Generation, last.ServerSessionID, first.ServerSessionID)
			}
			if diff := cmp.Diff([]string{"run_1"}, recs.runs); diff != "" {
				t.Errorf("runs recorded (-want +got):\n%s", diff)
			}
		})
	}
}

// stdioManager starts the test binary as a sandboxed stdio MCP server.
func stdioManager(t *testing.T, recs *records) (*mcp.Manager, *tool.Call) {
	t.Helper()
	sb := sandbox.New(sandbox.Options{})
	if _, err := sb.Enforcer(); err != nil {
		testenv.Missing(t, "no sandbox can be enforced here: %v", err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The test binary lives in the go command's temporary folder, which
	// the sandbox's private /tmp hides: run a copy in the workspace.
	ws := t.TempDir()
	bin := filepath.Join(t.TempDir(), "server")
	data, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o700); err != nil {
		t.Fatal(err)
	}
	prof, _ := sandbox.Builtin(string(sandbox.WorkspaceWrite))
	m := mcp.NewManager(mcp.Options{
		Servers: []*mcp.Server{{Name: "local", Transport: runtype.TransportStdio, Command: []string{bin, "-test.run=^$"},
			Env: []string{stdioServerEnv + "=1", "PATH=/usr/bin:/bin"}, ToolPrefix: "local__"}},
		Record: recs.record, Sandbox: sb, Profile: &prof,
		Backoff: func(int) time.Duration { return 0 },
	})
	t.Cleanup(m.Close)
	if err := m.Discover(t.Context()); err != nil {
		t.Fatal(err)
	}
	return m, &tool.Call{ID: "call_1", TenantID: "t1", SessionID: "sess_1", RunID: "run_1", Input: json.RawMessage(`{}`),
		Sandbox: sb, Profile: &prof, WorkspaceDir: ws}
}

// TestStdioServerKilledMidCall: a stdio server that dies while a call
// runs is started again; the call that may not run twice comes back
// EffectUnknown (for an operator), the read-only one is sent again on
// the new server and answers.
func TestStdioServerKilledMidCall(t *testing.T) {
	t.Parallel()
	recs := newRecords()
	m, call := stdioManager(t, recs)
	res, err := lookup(t, m, "local", "local__write").Call(t.Context(), call)
	if err != nil {
		t.Fatalf("write: %v", err)
	}
	if !res.EffectUnknown || !res.IsError {
		t.Fatalf("write killed mid-call: %+v, want EffectUnknown", res)
	}
	recs.await(t, runtype.CapabilityReinitializing)
	recs.await(t, runtype.CapabilityReady) // restarted
	call.ID = "call_2"
	res, err = lookup(t, m, "local", "local__read").Call(t.Context(), call)
	if err != nil || res.EffectUnknown || res.IsError || res.Content != "read ran again" {
		t.Fatalf("read killed mid-call: %+v, %v; want it sent again", res, err)
	}
	st := recs.statuses()
	want := []runtype.CapabilitySessionStatus{runtype.CapabilityConnecting, runtype.CapabilityReady,
		runtype.CapabilityReinitializing, runtype.CapabilityReady, runtype.CapabilityReinitializing, runtype.CapabilityReady}
	if diff := cmp.Diff(want, st); diff != "" {
		t.Errorf("statuses (-want +got):\n%s", diff)
	}
	if g := recs.last().Generation; g != 3 {
		t.Errorf("generation %d after two restarts, want 3", g)
	}
}

// TestStdioServerRefusedWithoutSandbox: a stdio server never runs
// unsandboxed (fail closed).
func TestStdioServerRefusedWithoutSandbox(t *testing.T) {
	t.Parallel()
	m := mcp.NewManager(mcp.Options{Servers: []*mcp.Server{{Name: "x", Transport: runtype.TransportStdio, Command: []string{"/bin/true"}}}})
	defer m.Close()
	err := m.Discover(t.Context())
	if err == nil || !strings.Contains(err.Error(), "only under a sandbox") {
		t.Fatalf("Discover without a sandbox: %v", err)
	}
}
