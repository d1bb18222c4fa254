package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/httpapi"
	"github.com/agentrt/agentrt/internal/testenv"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/tool"
)

// aguiEvent is one event of an AG-UI stream.
type aguiEvent struct {
	Type string
	m    map[string]any
}

func (e aguiEvent) str(key string) string { s, _ := e.m[key].(string); return s }

// aguiInput is a RunAgentInput of one user message.
func aguiInput(thread, run, msgID, text string) string {
	return fmt.Sprintf(`{"threadId":%q,"runId":%q,"messages":[{"id":%q,"role":"user","content":%q}],"tools":[],"context":[],"state":{},"forwardedProps":{}}`,
		thread, run, msgID, text)
}

// aguiResume is a RunAgentInput that answers one interrupt.
func aguiResume(thread, run, interrupt, entry string) string {
	return fmt.Sprintf(`{"threadId":%q,"runId":%q,"messages":[],"resume":[{"interruptId":%q,%s}]}`, thread, run, interrupt, entry)
}

// postAGUI posts body to /v1/agui?query and returns the events of the
// answer, failing t unless it is an event stream of one run of thread
// and run that keeps AG-UI's rules (checkAGUIRun).
func (b *testBundle) postAGUI(t *testing.T, query, thread, run, body string) []aguiEvent {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), streamTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.server.URL+"/v1/agui"+query, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+b.bearer())
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := b.server.Client().Do(req)
	if err != nil {
		t.Fatalf("POST /v1/agui: %v", err)
	}
	defer resp.Body.Close()
	checkAnswer(t, http.MethodPost, "/v1/agui", resp, nil)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		var p apitype.Problem
		json.NewDecoder(resp.Body).Decode(&p)
		t.Fatalf("POST /v1/agui = %d %s %+v, want 200 text/event-stream", resp.StatusCode, resp.Header.Get("Content-Type"), p)
	}
	// AG-UI over SSE: each message is one data line, then a blank line;
	// comments (keep-alives) are allowed between messages.
	var evs []aguiEvent
	lines := bufio.NewScanner(resp.Body)
	lines.Buffer(make([]byte, 0, 64<<10), 4<<20)
	blank := true
	for lines.Scan() {
		line := lines.Text()
		switch data, isData := strings.CutPrefix(line, "data: "); {
		case line == "":
			blank = true
		case strings.HasPrefix(line, ":"):
		case isData && blank:
			var m map[string]any
			if err := json.Unmarshal([]byte(data), &m); err != nil {
				t.Fatalf("event %q is no JSON object: %v", data, err)
			}
			typ, _ := m["type"].(string)
			evs = append(evs, aguiEvent{typ, m})
			blank = false
		default:
			t.Fatalf("line %q: want one data line per message", line)
		}
	}
	if err := lines.Err(); err != nil {
		t.Fatalf("reading the stream after %d events: %v", len(evs), err)
	}
	checkAGUIRun(t, thread, run, evs)
	return evs
}

// aguiFields are the members each AG-UI event type the endpoint sends may
// have (besides type and timestamp): what @ag-ui/core's schemas describe
// and the client keeps. A member the client would strip fails here.
var aguiFields = map[string][]string{
	"RUN_STARTED":          {"threadId", "runId", "protocolVersion"},
	"RUN_FINISHED":         {"threadId", "runId", "result", "outcome"},
	"RUN_ERROR":            {"message", "code"},
	"TEXT_MESSAGE_START":   {"messageId", "role"},
	"TEXT_MESSAGE_CONTENT": {"messageId", "delta"},
	"TEXT_MESSAGE_END":     {"messageId"},
	"TOOL_CALL_START":      {"toolCallId", "toolCallName", "parentMessageId"},
	"TOOL_CALL_ARGS":       {"toolCallId", "delta"},
	"TOOL_CALL_END":        {"toolCallId"},
	"TOOL_CALL_RESULT":     {"messageId", "toolCallId", "content", "role"},
	"STATE_SNAPSHOT":       {"snapshot"},
	"STATE_DELTA":          {"delta"},
	"CUSTOM":               {"name", "value"},
}

