package agentrt_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/internal/rttest"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/tool"
)

// caseState is the state schema of the test's case agent.
func caseState(version int, migrate string) *agentrt.StateSchema {
	return &agentrt.StateSchema{
		Version: version, Migrate: migrate,
		Schema: json.RawMessage(`{"type":"object","properties":{"status":{"enum":["new","open","waiting","closed"]},` +
			`"notes":{"type":"array","items":{"type":"string"}}},"required":["status"]}`),
		Initial: json.RawMessage(`{"status":"new"}`),
	}
}

// stateCaller calls instance_state with input on a turn's first hop
// (when input is not empty), and answers with the turn's first user
// message and the tool's answer.
func stateCaller(input string) *mind {
	return &mind{fn: func(req *model.Request, _ int) *model.Response {
		res := toolResults(req)
		if input != "" && len(res) == 0 {
			return &model.Response{ToolCalls: []runtype.MessageToolCall{{ID: "s1", Name: agentrt.InstanceStateTool, Arguments: input}}}
		}
		first := lastUser(req) // the turn's first message: tool results are not the user's
		return &model.Response{Text: "first: " + first + "\ntool: " + res["s1"]}
	}}
}

func send(t *testing.T, rt *agentrt.Runtime, p *apitype.SendInstanceEventParams) (*apitype.SendInstanceEventResult, *runtype.Turn) {
	t.Helper()
	res, err := rt.SendInstanceEvent(context.Background(), p)
	if err != nil {
		t.Fatalf("SendInstanceEvent: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	turn, err := rt.WaitTurn(ctx, p.Owner, res.TurnID)
	if err != nil {
		t.Fatalf("waiting for turn %s: %v", res.TurnID, err)
	}
	return res, turn
}

// instanceChanges are the state changes of an instance's session, each
// event checked against the standard's schema.
func instanceChanges(t *testing.T, rt *agentrt.Runtime, owner runtype.Owner, sessionID string) []*event.InstancePayload {
	t.Helper()
	var out []*event.InstancePayload
	for _, e := range rttest.SessionEvents(t, rt, owner, sessionID) {
		if p, ok := e.Payload.(*event.SessionPayload); ok && e.Type == event.SessionUpdated && p.Instance != nil {
			out = append(out, p.Instance)
		}
	}
	return out
}

// TestInstanceEventWakesIt: an event posted to a new instance creates it
// and runs a turn on its session that sees the event and the state; the
// turn's instance_state merge is recorded as an event naming its run.
func TestInstanceEventWakesIt(t *testing.T) {
	t.Parallel()
	rt := startTree(t, agentrt.Config{Agents: map[string]*agentrt.Agent{
		"case": {Provider: stateCaller(`{"op":"merge","patch":{"status":"waiting","notes":["asked for logs"]}}`), State: caseState(1, "")},
	}}).rt
	res, turn := send(t, rt, &apitype.SendInstanceEventParams{Name: "case/4711", Agent: "case", Type: "email.received", Data: json.RawMessage(`{"from":"ada"}`)})
	if turn.Status != runtype.StatusCompleted {
		t.Fatalf("turn %s: %+v", turn.Status, turn.Failure)
	}
	for _, want := range []string{`email.received`, `{"from":"ada"}`, `<instance name="case/4711" stateVersion="0" schemaVersion="1">`, `{"status":"new"}`, `"stateVersion":1`} {
		if !strings.Contains(turn.Result, want) {
			t.Errorf("the turn's answer lacks %s:\n%s", want, turn.Result)
		}
	}
	st, err := rt.GetInstanceState(context.Background(), &apitype.GetInstanceParams{Name: "case/4711"})
	if err != nil {
		t.Fatal(err)
	}
	if string(st.State) != `{"notes":["asked for logs"],"status":"waiting"}` || st.StateVersion != 1 || st.SchemaVersion != 1 {
		t.Errorf("state %s at %d/%d", st.State, st.StateVersion, st.SchemaVersion)
	}
	ch := instanceChanges(t, rt, runtype.Owner{}, res.Instance.SessionID)
	if len(ch) != 1 || ch[0].ChangedBy != "tool" || ch[0].RunID == "" || ch[0].RunID != turn.RunID || ch[0].ToolCallID == "" ||
		strings.Join(ch[0].Keys, ",") != "notes,status" || ch[0].Name != "case/4711" || ch[0].StateVersion != 1 {
		t.Errorf("state changes %+v, want one by the tool in run %s", ch, turn.RunID)
	}
	// A second event omits the agent and runs on the same session's
	// thread, seeing the changed state.
	res2, turn2 := send(t, rt, &apitype.SendInstanceEventParams{Name: "case/4711", Type: "ping"})
	if res2.Instance.SessionID != res.Instance.SessionID || turn2.ThreadID != turn.ThreadID {
		t.Errorf("second event ran on %s/%s, want %s/%s", res2.Instance.SessionID, turn2.ThreadID, res.Instance.SessionID, turn.ThreadID)
	}
	if !strings.Contains(turn2.Result, `stateVersion="1"`) || !strings.Contains(turn2.Result, `"waiting"`) {
		t.Errorf("the second turn did not see the new state:\n%s", turn2.Result)
	}
	if got, err := rt.GetInstance(context.Background(), &apitype.GetInstanceParams{Name: "case/4711"}); err != nil || got.LastWokenAt == nil {
		t.Errorf("GetInstance: %+v, %v; want a wake-up time", got, err)
	}
}

// TestInstanceStateRefusesSchemaViolations: a state the schema refuses
// is an error the model sees (naming what is wrong) and an invalid
// request at the API; nothing changes either way. The API's change is an
// event too, and a stale expected version a conflict.
func TestInstanceStateRefusesSchemaViolations(t *testing.T) {
	t.Parallel()
	rt := startTree(t, agentrt.Config{Agents: map[string]*agentrt.Agent{
		"case": {Provider: stateCaller(`{"op":"set","state":{"status":"lost"}}`), State: caseState(1, "")},
	}}).rt
	ctx := context.Background()
	res, turn := send(t, rt, &apitype.SendInstanceEventParams{Name: "case/1", Agent: "case", Type: "opened"})
	if !strings.Contains(turn.Result, "does not match the agent's state schema") || !strings.Contains(turn.Result, "/status") ||
		!strings.Contains(turn.Result, "nothing changed") {
		t.Errorf("the model saw no schema violation naming /status:\n%s", turn.Result)
	}
	_, err := rt.SetInstanceState(ctx, &apitype.SetInstanceStateParams{Name: "case/1", State: json.RawMessage(`{"status":7}`)})
	var inv *apitype.InvalidError
	if !errors.As(err, &inv) || inv.Field != "state" {
		t.Errorf("SetInstanceState with a bad state: %v, want invalid state", err)
	}
	st, err := rt.GetInstanceState(ctx, &apitype.GetInstanceParams{Name: "case/1"})
	if err != nil || st.StateVersion != 0 || string(st.State) != `{"status":"new"}` {
		t.Fatalf("state after refusals: %+v, %v", st, err)
	}
	stale := int64(3)
	if _, err := rt.SetInstanceState(ctx, &apitype.SetInstanceStateParams{Name: "case/1", State: json.RawMessage(`{"status":"open"}`), ExpectedStateVersion: &stale}); !errors.Is(err, apitype.ErrConflict) {
		t.Errorf("SetInstanceState at a stale version: %v, want a conflict", err)
	}
	zero := int64(0)
	got, err := rt.SetInstanceState(ctx, &apitype.SetInstanceStateParams{Name: "case/1", State: json.RawMessage(`{"status":"open"}`), ExpectedStateVersion: &zero})
	if err != nil || got.StateVersion != 1 {
		t.Fatalf("SetInstanceState: %+v, %v", got, err)
	}
	ch := instanceChanges(t, rt, runtype.Owner{}, res.Instance.SessionID)
	if len(ch) != 1 || ch[0].ChangedBy != "api" || ch[0].RunID != "" || strings.Join(ch[0].Keys, ",") != "status" {
		t.Errorf("state changes %+v, want one by the api", ch)
	}
}

// TestInstanceNamesPerTenant: one name in two tenants is two instances;
// a third tenant finds none; bad names and another agent are refused.
func TestInstanceNamesPerTenant(t *testing.T) {
	t.Parallel()
	rt := startTree(t, agentrt.Config{Agents: map[string]*agentrt.Agent{
		"case":  {Provider: stateCaller(""), State: caseState(1, "")},
		"other": {Provider: stateCaller(""), State: caseState(1, "")},
	}}).rt
	ctx := context.Background()
	a, b := runtype.Owner{TenantID: "acme"}, runtype.Owner{TenantID: "globex"}
	ra, _ := send(t, rt, &apitype.SendInstanceEventParams{Owner: a, Name: "case/4711", Agent: "case", Type: "opened"})
	rb, _ := send(t, rt, &apitype.SendInstanceEventParams{Owner: b, Name: "case/4711", Agent: "case", Type: "opened"})
	if ra.Instance.InstanceID == rb.Instance.InstanceID || ra.Instance.SessionID == rb.Instance.SessionID {
		t.Errorf("two tenants share an instance: %+v and %+v", ra.Instance, rb.Instance)
	}
	if _, err := rt.SetInstanceState(ctx, &apitype.SetInstanceStateParams{Owner: a, Name: "case/4711", State: json.RawMessage(`{"status":"closed"}`)}); err != nil {
		t.Fatal(err)
	}
	if st, err := rt.GetInstanceState(ctx, &apitype.GetInstanceParams{Owner: b, Name: "case/4711"}); err != nil || string(st.State) != `{"status":"new"}` {
		t.Errorf("the other tenant's state: %+v, %v", st, err)
	}
	if _, err := rt.GetInstance(ctx, &apitype.GetInstanceParams{Owner: runtype.Owner{TenantID: "initech"}, Name: "case/4711"}); !errors.Is(err, apitype.ErrNotFound) {
		t.Errorf("a third tenant's GetInstance: %v, want not found", err)
	}
	list, err := rt.ListInstances(ctx, &apitype.ListInstancesParams{Owner: a})
	if err != nil || len(list.Instances) != 1 || list.Instances[0].InstanceID != ra.Instance.InstanceID {
		t.Errorf("ListInstances(acme): %+v, %v", list, err)
	}
	var inv *apitype.InvalidError
	for _, name := range []string{"", "/case", "case/", "a/../b", "case 1", strings.Repeat("x", 201)} {
		if _, err := rt.SendInstanceEvent(ctx, &apitype.SendInstanceEventParams{Owner: a, Name: name, Agent: "case", Type: "x"}); !errors.As(err, &inv) {
			t.Errorf("name %q: %v, want invalid", name, err)
		}
	}
	if _, err := rt.SendInstanceEvent(ctx, &apitype.SendInstanceEventParams{Owner: a, Name: "case/4711", Agent: "other", Type: "x"}); !errors.As(err, &inv) || inv.Field != "agent" {
		t.Errorf("a send naming another agent: %v, want invalid agent", err)
	}
	if _, err := rt.SendInstanceEvent(ctx, &apitype.SendInstanceEventParams{Owner: a, Name: "case/new", Type: "x"}); !errors.Is(err, apitype.ErrNotFound) {
		t.Errorf("a first send without an agent: %v, want not found", err)
	}
}

// TestInstanceMigrationRunsOnce: raising the agent's state version
// between two runtimes on one data dir migrates the instance's state on
// its next turn, once, recorded; the turn sees the migrated state. The
// migrate tool is a Go function tool standing in for a command tool.
func TestInstanceMigrationRunsOnce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rt1 := startTree(t, agentrt.Config{DataDir: dir, Agents: map[string]*agentrt.Agent{
		"case": {Provider: stateCaller(""), State: caseState(1, "")},
	}}).rt
	res, _ := send(t, rt1, &apitype.SendInstanceEventParams{Name: "case/9", Agent: "case", Type: "opened"})
	if err := rt1.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}

	var calls atomic.Int32
	type migIn struct {
		From  int            `json:"from"`
		To    int            `json:"to"`
		State map[string]any `json:"state"`
	}
	migrate := tool.Func("migrate_case", "Migrates a case's state.", tool.Annotations{}, func(_ context.Context, _ *tool.Call, in migIn) (map[string]any, error) {
		calls.Add(1)
		in.State["status"], in.State["priority"] = "open", in.From*10+in.To
		return in.State, nil
	})
	v2 := caseState(2, "migrate_case")
	v2.Schema = json.RawMessage(`{"type":"object","properties":{"status":{"enum":["open","waiting","closed"]},"priority":{"type":"integer"}},"required":["status","priority"]}`)
	v2.Initial = json.RawMessage(`{"status":"open","priority":0}`)
	rt2 := startTree(t, agentrt.Config{DataDir: dir, Tools: []tool.Tool{migrate}, Agents: map[string]*agentrt.Agent{
		"case": {Provider: stateCaller(""), State: v2, Tools: []string{"migrate_case"}},
	}}).rt
	_, turn := send(t, rt2, &apitype.SendInstanceEventParams{Name: "case/9", Type: "reminder"})
	_, turn2 := send(t, rt2, &apitype.SendInstanceEventParams{Name: "case/9", Type: "reminder"})
	if n := calls.Load(); n != 1 {
		t.Errorf("the migration ran %d times, want once", n)
	}
	for _, tu := range []*runtype.Turn{turn, turn2} {
		if tu.Status != runtype.StatusCompleted || !strings.Contains(tu.Result, `schemaVersion="2"`) || !strings.Contains(tu.Result, `"priority":12`) {
			t.Errorf("turn %s (%s) did not see the migrated state:\n%s", tu.ID, tu.Status, tu.Result)
		}
	}
	ch := instanceChanges(t, rt2, runtype.Owner{}, res.Instance.SessionID)
	if len(ch) != 1 || ch[0].ChangedBy != "migration" || ch[0].FromSchemaVersion != 1 || ch[0].SchemaVersion != 2 {
		t.Errorf("state changes %+v, want one migration from 1 to 2", ch)
	}
}

