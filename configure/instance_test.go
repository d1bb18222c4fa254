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

// instanceFile writes an agentrt.yaml with the agent "case", whose state
// has a migrate tool (and which lists instance_state, as it may),
// followed by extra (a schedules section, say); it returns the file's
// path.
func instanceFile(t *testing.T, dir, extra string) string {
	t.Helper()
	files := map[string]string{
		"s.replay.yaml": "responses: [{text: hi}, {text: again}]\n",
		"migrate.sh":    "#!/bin/sh\necho '{}'\n",
		"agentrt.yaml": "agents:\n  case:\n    model: {provider: replay, script: s.replay.yaml}\n    tools: [migrate, instance_state]\n" +
			"    state:\n      version: 2\n      schema: {type: object, properties: {status: {enum: [new, open]}}}\n" +
			"      initial: {status: new}\n      migrate: migrate\n" +
			"tools:\n  migrate:\n    input_schema: {type: object}\n    command: [./migrate.sh]\n" + extra,
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "agentrt.yaml")
}

// TestStateFromFile: an agent's state section becomes its StateSchema,
// and a schedule's instance its spec's Instance.
func TestStateFromFile(t *testing.T) {
	t.Parallel()
	cfg, _, err := configure.Load(instanceFile(t, t.TempDir(),
		"schedules:\n  - {name: follow-up, agent: case, instance: case/4711, every: 24h, input: x}\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := &agentrt.StateSchema{
		Version: 2,
		Schema:  json.RawMessage(`{"type":"object","properties":{"status":{"enum":["new","open"]}}}`),
		Initial: json.RawMessage(`{"status":"new"}`),
		Migrate: "migrate",
	}
	if diff := cmp.Diff(want, cfg.Agents["case"].State); diff != "" {
		t.Errorf("State mismatch (-want +got):\n%s", diff)
	}
	if len(cfg.Schedules) != 1 || cfg.Schedules[0].Instance != "case/4711" {
		t.Errorf("Schedules = %+v, want follow-up of instance case/4711", cfg.Schedules)
	}
}

// TestDeclaredInstanceSchedule: a declared schedule of an instance that
// does not exist makes the instance when the runtime starts (its agent's
// initial state); an event to it later finds the same instance, and the
// schedule runs on the instance's session.
func TestDeclaredInstanceSchedule(t *testing.T) {
	dir := t.TempDir()
	declared := "schedules:\n  - {name: follow-up, agent: case, instance: case/4711, every: 24h, input: \"Follow up on {{.Name}}\"}\n"
	start := func(extra string) (*agentrt.Runtime, error) {
		t.Helper()
		cfg, _, err := configure.Load(instanceFile(t, dir, extra))
		if err != nil {
			t.Fatal(err)
		}
		rt, err := agentrt.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := rt.Stop(context.Background()); err != nil {
				t.Errorf("Stop: %v", err)
			}
		})
		return rt, rt.Start(context.Background())
	}
	rt, err := start(declared)
	if err != nil {
		t.Fatalf("starting with the schedule of a new instance: %v", err)
	}
	ctx := context.Background()
	made, err := rt.GetInstance(ctx, &apitype.GetInstanceParams{Name: "case/4711"})
	if err != nil || made.Agent != "case" {
		t.Fatalf("the declared schedule's instance: %+v, %v", made, err)
	}
	if err := rt.Stop(ctx); err != nil {
		t.Fatal(err)
	}

	rt, err = start("")
	if err != nil {
		t.Fatal(err)
	}
	sent, err := rt.SendInstanceEvent(ctx, &apitype.SendInstanceEventParams{Name: "case/4711", Agent: "case", Type: "opened"})
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if _, err := rt.WaitTurn(wctx, runtype.Owner{}, sent.TurnID); err != nil {
		t.Fatal(err)
	}
	if err := rt.Stop(ctx); err != nil {
		t.Fatal(err)
	}

	rt, err = start(declared)
	if err != nil {
		t.Fatalf("starting once the instance exists: %v", err)
	}
	page, err := rt.ListSchedules(ctx, &apitype.ListSchedulesParams{Instance: "case/4711"})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Schedules) != 1 || page.Schedules[0].Name != "follow-up" || page.Schedules[0].Instance != "case/4711" {
		t.Fatalf("schedules of case/4711 = %+v, want follow-up", page.Schedules)
	}
	fire, err := rt.TriggerSchedule(ctx, &apitype.TriggerScheduleParams{ScheduleID: page.Schedules[0].ScheduleID})
	if err != nil {
		t.Fatal(err)
	}
	turn, err := rt.WaitTurn(wctx, runtype.Owner{}, fire.TurnID)
	if err != nil {
		t.Fatal(err)
	}
	if turn.SessionID != sent.Instance.SessionID || turn.Status != runtype.StatusCompleted {
		t.Errorf("the fire's turn ran on session %s, %s; want completed on the instance's %s", turn.SessionID, turn.Status, sent.Instance.SessionID)
	}
}