// checkAGUIRun holds a stream to AG-UI's run rules, as the client's
// verifier does: RUN_STARTED (of thread and run, protocol 1.0) first and
// the state next; RUN_FINISHED or RUN_ERROR last and only last; text
// messages and tool calls continued and closed only while open, and
// nothing open at RUN_FINISHED; every state delta applies to the state.
func checkAGUIRun(t *testing.T, thread, run string, evs []aguiEvent) {
	t.Helper()
	if len(evs) < 3 || evs[0].Type != "RUN_STARTED" || evs[1].Type != "STATE_SNAPSHOT" {
		t.Fatalf("the stream opens %v, want RUN_STARTED, STATE_SNAPSHOT, …", aguiTrace(evs))
	}
	if got := [3]string{evs[0].str("threadId"), evs[0].str("runId"), evs[0].str("protocolVersion")}; got != [3]string{thread, run, apitype.AGUIProtocolVersion} {
		t.Errorf("RUN_STARTED names %v, want thread %s, run %s, protocol %s", got, thread, run, apitype.AGUIProtocolVersion)
	}
	text, calls := map[string]bool{}, map[string]bool{}
	snapshot, _ := evs[1].m["snapshot"].(map[string]any)
	state := maps.Clone(snapshot)
	for i, e := range evs {
		allowed, ok := aguiFields[e.Type]
		if !ok {
			t.Errorf("event %d is of type %q, which the endpoint does not send", i, e.Type)
		}
		for k := range e.m {
			if k != "type" && k != "timestamp" && !slices.Contains(allowed, k) {
				t.Errorf("event %d (%s) has member %q, which the client would strip", i, e.Type, k)
			}
		}
		last := i == len(evs)-1
		switch e.Type {
		case "RUN_FINISHED", "RUN_ERROR":
			if !last {
				t.Errorf("%s at %d of %d events", e.Type, i, len(evs))
			}
			if e.Type == "RUN_FINISHED" && (len(text) > 0 || len(calls) > 0) {
				t.Errorf("RUN_FINISHED with text messages %v or tool calls %v open", text, calls)
			}
			if e.Type == "RUN_FINISHED" && (e.str("threadId") != thread || e.str("runId") != run) {
				t.Errorf("RUN_FINISHED names thread %s, run %s", e.str("threadId"), e.str("runId"))
			}
		case "TEXT_MESSAGE_START":
			text[e.str("messageId")] = true
		case "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END":
			if !text[e.str("messageId")] {
				t.Errorf("%s of message %s, which is not open", e.Type, e.str("messageId"))
			}
			if e.Type == "TEXT_MESSAGE_END" {
				delete(text, e.str("messageId"))
			}
		case "TOOL_CALL_START":
			calls[e.str("toolCallId")] = true
		case "TOOL_CALL_ARGS", "TOOL_CALL_END":
			if !calls[e.str("toolCallId")] {
				t.Errorf("%s of call %s, which is not open", e.Type, e.str("toolCallId"))
			}
			if e.Type == "TOOL_CALL_END" {
				delete(calls, e.str("toolCallId"))
			}
		case "STATE_DELTA":
			ops, _ := e.m["delta"].([]any)
			for _, o := range ops {
				op, _ := o.(map[string]any)
				key := strings.TrimPrefix(fmt.Sprint(op["path"]), "/")
				if _, ok := state[key]; op["op"] != "replace" || !ok {
					t.Errorf("state delta %v does not apply to %v", op, state)
				}
				state[key] = op["value"]
			}
		}
		if !last && i > 0 && (e.Type == "RUN_STARTED" || e.Type == "STATE_SNAPSHOT" && i != 1) {
			t.Errorf("%s at %d", e.Type, i)
		}
	}
	if l := evs[len(evs)-1].Type; l != "RUN_FINISHED" && l != "RUN_ERROR" {
		t.Errorf("the stream ends with %s, want RUN_FINISHED or RUN_ERROR", l)
	}
}

// aguiState is the state a stream leaves: its snapshot with its deltas
// applied (checkAGUIRun checked that they apply).
func aguiState(evs []aguiEvent) map[string]any {
	state := map[string]any{}
	for _, e := range evs {
		switch e.Type {
		case "STATE_SNAPSHOT":
			snapshot, _ := e.m["snapshot"].(map[string]any)
			state = maps.Clone(snapshot)
		case "STATE_DELTA":
			ops, _ := e.m["delta"].([]any)
			for _, o := range ops {
				op, _ := o.(map[string]any)
				state[strings.TrimPrefix(fmt.Sprint(op["path"]), "/")] = op["value"]
			}
		}
	}
	return state
}

// aguiTrace is a stream as lines a test compares: each event's type and
// what matters of it.
func aguiTrace(evs []aguiEvent) []string {
	var out []string
	for _, e := range evs {
		s := e.Type
		switch e.Type {
		case "STATE_DELTA":
			ops, _ := e.m["delta"].([]any)
			for _, o := range ops {
				op, _ := o.(map[string]any)
				s += fmt.Sprintf(" %v=%v", op["path"], op["value"])
			}
		case "TEXT_MESSAGE_CONTENT", "TOOL_CALL_ARGS":
			s += " " + e.str("delta")
		case "TOOL_CALL_START":
			s += " " + e.str("toolCallName")
		case "TOOL_CALL_RESULT":
			s += " " + e.str("content")
		case "RUN_FINISHED":
			outcome, _ := e.m["outcome"].(map[string]any)
			s += " " + fmt.Sprint(outcome["type"])
		case "RUN_ERROR":
			s += " " + e.str("code")
		case "CUSTOM":
			s += " " + e.str("name")
		}
		out = append(out, s)
	}
	return out
}

// aguiInterrupts are the interrupts of a stream's RUN_FINISHED.
func aguiInterrupts(t *testing.T, evs []aguiEvent) []map[string]any {
	t.Helper()
	outcome, _ := evs[len(evs)-1].m["outcome"].(map[string]any)
	list, _ := outcome["interrupts"].([]any)
	var out []map[string]any
	for _, i := range list {
		m, _ := i.(map[string]any)
		out = append(out, m)
	}
	if len(out) == 0 {
		t.Fatalf("the run ended %v, want interrupts", aguiTrace(evs[len(evs)-1:]))
	}
	return out
}

// echoTool echoes its text.
func echoTool() tool.Tool {
	type in struct {
		Text string `json:"text"`
	}
	return tool.Func("echo", "Echoes.", tool.Annotations{ReadOnly: true}, func(_ context.Context, _ *tool.Call, in in) (string, error) {
		return "echo: " + in.Text, nil
	})
}

const (
	aguiToolScript  = "responses: [{text: 'let me look', tool_calls: [{name: echo, input: {text: hi}}]}, {text: done}]"
	aguiErrorScript = "responses: [{error: {kind: auth, message: bad key}}]"
)

// governed is a runtime whose agent asks before each read_file, in a
// workspace with x.md.
func governed(t *testing.T) *testBundle {
	t.Helper()
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "x.md"), []byte("hello file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return setup(t, setupOpts{script: askScript, policy: askKernel(t), builtins: []string{"read_file"}, workspace: ws})
}

