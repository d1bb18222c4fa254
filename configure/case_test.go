package configure_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/configure"
	"github.com/agentrt/agentrt/runtype"
)

// TestCaseExample loads examples/support/case.yaml (a copy, so its data
// directory lands in the test's): the case agent has its state schema. A
// runtime started from it handles an email to case/4711 offline: the
// replay script opens the case and notes the email (stateVersion 2). A
// follow-up schedule of the case, triggered, runs on the case's session
// and thread, where the script marks the case waiting.
func TestCaseExample(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, name := range []string{"case.yaml", "case.replay.yaml"} {
		b, err := os.ReadFile(filepath.Join("../examples/support", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg, _, err := configure.Load(filepath.Join(dir, "case.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	st := cfg.Agents["case"].State
	if st == nil || st.Version != 1 || string(st.Initial) != `{"status":"new","notes":[]}` || st.Migrate != "" {
		t.Fatalf("case's State = %+v, want version 1 starting at status new", st)
	}

	rt, err := agentrt.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := rt.Stop(context.Background()); err != nil {
			t.Errorf("Stop: %v", err)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	wait := func(turnID string) *runtype.Turn {
		t.Helper()
		turn, err := rt.WaitTurn(ctx, runtype.Owner{}, turnID)
		if err != nil {
			t.Fatal(err)
		}
		if turn.Status != runtype.StatusCompleted {
			t.Fatalf("turn %s is %s (%s), want completed", turn.ID, turn.Status, turn.StatusReason)
		}
		return turn
	}
	state := func(wantVersion int64) map[string]any {
		t.Helper()
		got, err := rt.GetInstanceState(ctx, &apitype.GetInstanceParams{Name: "case/4711"})
		if err != nil {
			t.Fatal(err)
		}
		if got.StateVersion != wantVersion || got.SchemaVersion != 1 {
			t.Errorf("case/4711 is at stateVersion %d, schemaVersion %d; want %d, 1", got.StateVersion, got.SchemaVersion, wantVersion)
		}
		var m map[string]any
		if err := json.Unmarshal(got.State, &m); err != nil {
			t.Fatalf("state %s: %v", got.State, err)
		}
		return m
	}
	const note = "ada@example.com: order 1042 never arrived; asked the carrier to trace it."

	sent, err := rt.SendInstanceEvent(ctx, &apitype.SendInstanceEventParams{
		Name: "case/4711", Agent: "case", Type: "email.received",
		Data: json.RawMessage(`{"from":"ada@example.com","subject":"Order 1042 never arrived"}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	first := wait(sent.TurnID)
	if first.Result != "Case 4711 is open: the carrier is tracing order 1042." {
		t.Errorf("the event's turn answered %q", first.Result)
	}
	want := map[string]any{"status": "open", "notes": []any{note}}
	if diff := cmp.Diff(want, state(2)); diff != "" {
		t.Errorf("state after the email (-want +got):\n%s", diff)
	}

	sched, err := rt.CreateSchedule(ctx, &apitype.CreateScheduleParams{ScheduleSpec: apitype.ScheduleSpec{
		Name: "case-4711-follow-up", Agent: "case", Instance: "case/4711", Kind: "interval", Every: "24h",
		Input: "Follow up ({{.Name}}, {{.FireTime}}): has the customer answered?",
	}})
	if err != nil {
		t.Fatal(err)
	}
	if sched.SessionID != sent.Instance.SessionID {
		t.Errorf("the schedule's session is %s, want the case's %s", sched.SessionID, sent.Instance.SessionID)
	}
	fire, err := rt.TriggerSchedule(ctx, &apitype.TriggerScheduleParams{ScheduleID: sched.ScheduleID})
	if err != nil {
		t.Fatal(err)
	}
	if fire.TurnID == "" {
		t.Fatalf("fire = %+v, want it started", fire)
	}
	followUp := wait(fire.TurnID)
	if followUp.SessionID != first.SessionID || followUp.ThreadID != first.ThreadID {
		t.Errorf("the fire ran on %s/%s, want the case's %s/%s", followUp.SessionID, followUp.ThreadID, first.SessionID, first.ThreadID)
	}
	want = map[string]any{
		"status": "waiting", "follow_up_at": "2026-12-03T09:00:00Z",
		"notes": []any{note, "Follow-up: asked ada whether the parcel has arrived since."},
	}
	if diff := cmp.Diff(want, state(3)); diff != "" {
		t.Errorf("state after the follow-up (-want +got):\n%s", diff)
	}
}
