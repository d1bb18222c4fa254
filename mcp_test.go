package agentrt_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/internal/spectest"
	"github.com/agentrt/agentrt/internal/testenv"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/policy"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/sandbox"
	"github.com/agentrt/agentrt/tool/mcp"
)

// everythingRuntime starts a runtime whose agent "a" uses the npm
// reference server-everything over stdio (sandboxed, workspace_write,
// network none), answering with m.
func everythingRuntime(t *testing.T, pol policy.Evaluator, cfg agentrt.Config, m model.Provider) (*agentrt.Runtime, string) {
	t.Helper()
	return mcpRuntime(t, "everything", "", pol, cfg, m)
}

// mcpRuntime starts a runtime whose agent "a" uses the npm reference
// server name over stdio, as server "everything" or "fs" …, sandboxed
// (workspace_write, network none). env is an extra variable of the
// server's (KEY=value, "%s" standing for the workspace), "" for none.
func mcpRuntime(t *testing.T, name, env string, pol policy.Evaluator, cfg agentrt.Config, m model.Provider) (*agentrt.Runtime, string) {
	t.Helper()
	if _, err := sandbox.New(sandbox.Options{}).Enforcer(); err != nil {
		testenv.Missing(t, "no sandbox can be enforced here: %v", err)
	}
	argv := testenv.MCPServer(t, name)
	ws := t.TempDir()
	if cfg.DataDir == "" {
		cfg.DataDir = t.TempDir()
	}
	cfg.Policy = pol
	srv := &mcp.Server{Name: name, Transport: runtype.TransportStdio, Command: argv,
		Env: []string{"PATH=" + os.Getenv("PATH")}, ToolPrefix: name + "__"}
	if env != "" {
		srv.Env = append(srv.Env, strings.ReplaceAll(env, "%s", ws))
	}
	cfg.MCPServers = []*mcp.Server{srv}
	cfg.Agents = map[string]*agentrt.Agent{"a": {Provider: m, Workspace: ws, Sandbox: profile(t, "workspace_write"),
		MCP: []agentrt.MCPUse{{Server: name}}}}
	rt, err := agentrt.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Stop(context.Background()) })
	return rt, ws
}

func mcpCall(id, name string, in any) runtype.MessageToolCall {
	b, _ := json.Marshal(in)
	return runtype.MessageToolCall{ID: id, Name: name, Arguments: string(b)}
}

// validEvents checks every event of the session against the standard's
// schema, and returns them.
func validEvents(t *testing.T, tb *testBundle, sessionID string) []*event.Event {
	t.Helper()
	evs := tb.sessionEvents(t, runtype.Owner{}, sessionID)
	for _, e := range evs {
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		spectest.Event(t, b)
	}
	return evs
}

// TestMCPEverythingOverStdio: an agent calls a real MCP server's tools
// over stdio, sandboxed: text results reach the model, progress becomes
// tool.progress, an image becomes an artifact, structured content is
// kept as JSON; the capability session is in the snapshot (ready, used
// by the run) and every change of it is a session.updated event; every
// event validates.
func TestMCPEverythingOverStdio(t *testing.T) {
	t.Parallel()
	m := &seer{tools: map[string]string{}, resps: []*model.Response{{ToolCalls: []runtype.MessageToolCall{
		mcpCall("call_echo", "everything__echo", map[string]string{"message": "hello mcp"}),
		mcpCall("call_long", "everything__trigger-long-running-operation", map[string]float64{"duration": 0.6, "steps": 3}),
		mcpCall("call_img", "everything__get-tiny-image", map[string]string{}),
		mcpCall("call_struct", "everything__get-structured-content", map[string]string{"location": "Chicago"}),
	}}}}
	rt, _ := everythingRuntime(t, nil, agentrt.Config{}, m)
	tb := &testBundle{rt: rt}
	res, turn := tb.submit(t, &apitype.SubmitTurnParams{Agent: "a", Input: "use the server"})
	if turn.Status != runtype.StatusCompleted {
		t.Fatalf("status = %s (%s)", turn.Status, turn.StatusReason)
	}
	if got := m.seen("call_echo"); !strings.Contains(got, "hello mcp") {
		t.Errorf("echo: the model saw %q", got)
	}
	if got := m.seen("call_struct"); !strings.Contains(got, "temperature") {
		t.Errorf("structured content: the model saw %q", got)
	}
	evs := validEvents(t, tb, res.SessionID)
	var progress, images, jsons, capUpdates int
	for _, e := range evs {
		switch p := e.Payload.(type) {
		case *event.ToolProgressPayload:
			if e.ToolCallID == "call_long" {
				progress++
			}
		case *event.SessionPayload:
			if p.CapabilitySession != nil {
				capUpdates++
			}
		}
		if e.Type == event.ArtifactChanged {
			switch {
			case strings.Contains(string(e.Payload.(event.RawPayload)), `"image/png"`):
				images++
			case strings.Contains(string(e.Payload.(event.RawPayload)), `"application/json"`):
				jsons++
			}
		}
	}
	if progress == 0 {
		t.Error("no tool.progress for the long-running operation")
	}
	if images != 1 || jsons != 1 {
		t.Errorf("artifact.changed: %d images, %d JSON results; want 1 and 1", images, jsons)
	}
	if capUpdates < 2 {
		t.Errorf("%d session.updated events for the capability session; want connecting, ready and the run's use", capUpdates)
	}
	snap, err := rt.GetSession(t.Context(), runtype.Owner{}, res.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.CapabilitySessions) != 1 {
		t.Fatalf("snapshot capability sessions: %+v", snap.CapabilitySessions)
	}
	cs := snap.CapabilitySessions[0]
	if cs.Server != "everything" || cs.Status != runtype.CapabilityReady || cs.Generation != 1 || cs.ProtocolVersion == "" || !slices.Contains(cs.RunIDs, turn.RunID) {
		t.Errorf("capability session = %+v (run %s)", cs, turn.RunID)
	}
}