// TestInstanceScheduleWakesIt: a schedule the instance owns fires as a
// turn on the instance's session main thread, which sees the state.
func TestInstanceScheduleWakesIt(t *testing.T) {
	t.Parallel()
	b := startSched(t, time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC), agentrt.Config{Agents: map[string]*agentrt.Agent{
		"case":  {Provider: stateCaller(""), State: caseState(1, "")},
		"other": {Provider: stateCaller(""), State: caseState(1, "")},
	}})
	ctx := context.Background()
	res, first := send(t, b.rt, &apitype.SendInstanceEventParams{Name: "case/77", Agent: "case", Type: "opened"})
	if _, err := b.rt.CreateSchedule(ctx, &apitype.CreateScheduleParams{ScheduleSpec: apitype.ScheduleSpec{
		Agent: "other", Instance: "case/77", Kind: "once", At: "2026-06-01T13:00:00Z", Input: "x"}}); err == nil {
		t.Error("a schedule of another agent for the instance was accepted")
	}
	if _, err := b.rt.CreateSchedule(ctx, &apitype.CreateScheduleParams{ScheduleSpec: apitype.ScheduleSpec{
		Agent: "case", Instance: "case/nope", Kind: "once", At: "2026-06-01T13:00:00Z", Input: "x"}}); !errors.Is(err, apitype.ErrNotFound) {
		t.Errorf("a schedule for no instance: %v, want not found", err)
	}
	s := b.create(t, apitype.ScheduleSpec{Agent: "case", Instance: "case/77", Kind: "once", At: "2026-06-01T13:00:00Z", Input: "follow up on the case"})
	if s.SessionID != res.Instance.SessionID {
		t.Fatalf("the schedule runs in session %s, want the instance's %s", s.SessionID, res.Instance.SessionID)
	}
	b.advance(time.Hour)
	fs := b.fires(t, s, "the follow-up to complete", func(fs []apitype.FireRead) bool { return count(fs, runtype.FireCompleted) == 1 })
	turn, err := b.rt.WaitTurn(ctx, runtype.Owner{}, fs[0].TurnID)
	if err != nil {
		t.Fatal(err)
	}
	if turn.SessionID != res.Instance.SessionID || turn.ThreadID != first.ThreadID {
		t.Errorf("the fire ran on %s/%s, want the instance's main thread %s/%s", turn.SessionID, turn.ThreadID, res.Instance.SessionID, first.ThreadID)
	}
	if !strings.Contains(turn.Result, "follow up on the case") || !strings.Contains(turn.Result, `<instance name="case/77"`) {
		t.Errorf("the fire's turn did not see its input and the state:\n%s", turn.Result)
	}
}