// TestAGUIPlainTurn: the last user message runs as a turn of the
// thread's session, on the runtime's only agent; its reply streams as one
// text message between RUN_STARTED and RUN_FINISHED (success, with the
// result), the state following the turn. The same conversation sent
// again follows the same turn instead of starting another; members of a
// newer protocol minor are ignored.
func TestAGUIPlainTurn(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	body := `{"threadId":"thread-1","runId":"run-1","protocolVersion":"1.1","futureMember":{"x":1},` +
		`"messages":[{"id":"m0","role":"assistant","content":"How can I help?"},{"id":"m1","role":"user","content":[{"type":"text","text":"Where is "},{"type":"text","text":"order 1042?"}]}]}`
	evs := b.postAGUI(t, "", "thread-1", "run-1", body)
	want := []string{
		"RUN_STARTED", "STATE_SNAPSHOT", "STATE_DELTA /status=queued", "STATE_DELTA /status=running",
		"TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT hi", "TEXT_MESSAGE_END",
		"STATE_DELTA /hops=1", "STATE_DELTA /status=completed", "RUN_FINISHED success",
	}
	if diff := cmp.Diff(want, aguiTrace(evs)); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	state := aguiState(evs)
	turnID, _ := state["turnId"].(string)
	if diff := cmp.Diff(map[string]any{"sessionId": "thread-1", "turnId": turnID, "status": "completed", "hops": 1.0, "costUsd": 0.0}, state); diff != "" {
		t.Errorf("state (-want +got):\n%s", diff)
	}
	if r := evs[len(evs)-1].str("result"); r != "hi" {
		t.Errorf("result %q, want hi", r)
	}
	if evs[4].str("role") != "assistant" || evs[4].str("messageId") == "" {
		t.Errorf("TEXT_MESSAGE_START %v, want an assistant message with an id", evs[4].m)
	}
	turn := b.wait(t, turnID)
	if turn.Status != runtype.StatusCompleted || turn.Input != "Where is order 1042?" || turn.SessionID != "thread-1" || turn.Agent != "support" {
		t.Errorf("turn %+v, want the user message's text as the completed input of support's session thread-1", turn)
	}

	again := b.postAGUI(t, "", "thread-1", "run-2", strings.Replace(body, "run-1", "run-2", 1))
	if got := aguiState(again)["turnId"]; got != turnID {
		t.Errorf("the same conversation again runs turn %v, want %s", got, turnID)
	}
	reqs, err := b.rt.ListRequests(t.Context(), &apitype.ListRequestsParams{SessionID: "thread-1"})
	if err != nil || len(reqs) != 1 {
		t.Errorf("requests of the session = %d, %v; want the one turn", len(reqs), err)
	}
}

// TestAGUIToolCallTurn: a tool call streams as TOOL_CALL_START (under the
// hop's text message), its arguments and TOOL_CALL_END, then its result;
// the next hop's text follows.
func TestAGUIToolCallTurn(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{script: aguiToolScript, tools: []tool.Tool{echoTool()}})
	evs := b.postAGUI(t, "?agent=support", "thread-1", "run-1", aguiInput("thread-1", "run-1", "m1", "echo hi"))
	want := []string{
		"RUN_STARTED", "STATE_SNAPSHOT", "STATE_DELTA /status=queued", "STATE_DELTA /status=running",
		"TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT let me look", "TEXT_MESSAGE_END", "STATE_DELTA /hops=1",
		"TOOL_CALL_START echo", `TOOL_CALL_ARGS {"text":"hi"}`, "TOOL_CALL_END", "TOOL_CALL_RESULT echo: hi",
		"TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT done", "TEXT_MESSAGE_END", "STATE_DELTA /hops=2",
		"STATE_DELTA /status=completed", "RUN_FINISHED success",
	}
	if diff := cmp.Diff(want, aguiTrace(evs)); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	start, result := evs[8], evs[11]
	if start.str("parentMessageId") != evs[4].str("messageId") {
		t.Errorf("the tool call's parent is %q, want the hop's text message %q", start.str("parentMessageId"), evs[4].str("messageId"))
	}
	if result.str("toolCallId") != start.str("toolCallId") || result.str("role") != "tool" || result.str("messageId") == "" {
		t.Errorf("TOOL_CALL_RESULT %v does not answer TOOL_CALL_START %v", result.m, start.m)
	}
}

// TestAGUIErrorTurn: a turn that fails ends its run with RUN_ERROR,
// saying why.
func TestAGUIErrorTurn(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{script: aguiErrorScript})
	evs := b.postAGUI(t, "", "thread-1", "run-1", aguiInput("thread-1", "run-1", "m1", "hello"))
	want := []string{
		"RUN_STARTED", "STATE_SNAPSHOT", "STATE_DELTA /status=queued", "STATE_DELTA /status=running",
		"STATE_DELTA /status=failed", "STATE_DELTA /hops=1", "RUN_ERROR model_error",
	}
	if diff := cmp.Diff(want, aguiTrace(evs)); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if msg := evs[len(evs)-1].str("message"); !strings.Contains(msg, "bad key") {
		t.Errorf("RUN_ERROR message %q, want the failure's", msg)
	}
}

// streamingModel streams its reply in pieces, as the HTTP providers do.
type streamingModel struct{ pieces []string }

func (m streamingModel) Generate(_ context.Context, req *model.Request) (*model.Response, error) {
	for _, p := range m.pieces {
		req.Stream(model.Delta{Kind: model.DeltaText, Text: p})
	}
	return &model.Response{Text: strings.Join(m.pieces, ""), FinishReason: model.FinishStop}, nil
}