// TestMCPSampling: a server's sampling request is a governed model call
// of the tool call: allowed, the agent's model answers it (model.*
// events carry the tool call id); denied by a rule, the server gets an
// error and the model sees it; over budget, it is refused.
func TestMCPSampling(t *testing.T) {
	t.Parallel()
	sample := func(id string) *model.Response {
		return &model.Response{ToolCalls: []runtype.MessageToolCall{
			mcpCall(id, "everything__trigger-sampling-request", map[string]any{"prompt": "say hi", "maxTokens": 40})}}
	}
	t.Run("allowed", func(t *testing.T) {
		t.Parallel()
		m := &seer{tools: map[string]string{}, resps: []*model.Response{sample("call_s"), {Text: "hi from the model"}}}
		rt, _ := everythingRuntime(t, nil, agentrt.Config{}, m)
		tb := &testBundle{rt: rt}
		res, turn := tb.submit(t, &apitype.SubmitTurnParams{Agent: "a", Input: "sample"})
		if turn.Status != runtype.StatusCompleted {
			t.Fatalf("status = %s (%s)", turn.Status, turn.StatusReason)
		}
		if got := m.seen("call_s"); !strings.Contains(got, "hi from the model") {
			t.Errorf("the model saw %q, want the sampled answer", got)
		}
		var linked int
		for _, e := range validEvents(t, tb, res.SessionID) {
			if e.Type == event.ModelCompleted && e.ToolCallID == "call_s" && e.Payload.(*event.ModelCompletedPayload).Intent == "mcp_sampling" {
				linked++
			}
		}
		if linked != 1 {
			t.Errorf("%d model.completed events linked to the sampling tool call, want 1", linked)
		}
	})
	t.Run("denied", func(t *testing.T) {
		t.Parallel()
		m := &seer{tools: map[string]string{}, resps: []*model.Response{sample("call_s")}}
		rt, _ := everythingRuntime(t, kernel(t, `
rules:
  - id: allow-mcp
    mcp_servers: ["*"]
    decision: allow
    reason_code: mcp_allowed
  - id: no-sampling
    intents: [mcp_sampling]
    decision: deny
    reason_code: no_sampling
    priority: 10
`), agentrt.Config{}, m)
		tb := &testBundle{rt: rt}
		res, _ := tb.submit(t, &apitype.SubmitTurnParams{Agent: "a", Input: "sample"})
		if got := m.seen("call_s"); !strings.Contains(got, "denied by policy") {
			t.Errorf("the model saw %q, want the denial", got)
		}
		for _, e := range validEvents(t, tb, res.SessionID) {
			if e.Type == event.ModelCompleted && e.ToolCallID == "call_s" {
				t.Errorf("a denied sampling request reached the model: %+v", e)
			}
		}
	})
	t.Run("asked", func(t *testing.T) {
		t.Parallel()
		m := &seer{tools: map[string]string{}, resps: []*model.Response{sample("call_s"), {Text: "approved answer"}}}
		rt, _ := everythingRuntime(t, kernel(t, `
rules:
  - id: allow-mcp
    mcp_servers: ["*"]
    decision: allow
    reason_code: mcp_allowed
  - id: ask-sampling
    intents: [mcp_sampling]
    decision: ask
    reason_code: sampling_needs_a_person
    priority: 10
`), agentrt.Config{}, m)
		res, err := rt.SubmitTurn(t.Context(), &apitype.SubmitTurnParams{Agent: "a", Input: "sample"})
		if err != nil {
			t.Fatal(err)
		}
		req := awaitAction(t, rt, res.SessionID, runtype.ActionSampling)
		if _, err := rt.RespondAction(t.Context(), &apitype.RespondActionParams{ActionID: req.ActionID, Decision: runtype.DecisionApprove}); err != nil {
			t.Fatal(err)
		}
		if turn, err := rt.WaitTurn(t.Context(), runtype.Owner{}, res.TurnID); err != nil || turn.Status != runtype.StatusCompleted {
			t.Fatalf("turn after the approval = %+v, %v", turn, err)
		}
		if got := m.seen("call_s"); !strings.Contains(got, "approved answer") {
			t.Errorf("the model saw %q, want the sampled answer", got)
		}
		validEvents(t, &testBundle{rt: rt}, res.SessionID)
	})
	t.Run("over budget", func(t *testing.T) {
		t.Parallel()
		m := &seer{tools: map[string]string{}, resps: []*model.Response{
			{ToolCalls: []runtype.MessageToolCall{mcpCall("call_s", "everything__trigger-sampling-request", map[string]any{"prompt": "say hi", "maxTokens": 900000})}}}}
		rt, _ := everythingRuntime(t, nil, agentrt.Config{Budgets: agentrt.Budgets{Session: agentrt.Budget{MaxTokens: 200000}}}, m)
		tb := &testBundle{rt: rt}
		tb.submit(t, &apitype.SubmitTurnParams{Agent: "a", Input: "sample"})
		if got := m.seen("call_s"); !strings.Contains(got, "exceed") {
			t.Errorf("the model saw %q, want the budget refusal", got)
		}
	})
}

