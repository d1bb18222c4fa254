package configure_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/configure"
)

// testSecret is a valid webhook signing secret (a 32-byte key).
const testSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw1A9ydZ3U3Ks="

// scheduleFile writes an agentrt.yaml declaring agent "a", with a
// command tool "fetch", a webhook "digest" reading its secret from env,
// and the given schedules section; it returns the file's path.
func scheduleFile(t *testing.T, dir, env, schedules string) string {
	t.Helper()
	files := map[string]string{
		"s.replay.yaml": "responses: [{text: hi}]\n",
		"fetch.sh":      "#!/bin/sh\necho '{}'\n",
		"agentrt.yaml": "agents:\n  a:\n    model: {provider: replay, script: s.replay.yaml}\n    tools: [fetch]\n" +
			"tools:\n  fetch:\n    input_schema: {type: object, properties: {since: {type: string}}}\n    command: [./fetch.sh]\n" +
			"webhooks:\n  digest:\n    url: http://127.0.0.1:8089/digest\n    secret_env: " + env + "\n    allow_private: true\n    max_attempts: 4\n    timeout: 5s\n" +
			schedules,
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "agentrt.yaml")
}

// TestSchedulesFromFile: the webhooks and schedules sections reach the
// runtime config, the secret read from the webhook's secret_env, the
// kind set by which of cron, every and at the schedule gives.
func TestSchedulesFromFile(t *testing.T) {
	t.Setenv("AGENTRT_TEST_DIGEST_SECRET", testSecret)
	path := scheduleFile(t, t.TempDir(), "AGENTRT_TEST_DIGEST_SECRET", `schedules:
  - name: nightly
    agent: a
    cron: "0 7 * * *"
    time_zone: Europe/Berlin
    input: "Digest for {{.Params.team}} at {{.FireTime}}"
    params: {team: support}
    input_schema: {properties: {team: {type: string}}}
    model: default
    tools: [fetch]
    inactivity_timeout: 10m
    overlap: skip
    catchup_window: 1h
    pause_after_failures: 3
    pre_run: {tool: fetch, input: {since: 24h}}
    webhook: digest
  - {name: tick, agent: a, every: 90m, start: "2026-05-01T12:00:00+02:00", input: tick}
  - {name: once, agent: a, at: "2026-12-24T18:00:00Z", input: ho}
`)
	cfg, _, err := configure.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	wantHooks := map[string]agentrt.Webhook{
		"digest": {URL: "http://127.0.0.1:8089/digest", Secret: testSecret, AllowPrivate: true, MaxAttempts: 4, Timeout: 5 * time.Second},
	}
	if diff := cmp.Diff(wantHooks, cfg.Webhooks); diff != "" {
		t.Errorf("Webhooks mismatch (-want +got):\n%s", diff)
	}
	want := []apitype.ScheduleSpec{
		{
			Name: "nightly", Agent: "a", Kind: "cron", Cron: "0 7 * * *", TimeZone: "Europe/Berlin",
			Input: "Digest for {{.Params.team}} at {{.FireTime}}", Params: json.RawMessage(`{"team":"support"}`),
			InputSchema: json.RawMessage(`{"type":"object","properties":{"team":{"type":"string"}}}`),
			Model:       "default", Tools: []string{"fetch"}, InactivityTimeout: "10m",
			Overlap: "skip", CatchupWindow: "1h", PauseAfterFailures: 3,
			PreRun: &apitype.PreRunSpec{Tool: "fetch", Input: json.RawMessage(`{"since":"24h"}`)}, Webhook: "digest",
		},
		{Name: "tick", Agent: "a", Kind: "interval", Every: "1h30m", Start: "2026-05-01T10:00:00Z", Input: "tick"},
		{Name: "once", Agent: "a", Kind: "once", At: "2026-12-24T18:00:00Z", Input: "ho"},
	}
	if diff := cmp.Diff(want, cfg.Schedules); diff != "" {
		t.Errorf("Schedules mismatch (-want +got):\n%s", diff)
	}
}