func (streamingModel) Info() model.Info { return model.Info{Kind: "test", Model: "streaming"} }

// TestAGUIStreamedText: a model that streams has its text sent as its
// deltas come (model.delta events), in one message, not once more whole.
func TestAGUIStreamedText(t *testing.T) {
	t.Parallel()
	rt, err := agentrt.New(agentrt.Config{
		DataDir: t.TempDir(),
		Agents:  map[string]*agentrt.Agent{"support": {Instructions: "help", Provider: streamingModel{[]string{"Hel", "lo ", "there!"}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := rt.Stop(context.Background()); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	if err := httpapi.RegisterFileToken(t.Context(), rt, testToken); err != nil {
		t.Fatal(err)
	}
	api, err := httpapi.New(rt, httpapi.Config{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api.Handler())
	t.Cleanup(srv.Close)
	b := &testBundle{rt: rt, api: api, server: srv}
	evs := b.postAGUI(t, "", "thread-1", "run-1", aguiInput("thread-1", "run-1", "m1", "hello"))
	var text string
	starts := 0
	for _, e := range evs {
		switch e.Type {
		case "TEXT_MESSAGE_START":
			starts++
		case "TEXT_MESSAGE_CONTENT":
			text += e.str("delta")
		}
	}
	if starts != 1 || text != "Hello there!" {
		t.Errorf("%d text messages saying %q, want one saying Hello there!: %v", starts, text, aguiTrace(evs))
	}
}

// TestAGUIInterrupt: a turn that parks on a policy ask ends its run with
// the interrupt outcome — one interrupt per pending action, id the
// action's, its tool call sent before — and a second request answers
// it with resume: approve runs the call and the turn to its end; deny
// with a message tells the model; cancelled abandons the action and
// interrupts the turn; an action someone answered meanwhile changes
// nothing and the stream says so, then shows what the client missed.
func TestAGUIInterrupt(t *testing.T) {
	t.Parallel()
	parked := []string{
		"RUN_STARTED", "STATE_SNAPSHOT", "STATE_DELTA /status=queued", "STATE_DELTA /status=running", "STATE_DELTA /hops=1",
		"TOOL_CALL_START read_file", `TOOL_CALL_ARGS {"path":"x.md"}`, "TOOL_CALL_END",
		"STATE_DELTA /status=waiting_permission", "RUN_FINISHED interrupt",
	}
	ran := func(result string) []string {
		return []string{
			"RUN_STARTED", "STATE_SNAPSHOT", "STATE_DELTA /status=running", "TOOL_CALL_RESULT " + result,
			"TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT done", "TEXT_MESSAGE_END",
			"STATE_DELTA /hops=2", "STATE_DELTA /status=completed", "RUN_FINISHED success",
		}
	}
	tests := []struct {
		name   string
		entry  string
		before string // a decision POST /v1/actions/{id} makes first
		want   []string
		status runtype.ActionStatus
		turn   runtype.TaskStatus
	}{
		{"approve", `"status":"resolved","payload":{"decision":"approve"}`, "", ran("hello file\n"), runtype.ActionApproved, runtype.StatusCompleted},
		{"deny", `"status":"resolved","payload":{"decision":"deny","message":"not now"}`, "", ran("error: permission denied by operator: not now"), runtype.ActionDenied, runtype.StatusCompleted},
		{"edit", `"status":"resolved","payload":{"decision":"edit","updatedInput":{"path":"x.md"}}`, "", ran("hello file\n"), runtype.ActionApproved, runtype.StatusCompleted},
		{"cancelled", `"status":"cancelled"`, "", []string{
			"RUN_STARTED", "STATE_SNAPSHOT", "STATE_DELTA /status=cancelling",
			"TOOL_CALL_RESULT error: not executed: the turn was cancelled while it waited for a decision",
			"STATE_DELTA /status=cancelled", "RUN_FINISHED cancelled",
		}, runtype.ActionCancelled, runtype.StatusCancelled},
		{"answered meanwhile", `"status":"resolved","payload":{"decision":"deny"}`, `{"decision":"approve"}`,
			append([]string{"RUN_STARTED", "STATE_SNAPSHOT", "CUSTOM agentrt.interrupt_not_pending"}, ran("hello file\n")[2:]...),
			runtype.ActionApproved, runtype.StatusCompleted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := governed(t)
			evs := b.postAGUI(t, "", "thread-1", "run-1", aguiInput("thread-1", "run-1", "m1", "read x.md"))
			if diff := cmp.Diff(parked, aguiTrace(evs)); diff != "" {
				t.Errorf("the first run (-want +got):\n%s", diff)
			}
			turnID, _ := aguiState(evs)["turnId"].(string)
			acts, err := b.rt.ListActions(t.Context(), &apitype.ListActionsParams{TurnID: turnID})
			if err != nil || len(acts) != 1 {
				t.Fatalf("actions of the turn: %v, %v", acts, err)
			}
			a := acts[0]
			got := aguiInterrupts(t, evs)
			if len(got) != 1 || got[0]["id"] != a.ActionID || got[0]["reason"] != "tool_permission" || got[0]["toolCallId"] != a.ToolCallID ||
				got[0]["message"] != a.Prompt || got[0]["expiresAt"] == nil || evs[5].str("toolCallId") != a.ToolCallID {
				t.Errorf("interrupts %v, want action %+v's", got, a)
			}
			schema, _ := got[0]["responseSchema"].(map[string]any)
			props, _ := schema["properties"].(map[string]any)
			decision, _ := props["decision"].(map[string]any)
			if diff := cmp.Diff([]any{"approve", "approve_for_session", "approve_always", "deny", "edit"}, decision["enum"]); diff != "" || props["updatedInput"] == nil {
				t.Errorf("response schema %v: its decisions (-want +got):\n%s", schema, diff)
			}

			if tt.before != "" {
				b.getJSON(t, call{method: http.MethodPost, path: "/v1/actions/" + a.ActionID, body: tt.before}, http.StatusOK, nil)
				b.wait(t, turnID)
			}
			evs = b.postAGUI(t, "", "thread-1", "run-2", aguiResume("thread-1", "run-2", a.ActionID, tt.entry))
			if diff := cmp.Diff(tt.want, aguiTrace(evs)); diff != "" {
				t.Errorf("the resumed run (-want +got):\n%s", diff)
			}
			if evs[1].m["snapshot"].(map[string]any)["status"] != "waiting_permission" || aguiState(evs)["turnId"] != turnID {
				t.Errorf("the resumed run starts from state %v and ends in %v, want the parked turn %s", evs[1].m["snapshot"], aguiState(evs), turnID)
			}
			after, err := b.rt.GetAction(t.Context(), runtype.Owner{}, a.ActionID)
			if err != nil || after.Status != tt.status {
				t.Errorf("action after the answer: %+v, %v; want %s", after, err, tt.status)
			}
			if turn := b.wait(t, turnID); turn.Status != tt.turn {
				t.Errorf("turn %s, want %s", turn.Status, tt.turn)
			}
		})
	}
}

// TestAGUIFollow: forwardedProps.turnId replays a turn of the thread from
// its start; a turn of another thread is refused.
func TestAGUIFollow(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{script: aguiToolScript, tools: []tool.Tool{echoTool()}})
	first := b.postAGUI(t, "", "thread-1", "run-1", aguiInput("thread-1", "run-1", "m1", "echo hi"))
	turnID, _ := aguiState(first)["turnId"].(string)
	body := fmt.Sprintf(`{"threadId":"thread-1","runId":"run-2","messages":[],"forwardedProps":{"turnId":%q}}`, turnID)
	again := b.postAGUI(t, "", "thread-1", "run-2", body)
	if diff := cmp.Diff(aguiTrace(first), aguiTrace(again)); diff != "" {
		t.Errorf("following the turn (-first run +follow):\n%s", diff)
	}
	resp, raw := b.do(t, call{method: http.MethodPost, path: "/v1/agui", body: strings.Replace(body, "thread-1", "thread-2", 1)})
	wantError(t, resp, raw, http.StatusBadRequest, "invalid_request", turnID, "not of thread thread-2")
}

// TestAGUIRoles: a submitter runs turns on its own threads and follows
// its own turns, may abandon its own turn's interrupt but not answer it
// (answering an approval needs an operator or admin, who may); another
// submitter, another tenant and a viewer get nothing of it.
func TestAGUIRoles(t *testing.T) {
	t.Parallel()
	b := governed(t)
	sam := b.as(t, apitype.DefaultTenant, "sam", runtype.APIRoleSubmitter)
	sue := b.as(t, apitype.DefaultTenant, "sue", runtype.APIRoleSubmitter)
	olga := b.as(t, apitype.DefaultTenant, "olga", runtype.APIRoleOperator)
	viewer := b.as(t, apitype.DefaultTenant, "vera", runtype.APIRoleViewer)
	foreign := b.as(t, "tenant_other", "olga", runtype.APIRoleOperator)

	resp, raw := viewer.do(t, call{method: http.MethodPost, path: "/v1/agui", body: aguiInput("vera-thread", "run-1", "m1", "hi")})
	wantError(t, resp, raw, http.StatusForbidden, "forbidden", "role viewer", "admin, operator or submitter")

	park := func(s *testBundle, thread string) (turnID, actionID string) {
		t.Helper()
		evs := s.postAGUI(t, "", thread, "run-1", aguiInput(thread, "run-1", "m1", "read x.md"))
		turnID, _ = aguiState(evs)["turnId"].(string)
		id, _ := aguiInterrupts(t, evs)[0]["id"].(string)
		return turnID, id
	}
	turn1, act1 := park(sam, "sam-1")
	approve := `"status":"resolved","payload":{"decision":"approve"}`

	// Sam may not answer his interrupt; sue and another tenant do not
	// see it; nobody else continues or follows his thread.
	resp, raw = sam.do(t, call{method: http.MethodPost, path: "/v1/agui", body: aguiResume("sam-1", "run-2", act1, approve)})
	wantError(t, resp, raw, http.StatusForbidden, "forbidden", "operator or admin", act1)
	missing := func(c *testBundle, body, what string) {
		t.Helper()
		resp, raw := c.do(t, call{method: http.MethodPost, path: "/v1/agui", body: body})
		wantError(t, resp, raw, http.StatusNotFound, "not_found", "not found: "+what)
	}
	for _, c := range []*testBundle{sue, foreign} {
		missing(c, aguiResume("sam-1", "run-2", act1, `"status":"cancelled"`), "interrupt "+act1)
		missing(c, fmt.Sprintf(`{"threadId":"sam-1","runId":"r","messages":[],"forwardedProps":{"turnId":%q}}`, turn1), "turn "+turn1)
	}
	// The same answers as for ids that exist nowhere.
	missing(sue, aguiResume("sam-1", "run-2", "act_missing", `"status":"cancelled"`), "interrupt act_missing")
	resp, raw = sue.do(t, call{method: http.MethodPost, path: "/v1/agui", body: aguiInput("sam-1", "run-2", "m2", "hi")})
	wantError(t, resp, raw, http.StatusForbidden, "forbidden", "another principal's")

	// An operator answers it; sam follows his turn.
	evs := olga.postAGUI(t, "", "sam-1", "run-2", aguiResume("sam-1", "run-2", act1, approve))
	if last := aguiTrace(evs)[len(evs)-1]; last != "RUN_FINISHED success" {
		t.Errorf("the operator's answer ends %s, want success", last)
	}
	if a, err := b.rt.GetAction(t.Context(), runtype.Owner{}, act1); err != nil || a.ResolvedBy != "olga" {
		t.Errorf("action %+v, %v: want olga's answer", a, err)
	}
	sam.postAGUI(t, "", "sam-1", "run-3", fmt.Sprintf(`{"threadId":"sam-1","runId":"run-3","messages":[],"forwardedProps":{"turnId":%q}}`, turn1))

	// Sam abandons his next interrupt: his turn is interrupted.
	turn2, act2 := park(sam, "sam-2")
	evs = sam.postAGUI(t, "", "sam-2", "run-2", aguiResume("sam-2", "run-2", act2, `"status":"cancelled"`))
	if last := aguiTrace(evs)[len(evs)-1]; last != "RUN_FINISHED cancelled" {
		t.Errorf("sam's abandoned interrupt ends %s, want cancelled", last)
	}
	if turn := b.wait(t, turn2); turn.Status != runtype.StatusCancelled {
		t.Errorf("sam's turn %s, want cancelled", turn.Status)
	}
}

// TestAGUIRejects: bad input is refused before the stream starts, with a
// problem that says what is wrong, and records nothing.
func TestAGUIRejects(t *testing.T) {
	t.Parallel()
	b := governed(t)
	evs := b.postAGUI(t, "", "thread-1", "run-1", aguiInput("thread-1", "run-1", "m1", "read x.md"))
	act, _ := aguiInterrupts(t, evs)[0]["id"].(string)
	before, err := b.rt.ListRequests(t.Context(), &apitype.ListRequestsParams{})
	if err != nil {
		t.Fatal(err)
	}
	resume := func(entry string) string { return aguiResume("thread-1", "run-2", act, entry) }
	msg := func(content string) string {
		return `{"threadId":"thread-2","runId":"r","messages":[{"id":"m1","role":"user","content":` + content + `}]}`
	}
	tests := []struct {
		name, query, body string
		header            map[string]string
		code              int
		kind              string
		words             []string
	}{
		{"malformed JSON", "", `{"threadId":`, nil, 400, "invalid_json", []string{"not valid JSON"}},
		{"not an object", "", `[]`, nil, 400, "invalid_json", []string{"array", "object"}},
		{"empty", "", ``, nil, 400, "invalid_json", []string{"empty"}},
		{"trailing data", "", aguiInput("thread-2", "r", "m1", "hi") + `{}`, nil, 400, "invalid_json", []string{"more than one"}},
		{"a field of the wrong type", "", `{"threadId":"thread-2","runId":"r","messages":"hi"}`, nil, 400, "invalid_json", []string{"messages", "array"}},
		{"not JSON", "", aguiInput("thread-2", "r", "m1", "hi"), map[string]string{"Content-Type": "text/plain"}, 415, "unsupported_media_type", []string{"application/json"}},
		{"oversized", "", `{"threadId":"thread-2","runId":"r","messages":[{"id":"m1","role":"user","content":"` + strings.Repeat("a", httpapi.MaxBodyBytes) + `"}]}`, nil, 413, "body_too_large", []string{"exceeds"}},
		{"no threadId", "", `{"runId":"r","messages":[]}`, nil, 400, "invalid_request", []string{"threadId is required"}},
		{"a threadId agentrt cannot use", "", aguiInput("thread 2/x", "r", "m1", "hi"), nil, 400, "invalid_request", []string{"threadId", "A-Z"}},
		{"no runId", "", `{"threadId":"thread-2","messages":[]}`, nil, 400, "invalid_request", []string{"runId is required"}},
		{"no user message", "", `{"threadId":"thread-2","runId":"r","messages":[{"id":"a1","role":"assistant","content":"hello"}]}`, nil, 400, "invalid_request", []string{"no user message"}},
		{"no messages", "", `{"threadId":"thread-2","runId":"r","messages":[]}`, nil, 400, "invalid_request", []string{"no user message"}},
		{"a message that is no object", "", `{"threadId":"thread-2","runId":"r","messages":["hi"]}`, nil, 400, "invalid_request", []string{"messages[0] is a JSON string; want an object"}},
		{"a user message without text", "", msg(`"   "`), nil, 400, "invalid_request", []string{"messages[0]", "no text"}},
		{"an image", "", msg(`[{"type":"text","text":"see"},{"type":"image","source":{"type":"url","value":"https://example.com/a.png"}}]`), nil, 400, "invalid_request", []string{"messages[0].content[1] is an image part", "text only"}},
		{"content of another kind", "", msg(`42`), nil, 400, "invalid_request", []string{"messages[0].content is neither a string nor"}},
		{"an unknown agent", "", `{"threadId":"thread-2","runId":"r","messages":[{"id":"m1","role":"user","content":"hi"}],"forwardedProps":{"agent":"nobody"}}`, nil, 400, "invalid_request", []string{"unknown agent", "nobody", "support"}},
		{"an unknown agent in the query", "?agent=nobody", msg(`"hi"`), nil, 400, "invalid_request", []string{"unknown agent", "nobody"}},
		{"two agents", "?agent=support", `{"threadId":"thread-2","runId":"r","messages":[{"id":"m1","role":"user","content":"hi"}],"forwardedProps":{"agent":"other"}}`, nil, 400, "invalid_request", []string{"different agents"}},
		{"forwardedProps no object", "", `{"threadId":"thread-2","runId":"r","messages":[],"forwardedProps":"x"}`, nil, 400, "invalid_request", []string{"forwardedProps is a JSON string; want an object"}},
		{"protocol 2", "", `{"threadId":"thread-2","runId":"r","messages":[],"protocolVersion":"2.0"}`, nil, 400, "invalid_request", []string{"protocolVersion", "major version 1"}},
		{"a turn that does not exist", "", `{"threadId":"thread-1","runId":"r","messages":[],"forwardedProps":{"turnId":"turn_missing"}}`, nil, 404, "not_found", []string{"turn turn_missing"}},
		{"resume: no interruptId", "", `{"threadId":"thread-1","runId":"r","messages":[],"resume":[{"status":"cancelled"}]}`, nil, 400, "invalid_request", []string{"resume[0].interruptId"}},
		{"resume: a status of no kind", "", resume(`"status":"maybe"`), nil, 400, "invalid_request", []string{"resume[0].status", "maybe"}},
		{"resume: twice", "", `{"threadId":"thread-1","runId":"r","messages":[],"resume":[{"interruptId":"` + act + `","status":"cancelled"},{"interruptId":"` + act + `","status":"cancelled"}]}`, nil, 400, "invalid_request", []string{"resume[1]", "again"}},
		{"resume: an interrupt that does not exist", "", aguiResume("thread-1", "r", "act_missing", `"status":"cancelled"`), nil, 404, "not_found", []string{"interrupt act_missing"}},
		{"resume: another thread's", "", aguiResume("thread-2", "r", act, `"status":"cancelled"`), nil, 400, "invalid_request", []string{"not of thread thread-2"}},
		{"resume: no payload", "", resume(`"status":"resolved"`), nil, 400, "invalid_request", []string{"payload is required", "approve"}},
		{"resume: a payload of unknown members", "", resume(`"status":"resolved","payload":{"decision":"approve","extra":1}`), nil, 400, "invalid_request", []string{"resume[0].payload: unknown field", "extra"}},
		{"resume: a decision of no kind", "", resume(`"status":"resolved","payload":{"decision":"perhaps"}`), nil, 400, "invalid_request", []string{"decision", "perhaps", "approve"}},
		{"resume: an edit the tool refuses", "", resume(`"status":"resolved","payload":{"decision":"edit","updatedInput":{"path":1}}`), nil, 400, "invalid_request", []string{"updatedInput"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			resp, raw := b.do(t, call{method: http.MethodPost, path: "/v1/agui" + tt.query, body: tt.body, header: tt.header})
			wantError(t, resp, raw, tt.code, tt.kind, tt.words...)
		})
	}
	t.Cleanup(func() {
		// Nothing was recorded, and the parked turn still waits.
		after, err := b.rt.ListRequests(context.Background(), &apitype.ListRequestsParams{})
		if err != nil || len(after) != len(before) {
			t.Errorf("requests after the rejects: %d (%v), before %d", len(after), err, len(before))
		}
		if a, err := b.rt.GetAction(context.Background(), runtype.Owner{}, act); err != nil || a.Status != runtype.ActionPending {
			t.Errorf("the interrupt after the rejects: %+v, %v; want it pending", a, err)
		}
	})
}

// aguiDir is the pinned AG-UI client, from the httpapi directory.
var aguiDir = filepath.Join("..", "testdata", "agui")

// aguiClientRun is what testdata/agui/run.mjs prints of one run.
type aguiClientRun struct {
	Types      []string `json:"types"`
	Outcome    string   `json:"outcome"`
	Interrupts []struct {
		ID, Reason, ToolCallID string
	} `json:"interrupts"`
	Error *struct {
		Message, Code string
	} `json:"error"`
	Thrown string `json:"thrown"`
}

// aguiClientReport is what testdata/agui/run.mjs prints.
type aguiClientReport struct {
	Runs              []aguiClientRun `json:"runs"`
	PendingInterrupts []string        `json:"pendingInterrupts"`
	Messages          []struct {
		Role       string `json:"role"`
		Content    any    `json:"content"`
		ToolCalls  []struct{ ID, Name, Arguments string }
		ToolCallID string `json:"toolCallId"`
	} `json:"messages"`
	State  map[string]any `json:"state"`
	Logged []string       `json:"logged"`
}

// runAGUIClient runs testdata/agui/run.mjs against b as its admin.
func runAGUIClient(t *testing.T, b *testBundle, args ...string) aguiClientReport {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		testenv.Missing(t, "the AG-UI client check needs node: %v", err)
	}
	if _, err := os.Stat(filepath.Join(aguiDir, "node_modules", "@ag-ui", "client")); err != nil {
		testenv.Missing(t, "the AG-UI client check needs @ag-ui/client: run npm ci in %s (%v)", aguiDir, err)
	}
	cmd := exec.CommandContext(t.Context(), node, append([]string{"run.mjs", "--url", b.server.URL + "/v1/agui"}, args...)...)
	cmd.Dir = aguiDir
	cmd.Env = append(os.Environ(), "AGUI_TOKEN="+b.bearer())
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node run.mjs: %v\n%s", err, stderr.String())
	}
	var rep aguiClientReport
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("decoding run.mjs's report %s: %v", out, err)
	}
	if len(rep.Logged) > 0 {
		t.Errorf("the client logged warnings or errors (material it stripped, dropped or rejected):\n%s", strings.Join(rep.Logged, "\n"))
	}
	return rep
}

// TestAGUIClient: the real AG-UI client, @ag-ui/client 1.0.0's HttpAgent
// (testdata/agui, run.mjs), which checks every event against
// @ag-ui/core's schemas and the protocol's sequence rules, accepts
// every stream without a warning: a tool-call turn, a failing one, and
// a turn that parks on an approval, which the client answers with a
// resume run (buildResumeArray) to the turn's end.
func TestAGUIClient(t *testing.T) {
	t.Parallel()
	t.Run("tool call", func(t *testing.T) {
		t.Parallel()
		b := setup(t, setupOpts{script: aguiToolScript, tools: []tool.Tool{echoTool()}})
		rep := runAGUIClient(t, b, "--thread", "thread-1", "--message", "echo hi", "--agent", "support")
		want := []aguiClientRun{{Outcome: "success", Types: []string{
			"RUN_STARTED", "STATE_SNAPSHOT", "STATE_DELTA", "STATE_DELTA", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT",
			"TEXT_MESSAGE_END", "STATE_DELTA", "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_RESULT",
			"TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "STATE_DELTA", "STATE_DELTA", "RUN_FINISHED",
		}}}
		if diff := cmp.Diff(want, rep.Runs); diff != "" {
			t.Errorf("the client's run (-want +got):\n%s", diff)
		}
		var got []string
		for _, m := range rep.Messages {
			s := fmt.Sprintf("%s %v", m.Role, m.Content)
			for _, c := range m.ToolCalls {
				s += fmt.Sprintf(" call %s %s", c.Name, c.Arguments)
			}
			got = append(got, s)
		}
		wantMsgs := []string{"user echo hi", `assistant let me look call echo {"text":"hi"}`, "tool echo: hi", "assistant done"}
		if diff := cmp.Diff(wantMsgs, got); diff != "" {
			t.Errorf("the conversation the client holds (-want +got):\n%s", diff)
		}
		if rep.State["status"] != "completed" || rep.State["hops"] != 2.0 || rep.State["sessionId"] != "thread-1" {
			t.Errorf("the client's state %v, want the completed turn's", rep.State)
		}
	})
	t.Run("error", func(t *testing.T) {
		t.Parallel()
		b := setup(t, setupOpts{script: aguiErrorScript})
		rep := runAGUIClient(t, b, "--thread", "thread-1", "--message", "hello")
		if len(rep.Runs) != 1 || rep.Runs[0].Error == nil || rep.Runs[0].Error.Code != "model_error" || rep.Runs[0].Thrown != "" ||
			rep.Runs[0].Types[len(rep.Runs[0].Types)-1] != "RUN_ERROR" {
			t.Errorf("the client's runs %+v, want one ending with RUN_ERROR model_error", rep.Runs)
		}
	})
	t.Run("interrupt answered", func(t *testing.T) {
		t.Parallel()
		b := governed(t)
		rep := runAGUIClient(t, b, "--thread", "thread-1", "--message", "read x.md", "--answer", `{"decision":"approve","message":"ok"}`)
		if len(rep.Runs) != 2 {
			t.Fatalf("the client ran %d runs: %+v; want the interrupted one and its resume", len(rep.Runs), rep.Runs)
		}
		acts, err := b.rt.ListActions(t.Context(), &apitype.ListActionsParams{SessionID: "thread-1"})
		if err != nil || len(acts) != 1 {
			t.Fatalf("actions: %v, %v", acts, err)
		}
		first, second := rep.Runs[0], rep.Runs[1]
		wantFirst := []string{
			"RUN_STARTED", "STATE_SNAPSHOT", "STATE_DELTA", "STATE_DELTA", "STATE_DELTA",
			"TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "STATE_DELTA", "RUN_FINISHED",
		}
		if diff := cmp.Diff(wantFirst, first.Types); diff != "" || first.Outcome != "interrupt" || len(first.Interrupts) != 1 ||
			first.Interrupts[0].ID != acts[0].ActionID || first.Interrupts[0].ToolCallID != acts[0].ToolCallID {
			t.Errorf("the first run %+v, want it interrupted on action %s; its types (-want +got):\n%s", first, acts[0].ActionID, diff)
		}
		wantSecond := []string{
			"RUN_STARTED", "STATE_SNAPSHOT", "STATE_DELTA", "TOOL_CALL_RESULT", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT",
			"TEXT_MESSAGE_END", "STATE_DELTA", "STATE_DELTA", "RUN_FINISHED",
		}
		if diff := cmp.Diff(wantSecond, second.Types); diff != "" || second.Outcome != "success" {
			t.Errorf("the resumed run %+v; its types (-want +got):\n%s", second, diff)
		}
		if len(rep.PendingInterrupts) != 0 || rep.State["status"] != "completed" {
			t.Errorf("after the answer the client holds interrupts %v and state %v, want none and a completed turn", rep.PendingInterrupts, rep.State)
		}
		if acts[0].Status != runtype.ActionApproved || acts[0].Message != "ok" || acts[0].ResolvedBy != apitype.APIPrincipal {
			t.Errorf("action %+v, want approved by the client's principal with its message", acts[0])
		}
		var tool string
		for _, m := range rep.Messages {
			if m.Role == "tool" && m.ToolCallID == acts[0].ToolCallID {
				tool = fmt.Sprint(m.Content)
			}
		}
		if tool != "hello file\n" {
			t.Errorf("the client holds the call's result %q, want the file's content", tool)
		}
	})
}