// TestMCPFilesystemRoots: the agent's workspace is the server's root
// (the filesystem server, given no folder, takes the client's roots): a
// file in it is read; the runtime's data directory, outside it, is
// refused (by the server, and hidden by the sandbox besides).
func TestMCPFilesystemRoots(t *testing.T) {
	t.Parallel()
	m := &seer{tools: map[string]string{}}
	rt, ws := mcpRuntime(t, "filesystem", "", nil, agentrt.Config{}, m)
	if err := os.WriteFile(ws+"/note.txt", []byte("a note in the root"), 0o600); err != nil {
		t.Fatal(err)
	}
	dataDir := t.TempDir()
	if err := os.WriteFile(dataDir+"/secret.txt", []byte("outside"), 0o600); err != nil {
		t.Fatal(err)
	}
	tb := &testBundle{rt: rt}
	// The reference server asks for the roots once initialized and applies
	// them asynchronously: a call that races that sees no allowed
	// directory at all ("… not in " and an empty list). That is the
	// server's race, not the runtime's; a later turn, after it, is the
	// test.
	for attempt := 1; ; attempt++ {
		in, out := fmt.Sprint("call_in_", attempt), fmt.Sprint("call_out_", attempt)
		m.mu.Lock()
		m.resps = []*model.Response{{ToolCalls: []runtype.MessageToolCall{
			mcpCall(in, "filesystem__read_text_file", map[string]string{"path": ws + "/note.txt"}),
			mcpCall(out, "filesystem__read_text_file", map[string]string{"path": dataDir + "/secret.txt"}),
		}}}
		m.mu.Unlock()
		res, _ := tb.submit(t, &apitype.SubmitTurnParams{Agent: "a", Input: "read"})
		got := m.seen(in)
		if strings.HasSuffix(strings.TrimSpace(got), " not in") && attempt < 5 {
			t.Logf("attempt %d raced the server's roots: %q", attempt, got)
			continue
		}
		if !strings.Contains(got, "a note in the root") {
			t.Errorf("reading in the root: the model saw %q", got)
		}
		if got := strings.ToLower(m.seen(out)); !strings.Contains(got, "access denied") || strings.Contains(got, "\noutside") {
			t.Errorf("reading outside the root: the model saw %q, want a refusal", got)
		}
		validEvents(t, tb, res.SessionID)
		return
	}
}

// TestMCPMemoryServer: the memory server keeps what one call stored for
// the next, in the agent's workspace (its file named by env).
func TestMCPMemoryServer(t *testing.T) {
	t.Parallel()
	m := &seer{tools: map[string]string{}, resps: []*model.Response{
		{ToolCalls: []runtype.MessageToolCall{mcpCall("call_put", "memory__create_entities", map[string]any{
			"entities": []map[string]any{{"name": "agentrt", "entityType": "project", "observations": []string{"governed runtime"}}}})}},
		{ToolCalls: []runtype.MessageToolCall{mcpCall("call_get", "memory__read_graph", map[string]any{})}},
	}}
	rt, ws := mcpRuntime(t, "memory", "MEMORY_FILE_PATH=%s/memory.jsonl", nil, agentrt.Config{}, m)
	tb := &testBundle{rt: rt}
	tb.submit(t, &apitype.SubmitTurnParams{Agent: "a", Input: "remember"})
	if got := m.seen("call_get"); !strings.Contains(got, "governed runtime") {
		t.Errorf("read_graph: the model saw %q", got)
	}
	if _, err := os.Stat(ws + "/memory.jsonl"); err != nil {
		t.Errorf("the memory file is not in the workspace: %v", err)
	}
}