// TestWebhookSecretEnv: a webhook whose secret_env is unset, empty or
// holds no webhook secret is an error naming the webhook and the
// variable, and never the value.
func TestWebhookSecretEnv(t *testing.T) {
	const env = "AGENTRT_TEST_WEBHOOK_SECRET"
	for _, tt := range []struct {
		name, value string
		set         bool
		want        string
	}{
		{name: "Unset", want: "webhook digest: environment variable " + env + " (its secret_env) is not set"},
		{name: "Empty", set: true, want: "webhook digest: environment variable " + env + " (its secret_env) is not set"},
		{name: "NotASecret", set: true, value: "hunter2-hunter2", want: "webhook digest: environment variable " + env + ` (its secret_env): invalid webhook secret: it must start with "whsec_"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.set {
				t.Setenv(env, tt.value)
			} else {
				t.Setenv(env, "x") // restored after the test
				os.Unsetenv(env)
			}
			_, _, err := configure.Load(scheduleFile(t, t.TempDir(), env, ""))
			if err == nil || err.Error() != tt.want {
				t.Fatalf("Load: %v\nwant: %s", err, tt.want)
			}
			if tt.value != "" && strings.Contains(err.Error(), tt.value) {
				t.Errorf("the error shows the variable's value: %v", err)
			}
		})
	}
}

// TestDeclaredSchedulesStart: a runtime started from a file with a
// schedule has it; started again on the same data directory with the
// schedule's cron changed, it has the same one schedule with the new
// cron.
func TestDeclaredSchedulesStart(t *testing.T) {
	t.Setenv("AGENTRT_TEST_START_SECRET", testSecret)
	dir := t.TempDir()
	section := func(cron string) string {
		return "schedules:\n  - {name: nightly-digest, agent: a, cron: \"" + cron + "\", time_zone: Europe/Berlin, input: \"digest {{.FireTime}}\", webhook: digest}\n"
	}
	list := func(path string) []apitype.ScheduleRead {
		t.Helper()
		cfg, _, err := configure.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		rt, err := agentrt.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := rt.Stop(context.Background()); err != nil {
				t.Errorf("Stop: %v", err)
			}
		}()
		if err := rt.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		page, err := rt.ListSchedules(context.Background(), &apitype.ListSchedulesParams{})
		if err != nil {
			t.Fatal(err)
		}
		return page.Schedules
	}
	first := list(scheduleFile(t, dir, "AGENTRT_TEST_START_SECRET", section("0 7 * * *")))
	if len(first) != 1 || first[0].Name != "nightly-digest" || first[0].Cron != "0 7 * * *" || first[0].Kind != "cron" ||
		first[0].TimeZone != "Europe/Berlin" || first[0].Webhook != "digest" || first[0].NextFireAt == nil {
		t.Fatalf("schedules after the first start = %+v, want nightly-digest at 0 7 * * * with its next fire", first)
	}
	second := list(scheduleFile(t, dir, "AGENTRT_TEST_START_SECRET", section("30 6 * * 1-5")))
	if len(second) != 1 || second[0].ScheduleID != first[0].ScheduleID || second[0].Cron != "30 6 * * 1-5" {
		t.Fatalf("schedules after the second start = %+v, want %s alone with cron 30 6 * * 1-5", second, first[0].ScheduleID)
	}
}

// TestDeclaredScheduleRefused: what only the runtime checks of a declared
// schedule (here its input template) stops the start with an error naming
// the schedule.
func TestDeclaredScheduleRefused(t *testing.T) {
	// A Start that fails here leaves the action sweep and the store
	// running, and Stop then waits forever (agentrt.go: Start returns
	// declareSchedules' error after stateRunning, with dispatchDone and
	// schedulerDone never closed).
	t.Skip("TODO(i20): agentrt.Start leaks when a declared schedule is refused; unskip once it cleans up")
	t.Setenv("AGENTRT_TEST_START_SECRET", testSecret)
	cfg, _, err := configure.Load(scheduleFile(t, t.TempDir(), "AGENTRT_TEST_START_SECRET",
		"schedules:\n  - {name: broken, agent: a, every: 1h, input: \"{{.FireTime\"}\n"))
	if err != nil {
		t.Fatal(err)
	}
	rt, err := agentrt.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	err = rt.Start(context.Background())
	if err == nil {
		rt.Stop(context.Background())
	}
	if err == nil || !strings.Contains(err.Error(), "schedule broken: ") || !strings.Contains(err.Error(), "input") {
		t.Errorf("starting with a broken template: %v, want an error naming schedule broken and its input", err)
	}
}
