package config

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// scheduleBase is an agent "a" with a command tool "run", another
// command tool "other", and a webhook "digest"; tests append a section
// from line 14.
const scheduleBase = `agents:
  a:
    model: {provider: replay, script: support.replay.yaml}
    tools: [run]
tools:
  run:
    input_schema: {type: object}
    command: [tools/run.sh]
  other:
    input_schema: {type: object}
    command: [tools/run.sh]
webhooks:
  digest: {url: "http://127.0.0.1:8089/digest", secret_env: DIGEST_SECRET, allow_private: true}
`

func TestParseScheduleValues(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, section string
		want          []*Schedule
	}{
		{name: "None"},
		{name: "Empty", section: "schedules: []\n"},
		{
			name: "Everything",
			section: `schedules:
  - name: nightly-digest
    agent: a
    cron: "0 7 * * *"
    time_zone: Europe/Berlin
    start: 2026-12-01T00:00:00+01:00
    input: "Digest for {{.Params.team}} at {{.FireTime}}"
    params: {team: support, days: 1}
    input_schema:
      properties: {team: {type: string}}
      required: [team]
    model: default
    tools: [run, read_file]
    inactivity_timeout: 10m
    overlap: buffer_one
    catchup_window: 1h
    pause_after_failures: 3
    pre_run: {tool: run, input: {since: 24h}}
    webhook: digest
`,
			want: []*Schedule{{
				Name: "nightly-digest", Agent: "a", Kind: ScheduleCron, Cron: "0 7 * * *", TimeZone: "Europe/Berlin",
				Start: time.Date(2026, 11, 30, 23, 0, 0, 0, time.UTC),
				Input: "Digest for {{.Params.team}} at {{.FireTime}}", Params: json.RawMessage(`{"team":"support","days":1}`),
				InputSchema: json.RawMessage(`{"type":"object","properties":{"team":{"type":"string"}},"required":["team"]}`),
				Model:       "default", Tools: []string{"run", "read_file"}, InactivityTimeout: 10 * time.Minute,
				Overlap: "buffer_one", CatchupWindow: time.Hour, PauseAfterFailures: 3,
				PreRun: &PreRun{Tool: "run", Input: json.RawMessage(`{"since":"24h"}`)}, Webhook: "digest",
			}},
		},
		{
			name: "Kinds",
			section: `schedules:
  - {name: hourly, agent: a, every: 90m, start: "2026-05-01T10:00:00Z", input: tick}
  - {name: once, agent: a, at: "2026-12-24T18:00:00Z", input: "ho ho", pre_run: {tool: run}}
  - {name: daily, agent: a, cron: "@daily", input: x, pause_after_failures: 0}
`,
			want: []*Schedule{
				{Name: "hourly", Agent: "a", Kind: ScheduleInterval, Every: 90 * time.Minute, Start: time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC), Input: "tick"},
				{Name: "once", Agent: "a", Kind: ScheduleOnce, At: time.Date(2026, 12, 24, 18, 0, 0, 0, time.UTC), Input: "ho ho", PreRun: &PreRun{Tool: "run"}},
				{Name: "daily", Agent: "a", Kind: ScheduleCron, Cron: "@daily", Input: "x"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := fixture(t)
			f, err := Parse("agentrt.yaml", []byte(scheduleBase+tt.section), dir, Options{Builtins: builtins})
			if err != nil {
				t.Fatalf("Parse:\n%v", err)
			}
			if diff := cmp.Diff(tt.want, f.Schedules); diff != "" {
				t.Errorf("Schedules mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseWebhookValues(t *testing.T) {
	t.Parallel()
	dir := fixture(t)
	src := okAgent + `webhooks:
  digest:
    url: https://hooks.example.com/digest
    secret_env: DIGEST_SECRET
    max_attempts: 5
    timeout: 30s
  local: {url: "http://127.0.0.1:8089/x", secret_env: LOCAL_SECRET, allow_private: true}
`
	f, err := Parse("agentrt.yaml", []byte(src), dir, Options{Builtins: builtins})
	if err != nil {
		t.Fatalf("Parse:\n%v", err)
	}
	want := map[string]*Webhook{
		"digest": {Name: "digest", URL: "https://hooks.example.com/digest", SecretEnv: "DIGEST_SECRET", MaxAttempts: 5, Timeout: 30 * time.Second},
		"local":  {Name: "local", URL: "http://127.0.0.1:8089/x", SecretEnv: "LOCAL_SECRET", AllowPrivate: true},
	}
	if diff := cmp.Diff(want, f.Webhooks); diff != "" {
		t.Errorf("Webhooks mismatch (-want +got):\n%s", diff)
	}
	// A file without the section has none.
	f, err = Parse("agentrt.yaml", []byte(okAgent), dir, Options{Builtins: builtins})
	if err != nil {
		t.Fatal(err)
	}
	if f.Webhooks != nil || f.Schedules != nil {
		t.Errorf("Webhooks = %v, Schedules = %v; want none", f.Webhooks, f.Schedules)
	}
}

func TestParseWebhookErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, section string // from line 4
		want          []string
	}{
		{
			name:    "NotMapping",
			section: "webhooks: [digest]\n",
			want:    []string{`agentrt.yaml:4:11: webhooks must be a mapping, got a list`},
		},
		{
			name:    "Empty",
			section: "webhooks:\n  digest:\n",
			want:    []string{`agentrt.yaml:5:3: webhook "digest" is empty: it needs url and secret_env`},
		},
		{
			name:    "Required",
			section: "webhooks:\n  digest: {allow_private: true}\n",
			want: []string{
				`agentrt.yaml:5:3: url is required in webhook "digest"`,
				`agentrt.yaml:5:3: secret_env is required in webhook "digest": the environment variable holding its whsec_… signing secret`,
			},
		},
		{
			name:    "BadName",
			section: "webhooks:\n  my hook: {url: \"https://example.com/x\", secret_env: S}\n",
			want:    []string{`agentrt.yaml:5:3: invalid webhook name "my hook": use 1 to 64 letters, digits, '_' or '-'`},
		},
		{
			name: "BadValues",
			section: `webhooks:
  digest:
    url: ftp://example.com/x
    secret_env: 1SECRET
    max_attempts: 0
    timeout: soon
    allow_private: yes
    retries: 3
`,
			want: []string{
				`agentrt.yaml:6:10: url in webhook "digest": invalid webhook url: the scheme is "ftp", want http or https`,
				`agentrt.yaml:7:17: secret_env in webhook "digest" must name an environment variable (letters, digits and '_', not starting with a digit), got "1SECRET"`,
				`agentrt.yaml:8:19: max_attempts in webhook "digest" must be between 1 and 50, got 0`,
				`agentrt.yaml:9:14: timeout in webhook "digest" must be a duration such as 10s or 1m30s, got string "soon"`,
				`agentrt.yaml:10:20: allow_private in webhook "digest" must be true or false, got string "yes"`,
				`agentrt.yaml:11:5: unknown key "retries" in webhook "digest"`,
			},
		},
		{
			name:    "Private",
			section: "webhooks:\n  digest: {url: \"http://127.0.0.1:8089/digest\", secret_env: S}\n",
			want:    []string{`agentrt.yaml:5:17: url in webhook "digest": webhook address refused: 127.0.0.1 is a loopback address (private addresses are not allowed); set allow_private: true to deliver there`},
		},
		{
			name:    "Credentials",
			section: "webhooks:\n  digest: {url: \"https://u:p@example.com/x\", secret_env: S}\n",
			want:    []string{`agentrt.yaml:5:17: url in webhook "digest": invalid webhook url: the url must not carry a user name or password (use a header)`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := fixture(t)
			_, err := Parse("agentrt.yaml", []byte(okAgent+tt.section), dir, Options{Builtins: builtins})
			if err == nil {
				t.Fatal("Parse: no error")
			}
			got := errorLines(t, err, dir)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("errors mismatch (-want +got):\n%s\ngot:\n%s", diff, "\t`"+strings.Join(got, "`,\n\t`")+"`,")
			}
		})
	}
}

func TestParseScheduleErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, section string // the schedules section, from line 14
		want          []string
	}{
		{
			name:    "NotList",
			section: "schedules: {nightly: {agent: a}}\n",
			want:    []string{`agentrt.yaml:14:12: schedules must be a list of schedules, each with name, agent, input and one of cron, every or at, got a mapping`},
		},
		{
			name:    "ItemNotMapping",
			section: "schedules: [nightly]\n",
			want:    []string{`agentrt.yaml:14:13: schedules[0] must be a mapping with name, agent, input and one of cron, every or at, got string "nightly"`},
		},
		{
			name:    "Required",
			section: "schedules:\n  - {overlap: skip}\n",
			want: []string{
				`agentrt.yaml:15:5: name is required in schedules[0]: it identifies the schedule across starts`,
				`agentrt.yaml:15:5: agent is required in schedules[0]: the agent that runs each fire`,
				`agentrt.yaml:15:5: input is required in schedules[0]: the template of each fire's input`,
				`agentrt.yaml:15:5: schedules[0] needs one of cron, every or at: when it fires`,
			},
		},
		{
			name:    "SeveralKinds",
			section: "schedules:\n  - name: n\n    agent: a\n    input: x\n    every: 1h\n    cron: \"0 7 * * *\"\n    at: \"2026-12-24T18:00:00Z\"\n",
			want:    []string{`agentrt.yaml:19:5: schedule "n" has both every and cron; set one of cron, every or at`},
		},
		{
			name:    "EmptyInput",
			section: "schedules:\n  - {name: n, agent: a, input: \"\", every: 1h}\n",
			want:    []string{`agentrt.yaml:15:32: input in schedule "n" must not be empty: it is each fire's input`},
		},
		{
			name:    "DuplicateName",
			section: "schedules:\n  - {name: n, agent: a, input: x, every: 1h}\n  - {name: n, agent: a, input: y, every: 2h}\n",
			want:    []string{`agentrt.yaml:16:12: schedule name "n" is used twice (first at line 15); names identify schedules across starts`},
		},
		{
			name: "UnknownNames",
			section: `schedules:
  - name: n
    agent: b
    input: x
    every: 1h
    webhook: digst
    pre_run: {tool: lookup}
`,
			want: []string{
				`agentrt.yaml:16:12: agent "b" in schedule "n" is not an agent under agents`,
				`agentrt.yaml:19:14: webhook "digst" in schedule "n" is not a webhook under webhooks; did you mean digest?`,
				`agentrt.yaml:20:21: tool "lookup" in pre_run in schedule "n" is not a tool declared under tools: a pre-run script is a command tool`,
			},
		},
		{
			name:    "AgentLacks",
			section: "schedules:\n  - {name: n, agent: a, input: x, every: 1h, model: fast, pre_run: {tool: other}}\n",
			want: []string{
				`agentrt.yaml:15:53: model "fast" in schedule "n" is not a model of agent "a" (it has default)`,
				`agentrt.yaml:15:75: tool "other" in pre_run in schedule "n" is not in the tools of agent "a"; add it there`,
			},
		},
		{
			name: "BadValues",
			section: `schedules:
  - name: n
    agent: a
    input: [x]
    every: 1 hour
    start: tomorrow
    inactivity_timeout: -1s
    overlap: queue
    catchup_window: 200h
    pause_after_failures: 1001
    tools: [run, run, "a b"]
    params: [team]
    input_schema: {type: string}
    pre_run: {input: {}, tol: run}
    color: blue
`,
			want: []string{
				`agentrt.yaml:17:12: input in schedule "n" must be a string, got a list`,
				`agentrt.yaml:18:12: every in schedule "n" must be a duration such as 10s or 1m30s, got string "1 hour"`,
				`agentrt.yaml:19:12: start in schedule "n" must be an RFC 3339 time such as 2026-12-01T09:00:00Z, got string "tomorrow"`,
				`agentrt.yaml:20:25: inactivity_timeout in schedule "n" must be positive, got string "-1s"`,
				`agentrt.yaml:21:14: overlap in schedule "n" must be one of skip, buffer_one, buffer_all, cancel_other, allow_all, got "queue"`,
				`agentrt.yaml:22:21: catchup_window in schedule "n" must be at most 168h (7 days), got string "200h"`,
				`agentrt.yaml:23:27: pause_after_failures in schedule "n" must be between 0 and 1000, got 1001`,
				`agentrt.yaml:24:18: tool "run" is listed twice in tools in schedule "n"`,
				`agentrt.yaml:24:23: invalid tool name "a b" in tools in schedule "n": use 1 to 64 letters, digits, '_' or '-'`,
				`agentrt.yaml:25:13: params in schedule "n" must be a mapping, got a list`,
				`agentrt.yaml:26:26: input_schema in schedule "n" must have type: object, got string "string"`,
				`agentrt.yaml:27:5: tool is required in pre_run in schedule "n": a command tool of the schedule's agent`,
				`agentrt.yaml:27:26: unknown key "tol" in pre_run in schedule "n"; did you mean tool?`,
				`agentrt.yaml:28:5: unknown key "color" in schedule "n"`,
			},
		},
		{
			// What the runtime would refuse about when a schedule fires is
			// refused here, at the key it is about.
			name: "When",
			section: `schedules:
  - {name: c3, agent: a, input: x, cron: "0 7 *"}
  - {name: tz, agent: a, input: x, cron: "0 7 * * *", time_zone: Mars/Base}
  - {name: never, agent: a, input: x, cron: "0 0 31 4 *"}
  - {name: fast, agent: a, input: x, every: 500ms}
  - {name: late, agent: a, input: x, at: "2026-01-01T00:00:00Z", start: "2026-02-01T00:00:00Z"}
  - {name: local, agent: a, input: x, every: 1h, time_zone: Local}
`,
			want: []string{
				`agentrt.yaml:15:42: cron in schedule "c3": expected 5 fields, got 3`,
				`agentrt.yaml:16:66: time_zone in schedule "tz": unknown time zone "Mars/Base"`,
				`agentrt.yaml:17:45: cron in schedule "never": "0 0 31 4 *" never fires`,
				`agentrt.yaml:18:45: every in schedule "fast": must be at least 1s, got 500ms`,
				`agentrt.yaml:19:42: at in schedule "late": 2026-01-01T00:00:00Z is before start 2026-02-01T00:00:00Z`,
				`agentrt.yaml:20:61: time_zone in schedule "local": "Local" depends on the machine: name an IANA zone such as "Europe/Berlin"`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := fixture(t)
			_, err := Parse("agentrt.yaml", []byte(scheduleBase+tt.section), dir, Options{Builtins: builtins})
			if err == nil {
				t.Fatal("Parse: no error")
			}
			got := errorLines(t, err, dir)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("errors mismatch (-want +got):\n%s\ngot:\n%s", diff, "\t`"+strings.Join(got, "`,\n\t`")+"`,")
			}
		})
	}
}