// TestMCPStdioServerEnvironment: a stdio server sees only the variables
// its configuration names (and PATH), never the runtime's own, such as
// a provider's API key.
func TestMCPStdioServerEnvironment(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-runtime-only-must-not-leak")
	m := &seer{tools: map[string]string{}, resps: []*model.Response{
		{ToolCalls: []runtype.MessageToolCall{mcpCall("call_env", "everything__get-env", map[string]any{})}}}}
	rt, _ := everythingRuntime(t, nil, agentrt.Config{}, m)
	tb := &testBundle{rt: rt}
	tb.submit(t, &apitype.SubmitTurnParams{Agent: "a", Input: "env"})
	got := m.seen("call_env")
	if !strings.Contains(got, "PATH") {
		t.Fatalf("get-env: the model saw %q, want the server's environment", got)
	}
	if strings.Contains(got, "sk-runtime-only") || strings.Contains(got, "OPENAI_API_KEY") {
		t.Errorf("the server saw the runtime's environment: %q", got)
	}
}

// mcpServerEnv makes the test binary an MCP server over stdio
// (runMCPTestServer).
const mcpServerEnv = "AGENTRT_TEST_MCP_SERVER"

// runMCPTestServer serves tools that kill the server while they run, the
// first time in its working directory: write (neither read-only nor
// idempotent) and read (read-only). Called again, they answer.
func runMCPTestServer() {
	s := sdk.NewServer(&sdk.Implementation{Name: "agentrt-test", Version: "1"}, nil)
	dying := func(name string) sdk.ToolHandlerFor[struct{}, any] {
		return func(ctx context.Context, req *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
			if _, err := os.Stat(name + ".ran"); err == nil {
				return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: name + " ran again"}}}, nil, nil
			}
			os.WriteFile(name+".ran", nil, 0o600)
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		}
	}
	text := func(s string) *sdk.CallToolResult {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
	}
	sdk.AddTool(s, &sdk.Tool{Name: "block", Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
			<-ctx.Done() // only a cancellation ends it
			return nil, nil, ctx.Err()
		})
	sdk.AddTool(s, &sdk.Tool{Name: "big", Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
			return text(strings.Repeat("0123456789abcdef", 20000)), nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "fail", Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
			r := text("the server says no")
			r.IsError = true
			return r, nil, nil
		})
	type pathIn struct {
		Path string `json:"path"`
	}
	sdk.AddTool(s, &sdk.Tool{Name: "cat", Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *sdk.CallToolRequest, in pathIn) (*sdk.CallToolResult, any, error) {
			b, err := os.ReadFile(in.Path)
			if err != nil {
				return nil, nil, err
			}
			return text(string(b)), nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "write", Annotations: &sdk.ToolAnnotations{}}, dying("write"))
	sdk.AddTool(s, &sdk.Tool{Name: "read", Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}}, dying("read"))
	if err := s.Run(context.Background(), &sdk.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// TestMCPServerKilledMidCall: a stdio server that dies while a call runs
// is started again. The read-only call is sent again and answers; the
// call that may not run twice parks the turn with a side_effect_unknown
// action (DESIGN §5), which an operator settles: marked done, the turn
// completes with the operator's word as its result and the call does not
// run again.
func TestMCPServerKilledMidCall(t *testing.T) {
	t.Parallel()
	m := &seer{tools: map[string]string{}, resps: []*model.Response{
		{ToolCalls: []runtype.MessageToolCall{mcpCall("call_read", "local__read", map[string]any{})}},
		{ToolCalls: []runtype.MessageToolCall{mcpCall("call_write", "local__write", map[string]any{})}},
		{Text: "finished"},
	}}
	rt, _ := localRuntime(t, m, "")
	tb := &testBundle{rt: rt}
	res, turn := tb.submit(t, &apitype.SubmitTurnParams{Agent: "a", Input: "read, then write"})
	if got := m.seen("call_read"); got != "read ran again" {
		t.Errorf("the read-only call: the model saw %q, want it sent again to the restarted server", got)
	}
	if turn.Status != runtype.StatusWaitingPermission {
		t.Fatalf("turn = %s (%s), want waiting_permission for the write", turn.Status, turn.StatusReason)
	}
	acts, err := rt.ListActions(t.Context(), &apitype.ListActionsParams{SessionID: res.SessionID, Status: runtype.ActionPending})
	if err != nil || len(acts) != 1 || acts[0].Type != "side_effect_unknown" || acts[0].ToolCallID != "call_write" {
		t.Fatalf("pending actions = %+v, %v; want one side_effect_unknown for the write", acts, err)
	}
	if _, err := rt.RespondAction(t.Context(), &apitype.RespondActionParams{ActionID: acts[0].ActionID, Decision: runtype.DecisionMarkDone, Message: "it was written"}); err != nil {
		t.Fatal(err)
	}
	turn, err = rt.WaitTurn(t.Context(), runtype.Owner{}, res.TurnID)
	if err != nil || turn.Status != runtype.StatusCompleted {
		t.Fatalf("turn after mark_done = %+v, %v", turn, err)
	}
	if got := m.seen("call_write"); !strings.Contains(got, "it was written") {
		t.Errorf("the write: the model saw %q, want the operator's word", got)
	}
	snap, err := rt.GetSession(t.Context(), runtype.Owner{}, res.SessionID)
	if err != nil || len(snap.CapabilitySessions) != 1 {
		t.Fatalf("snapshot: %+v, %v", snap, err)
	}
	if cs := snap.CapabilitySessions[0]; cs.Generation < 2 {
		t.Errorf("capability session = %+v, want it restarted", cs)
	}
	var statuses []string
	for _, e := range validEvents(t, tb, res.SessionID) {
		if p, ok := e.Payload.(*event.SessionPayload); ok && p.CapabilitySession != nil {
			statuses = append(statuses, p.CapabilitySession.Status)
		}
	}
	if i := slices.Index(statuses, "reinitializing"); i < 0 || !slices.Contains(statuses[i:], "ready") {
		t.Errorf("capability session statuses %v, want reinitializing then ready", statuses)
	}
}

// TestMCPSessionsIsolated: each agentrt session has its own capability
// session, and a stdio server process serves one of them only: what
// tenant acme's session stored in the memory server (in the server's
// private /tmp) is not there for tenant globex's; neither tenant sees the
// other's capability session.
func TestMCPSessionsIsolated(t *testing.T) {
	t.Parallel()
	acme := runtype.Owner{TenantID: "acme", PrincipalID: "alice"}
	globex := runtype.Owner{TenantID: "globex", PrincipalID: "bob"}
	m := &seer{tools: map[string]string{}, resps: []*model.Response{
		{ToolCalls: []runtype.MessageToolCall{mcpCall("call_put", "memory__create_entities", map[string]any{
			"entities": []map[string]any{{"name": "acme-secret-plan", "entityType": "plan", "observations": []string{"acme only"}}}})}},
		{Text: "stored"},
		{ToolCalls: []runtype.MessageToolCall{mcpCall("call_get", "memory__read_graph", map[string]any{})}},
		{Text: "read"},
	}}
	rt, _ := mcpRuntime(t, "memory", "MEMORY_FILE_PATH=/tmp/memory.jsonl", nil, agentrt.Config{}, m)
	tb := &testBundle{rt: rt}
	resA, _ := tb.submit(t, &apitype.SubmitTurnParams{Owner: acme, Agent: "a", Input: "store"})
	resB, _ := tb.submit(t, &apitype.SubmitTurnParams{Owner: globex, Agent: "a", Input: "read"})
	if got := m.seen("call_get"); got == "" || strings.Contains(got, "acme") {
		t.Errorf("globex's session read %q, want an empty graph", got)
	}
	snapA, err := rt.GetSession(t.Context(), acme, resA.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	snapB, err := rt.GetSession(t.Context(), globex, resB.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	if len(snapA.CapabilitySessions) != 1 || len(snapB.CapabilitySessions) != 1 ||
		snapA.CapabilitySessions[0].CapabilitySessionID == snapB.CapabilitySessions[0].CapabilitySessionID {
		t.Errorf("capability sessions: acme %+v, globex %+v; want one each, not the same", snapA.CapabilitySessions, snapB.CapabilitySessions)
	}
	if _, err := rt.GetSession(t.Context(), globex, resA.SessionID); err == nil {
		t.Error("globex read acme's session")
	}
}

// awaitAction follows the session's events until an action.required of
// actionType typ, and returns it.
func awaitAction(t *testing.T, rt *agentrt.Runtime, sessionID, typ string) *event.Event {
	t.Helper()
	sub, err := rt.Subscribe(t.Context(), &apitype.SubscribeParams{SessionID: sessionID})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	for {
		e, err := sub.Next(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if p, ok := e.Payload.(*event.ActionPayload); ok && e.Type == event.ActionRequired && p.ActionType == typ {
			return e
		}
	}
}

// TestMCPElicitation: a server's elicitation becomes an action.required
// with the requested schema, while the call waits; the waiting turn
// holds no worker (another session's turn runs meanwhile on the one
// worker). An answer that fails the schema is refused with the reason
// and the action stays pending; a valid answer, or a decline, reaches
// the server and the turn goes on.
func TestMCPElicitation(t *testing.T) {
	t.Parallel()
	elicit := &model.Response{ToolCalls: []runtype.MessageToolCall{mcpCall("call_ask", "everything__trigger-elicitation-request", map[string]any{})}}
	t.Run("accepted", func(t *testing.T) {
		t.Parallel()
		m := &seer{tools: map[string]string{}, resps: []*model.Response{elicit,
			{ToolCalls: []runtype.MessageToolCall{mcpCall("call_echo", "everything__echo", map[string]string{"message": "meanwhile"})}}}}
		rt, _ := everythingRuntime(t, nil, agentrt.Config{MaxConcurrentRuns: 1}, m)
		res, err := rt.SubmitTurn(t.Context(), &apitype.SubmitTurnParams{Agent: "a", Input: "ask me"})
		if err != nil {
			t.Fatal(err)
		}
		req := awaitAction(t, rt, res.SessionID, runtype.ActionElicitation)
		if p := req.Payload.(*event.ActionPayload); !strings.Contains(string(p.RequestedSchema), `"name"`) || req.ToolCallID != "call_ask" {
			t.Errorf("action.required = %+v, want the requested schema of the call", p)
		}
		// The one worker is free: another session's turn runs to the end.
		tb := &testBundle{rt: rt}
		if _, other := tb.submit(t, &apitype.SubmitTurnParams{Agent: "a", Input: "meanwhile"}); other.Status != runtype.StatusCompleted {
			t.Fatalf("another turn while the elicitation waits: %s (%s)", other.Status, other.StatusReason)
		}
		_, err = rt.RespondAction(t.Context(), &apitype.RespondActionParams{ActionID: req.ActionID, Decision: runtype.DecisionAccept, Content: json.RawMessage(`{"color":"blue"}`)})
		if err == nil || !strings.Contains(err.Error(), "name") {
			t.Fatalf("an answer without the required name: %v, want it refused naming the property", err)
		}
		if a, err := rt.GetAction(t.Context(), runtype.Owner{}, req.ActionID); err != nil || a.Status != runtype.ActionPending {
			t.Fatalf("after a refused answer the action is %+v, %v; want it pending", a, err)
		}
		if _, err := rt.RespondAction(t.Context(), &apitype.RespondActionParams{ActionID: req.ActionID, Decision: runtype.DecisionAccept, Content: json.RawMessage(`{"name":"Ada"}`)}); err != nil {
			t.Fatal(err)
		}
		turn, err := rt.WaitTurn(t.Context(), runtype.Owner{}, res.TurnID)
		if err != nil || turn.Status != runtype.StatusCompleted {
			t.Fatalf("turn after the answer = %+v, %v", turn, err)
		}
		if got := m.seen("call_ask"); !strings.Contains(got, "Ada") {
			t.Errorf("the model saw %q, want the server's use of the answer", got)
		}
		validEvents(t, tb, res.SessionID)
	})
	t.Run("declined", func(t *testing.T) {
		t.Parallel()
		m := &seer{tools: map[string]string{}, resps: []*model.Response{elicit}}
		rt, _ := everythingRuntime(t, nil, agentrt.Config{}, m)
		res, err := rt.SubmitTurn(t.Context(), &apitype.SubmitTurnParams{Agent: "a", Input: "ask me"})
		if err != nil {
			t.Fatal(err)
		}
		req := awaitAction(t, rt, res.SessionID, runtype.ActionElicitation)
		if _, err := rt.RespondAction(t.Context(), &apitype.RespondActionParams{ActionID: req.ActionID, Decision: runtype.DecisionDecline}); err != nil {
			t.Fatal(err)
		}
		if turn, err := rt.WaitTurn(t.Context(), runtype.Owner{}, res.TurnID); err != nil || turn.Status != runtype.StatusCompleted {
			t.Fatalf("turn after the decline = %+v, %v", turn, err)
		}
		if got := strings.ToLower(m.seen("call_ask")); !strings.Contains(got, "declin") {
			t.Errorf("the model saw %q, want the server's word on the decline", got)
		}
	})
}

// TestMCPEverythingOverHTTP: the same server over streamable HTTP: its
// tools join the agent with the server's annotations (the inventory
// shows them, with the MCP server and the policy's decision), a call
// answers, and the capability session records the server's
// Mcp-Session-Id.
func TestMCPEverythingOverHTTP(t *testing.T) {
	t.Parallel()
	url := testenv.MCPEverythingHTTP(t)
	m := &seer{tools: map[string]string{}, resps: []*model.Response{
		{ToolCalls: []runtype.MessageToolCall{mcpCall("call_sum", "web__get-sum", map[string]float64{"a": 2, "b": 3})}}}}
	rt, err := agentrt.New(agentrt.Config{
		DataDir: t.TempDir(),
		MCPServers: []*mcp.Server{{Name: "web", Transport: runtype.TransportStreamableHTTP, URL: url, ToolPrefix: "web__"},
			// Nothing listens there: the runtime starts without its tools.
			{Name: "gone", Transport: runtype.TransportStreamableHTTP, URL: "http://127.0.0.1:1/mcp", ToolPrefix: "gone__", ConnectTimeout: 5e9}},
		Agents: map[string]*agentrt.Agent{"a": {Provider: m, MCP: []agentrt.MCPUse{
			{Server: "web", Allow: func(n string) bool { return n != "echo" }}, {Server: "gone"}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Stop(context.Background()) })
	inv, err := rt.ToolInventory(t.Context(), &apitype.ToolInventoryParams{Agent: "a"})
	if err != nil {
		t.Fatal(err)
	}
	var sum *apitype.ToolRead
	for i, tr := range inv.Tools {
		if tr.Name == "web__echo" {
			t.Errorf("web__echo is offered, though the agent's allow list leaves it out")
		}
		if tr.Name == "web__get-sum" {
			sum = &inv.Tools[i]
		}
	}
	if sum == nil || sum.MCPServer != "web" || !sum.ReadOnly || sum.Destructive || sum.Source != "mcp:web" || sum.Policy.Decision == "" {
		t.Fatalf("inventory entry of web__get-sum = %+v", sum)
	}
	if len(inv.MCPServers) != 2 {
		t.Fatalf("inventory servers = %+v", inv.MCPServers)
	}
	if web, gone := inv.MCPServers[0], inv.MCPServers[1]; web.Status != "ready" || !slices.Contains(web.Tools, "get-sum") || slices.Contains(web.Tools, "echo") ||
		gone.Status != "failed" || gone.Error == "" || len(gone.Tools) != 0 {
		t.Errorf("inventory servers: web %+v, gone %+v", web, gone)
	}
	tb := &testBundle{rt: rt}
	res, turn := tb.submit(t, &apitype.SubmitTurnParams{Agent: "a", Input: "add"})
	if turn.Status != runtype.StatusCompleted {
		t.Fatalf("status = %s (%s)", turn.Status, turn.StatusReason)
	}
	if got := m.seen("call_sum"); !strings.Contains(got, "5") {
		t.Errorf("get-sum: the model saw %q", got)
	}
	snap, err := rt.GetSession(t.Context(), runtype.Owner{}, res.SessionID)
	if err != nil || len(snap.CapabilitySessions) != 1 {
		t.Fatalf("snapshot: %+v, %v", snap, err)
	}
	if cs := snap.CapabilitySessions[0]; cs.Transport != runtype.TransportStreamableHTTP || cs.MCPSessionID == "" || cs.Status != runtype.CapabilityReady {
		t.Errorf("capability session = %+v, want ready with the server's session id", cs)
	}
	validEvents(t, tb, res.SessionID)
}

// localRuntime starts a runtime whose agent "a" uses this test binary as
// a stdio MCP server (runMCPTestServer), sandboxed, as server "local".
// It returns the runtime and its data directory.
func localRuntime(t *testing.T, m model.Provider, dataDir string) (*agentrt.Runtime, string) {
	t.Helper()
	if _, err := sandbox.New(sandbox.Options{}).Enforcer(); err != nil {
		testenv.Missing(t, "no sandbox can be enforced here: %v", err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "server")
	if err := os.WriteFile(bin, data, 0o700); err != nil {
		t.Fatal(err)
	}
	if dataDir == "" {
		dataDir = t.TempDir()
	}
	rt, err := agentrt.New(agentrt.Config{
		DataDir: dataDir,
		MCPServers: []*mcp.Server{{Name: "local", Transport: runtype.TransportStdio, Command: []string{bin, "-test.run=^$"},
			Env: []string{mcpServerEnv + "=1"}, ToolPrefix: "local__"}},
		Agents: map[string]*agentrt.Agent{"a": {Provider: m, Workspace: t.TempDir(), Sandbox: profile(t, "workspace_write"),
			MCP: []agentrt.MCPUse{{Server: "local"}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Stop(context.Background()) })
	return rt, dataDir
}

// TestMCPResults: what a server returns reaches the model as agentrt's
// results: a large text spills to the output store (the model sees its
// head and tail and the output ref), isError is a tool error the model
// sees; and the stdio server, sandboxed, cannot read the runtime's data
// directory.
func TestMCPResults(t *testing.T) {
	t.Parallel()
	m := &seer{tools: map[string]string{}}
	rt, dataDir := localRuntime(t, m, "")
	m.resps = []*model.Response{{ToolCalls: []runtype.MessageToolCall{
		mcpCall("call_big", "local__big", map[string]any{}),
		mcpCall("call_fail", "local__fail", map[string]any{}),
		mcpCall("call_db", "local__cat", map[string]string{"path": filepath.Join(dataDir, "agentrt.db")}),
	}}}
	tb := &testBundle{rt: rt}
	res, _ := tb.submit(t, &apitype.SubmitTurnParams{Agent: "a", Input: "go"})
	if got := m.seen("call_big"); len(got) >= 320000 || !strings.Contains(got, "0123456789abcdef") {
		t.Errorf("a large result: the model saw %d bytes, want a bounded preview", len(got))
	}
	if got := m.seen("call_fail"); !strings.Contains(got, "the server says no") {
		t.Errorf("an isError result: the model saw %q", got)
	}
	if _, err := os.Stat(filepath.Join(dataDir, "agentrt.db")); err != nil {
		t.Fatalf("the store is not where the test looks: %v", err)
	}
	if got := m.seen("call_db"); strings.Contains(got, "SQLite format") || !(strings.Contains(got, "no such file") || strings.Contains(got, "permission denied")) {
		t.Errorf("reading the data directory from the server: the model saw %.200q, want a refusal", got)
	}
	var spilled, failed int
	for _, e := range validEvents(t, tb, res.SessionID) {
		switch {
		case e.Type == event.OutputSpilled && e.ToolCallID == "call_big" && e.OutputRef != "":
			spilled++
		case e.Type == event.ToolFailed && e.ToolCallID == "call_fail":
			if p := e.Payload.(*event.ToolResultPayload); p.Failure != nil && p.Failure.Kind == runtype.FailureToolError {
				failed++
			}
		}
	}
	if spilled != 1 || failed != 1 {
		t.Errorf("output.spilled for the large result: %d; tool.failed (tool_error) for isError: %d; want 1 and 1", spilled, failed)
	}
}

// TestMCPInterruptCancelsCall: interrupting a turn ends the MCP call it
// waits on (the call's context ends: the client sends
// notifications/cancelled, TestCancelSendsNotification in tool/mcp), and
// the turn stops.
func TestMCPInterruptCancelsCall(t *testing.T) {
	t.Parallel()
	m := &seer{tools: map[string]string{}, resps: []*model.Response{
		{ToolCalls: []runtype.MessageToolCall{mcpCall("call_block", "local__block", map[string]any{})}}}}
	rt, _ := localRuntime(t, m, "")
	res, err := rt.SubmitTurn(t.Context(), &apitype.SubmitTurnParams{Agent: "a", Input: "block"})
	if err != nil {
		t.Fatal(err)
	}
	sub, err := rt.Subscribe(t.Context(), &apitype.SubscribeParams{SessionID: res.SessionID})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	for {
		e, err := sub.Next(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if e.Type == event.ToolStarted && e.ToolCallID == "call_block" {
			break
		}
	}
	if _, err := rt.InterruptTurn(t.Context(), runtype.Owner{}, res.TurnID); err != nil {
		t.Fatal(err)
	}
	turn, err := rt.WaitTurn(t.Context(), runtype.Owner{}, res.TurnID)
	if err != nil || turn.Status == runtype.StatusRunning || turn.Status == runtype.StatusCompleted {
		t.Fatalf("turn after the interrupt = %+v, %v", turn, err)
	}
}

// TestMCPElicitationAnsweredElsewhere: a second runtime on the same
// store answers the elicitation the first one's run waits on: the run
// reads the answer from the store, not from its own process.
func TestMCPElicitationAnsweredElsewhere(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	m := &seer{tools: map[string]string{}, resps: []*model.Response{
		{ToolCalls: []runtype.MessageToolCall{mcpCall("call_ask", "everything__trigger-elicitation-request", map[string]any{})}}}}
	rt, _ := everythingRuntime(t, nil, agentrt.Config{DataDir: dataDir}, m)
	res, err := rt.SubmitTurn(t.Context(), &apitype.SubmitTurnParams{Agent: "a", Input: "ask me"})
	if err != nil {
		t.Fatal(err)
	}
	req := awaitAction(t, rt, res.SessionID, runtype.ActionElicitation)

	other, err := agentrt.New(agentrt.Config{DataDir: dataDir, Agents: map[string]*agentrt.Agent{"a": {Provider: &seer{tools: map[string]string{}}}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer other.Stop(context.Background())
	if _, err := other.RespondAction(t.Context(), &apitype.RespondActionParams{ActionID: req.ActionID, Decision: runtype.DecisionAccept, Content: json.RawMessage(`{"name":"Grace"}`)}); err != nil {
		t.Fatal(err)
	}
	if turn, err := rt.WaitTurn(t.Context(), runtype.Owner{}, res.TurnID); err != nil || turn.Status != runtype.StatusCompleted {
		t.Fatalf("turn after the other runtime's answer = %+v, %v", turn, err)
	}
	if got := m.seen("call_ask"); !strings.Contains(got, "Grace") {
		t.Errorf("the model saw %q, want the answer given through the other runtime", got)
	}
}
