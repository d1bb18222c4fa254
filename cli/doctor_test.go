package cli_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/cli"
	"github.com/agentrt/agentrt/internal/probetest"
	"github.com/agentrt/agentrt/internal/testenv"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/sandbox"
)

// TestDoctor: doctor reports each model's provider and key source without
// printing a key, and where each agent would be routed; it exits 1 when an
// agent has no usable model and 2 when the file does not load.
func TestDoctor(t *testing.T) {
	t.Parallel()
	const secret = "sk-inline-never-printed-0042"
	b := setup(t)
	cfg := filepath.Join(b.dir, "doctor.yaml")
	src := `models:
  inline-key: {provider: anthropic_messages, model: claude, api_key: ` + secret + `, price: {input: 3, output: 15}}
  no-key: {provider: openai_chat, model: gpt, api_key_env: AGENTRT_DOCTOR_TEST_UNSET_KEY}
  local: {provider: openai_compatible, model: qwen3, base_url: "http://localhost:11434/v1"}
agents:
  fine: {models: [no-key, inline-key, local], profile: {prefer: cost}}
  stuck: {model: no-key}
`
	if err := os.WriteFile(cfg, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	r := run(t, "", "doctor", "--config", cfg)
	if r.code != cli.ExitFailed {
		t.Errorf("exit %d, want %d (agent stuck has no usable model)\n%s%s", r.code, cli.ExitFailed, r.stdout, r.stderr)
	}
	matchLines(t, r.stdout, []string{
		"config " + cfg,
		"",
		"models",
		"  ✔ inline-key         anthropic_messages/claude                key in the config file · priced · tools,streaming",
		"  ✔ local              openai_compatible/qwen3                  no key needed · no price · tools,streaming",
		"  ✘ no-key             openai_chat/gpt                          ✘ $AGENTRT_DOCTOR_TEST_UNSET_KEY is not set · no price · tools,streaming",
		"",
		"agents",
		"  ✔ fine               → local (then inline-key)",
		"      excluded no-key: its API key is not set: the environment variable AGENTRT_DOCTOR_TEST_UNSET_KEY is empty",
		"  ✘ stuck              cannot be routed: no candidate meets the task profile: credentials",
		"      excluded no-key: its API key is not set: the environment variable AGENTRT_DOCTOR_TEST_UNSET_KEY is empty",
	})

	r = run(t, "", "doctor", "--config", cfg, "--json")
	if strings.Contains(r.stdout+r.stderr, secret) {
		t.Error("doctor printed the API key")
	}
	var rep cli.DoctorReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("--json output does not decode: %v\n%s", err, r.stdout)
	}
	if rep.OK || len(rep.Models) != 3 || len(rep.Agents) != 2 {
		t.Fatalf("report %+v", rep)
	}
	want := cli.DoctorModel{Key: "no-key", Provider: "openai_chat", Model: "gpt", KeySource: "env",
		KeyEnv: "AGENTRT_DOCTOR_TEST_UNSET_KEY", Caps: []string{"tools", "streaming"},
		Problem: "its API key is not set: the environment variable AGENTRT_DOCTOR_TEST_UNSET_KEY is empty"}
	if diff := cmp.Diff(want, rep.Models[2]); diff != "" {
		t.Errorf("model no-key (-want +got):\n%s", diff)
	}
	wantAgent := cli.DoctorAgent{Name: "fine", Candidates: []string{"no-key", "inline-key", "local"}, Selected: "local",
		Fallbacks: []string{"inline-key"},
		Excluded: []model.Exclusion{{Candidate: "no-key", Gap: "credentials",
			Reason: "its API key is not set: the environment variable AGENTRT_DOCTOR_TEST_UNSET_KEY is empty"}},
		Reason: "cheapest of 2 eligible candidates (local: $0/M input, $0/M output); excluded: no-key"}
	if diff := cmp.Diff(wantAgent, rep.Agents[0]); diff != "" {
		t.Errorf("agent fine (-want +got):\n%s", diff)
	}

	// Every shipped example loads; those needing no key are healthy.
	for _, name := range []string{"agentrt.yaml", "routing.yaml", "ollama.yaml"} {
		if r := run(t, "", "doctor", "--config", filepath.Join(b.dir, name)); r.code != cli.ExitOK {
			t.Errorf("doctor %s: exit %d\n%s%s", name, r.code, r.stdout, r.stderr)
		}
	}
	for _, name := range []string{"openai.yaml", "anthropic.yaml"} {
		if r := run(t, "", "doctor", "--config", filepath.Join(b.dir, name), "--json"); r.code == cli.ExitUsage {
			t.Errorf("doctor %s does not load: %s", name, r.stderr)
		}
	}

	if r := run(t, "", "doctor", "--config", filepath.Join(b.dir, "missing.yaml")); r.code != cli.ExitUsage {
		t.Errorf("doctor on a missing file: exit %d, want %d", r.code, cli.ExitUsage)
	}
}

// TestRunRoutingExample runs the offline routing example: the cheapest
// model is rate limited, the turn falls back, and every call is priced.
func TestRunRoutingExample(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := runOK(t, "", "run", "--config", filepath.Join(b.dir, "routing.yaml"), "--agent", "support", question)
	matchLines(t, r.stdout, []string{
		"request turn_{ID}  agent support  session ses_{ID}",
		"        route   bargain (replay/bargain-v1) · cheapest of 2 eligible candidates {ANY}",
		"        limit   rate limited by replay/bargain-v1, retry after 30s; fallback",
		"hop 1   model   failed (rate_limit): rate limit reached for requests per minute; falling back",
		"        route   bargain → steady (rate_limit)",
		"hop 1   model   steady replay/support-triage-v1 → tool_request: lookup_order · 412 in / 31 out tokens",
		`                "Let me look up order 1042."`,
		"        cost    $0.0017 (turn $0.0017)",
		"        policy  allow lookup_order (default: no_policy_configured)",
		"        sandbox workspace_write, network none ({ANY})",
		`        tool    lookup_order {ANY}`,
		"hop 2   model   steady replay/support-triage-v1 → tool_request: read_file · 538 in / 42 out tokens",
		`                "The order is 9 days past its promised date. Checking the support policy before deciding."`,
		"        cost    $0.0022 (turn $0.0039)",
		"        policy  allow read_file (default: no_policy_configured)",
		`        tool    read_file {ANY}`,
		"hop 3   model   steady replay/support-triage-v1 → tool_request: open_ticket · 801 in / 64 out tokens",
		`                "Policy: orders more than 7 days late get a high-priority ticket. Opening one."`,
		"        cost    $0.0034 (turn $0.0073)",
		"        policy  allow open_ticket (default: no_policy_configured)",
		"        sandbox workspace_write, network none ({ANY})",
		`        tool    open_ticket {ANY}`,
		"hop 4   model   steady replay/support-triage-v1 → complete: complete_task · 902 in / 58 out tokens",
		"        cost    $0.0036 (turn $0.0109)",
		"        policy  allow complete_task (default: no_policy_configured)",
		`        tool    complete_task {ANY}`,
		"✔ completed in {DUR} · 4 hops · 4 tool calls · 2653 in / 195 out tokens · $0.0109",
		"  result: {ANY}",
	})
}

// TestRunRoutingExampleBudget: the routing example's session budget lets
// two turns through; the third parks waiting for a raised limit (exit 3).
func TestRunRoutingExampleBudget(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cfg := filepath.Join(b.dir, "routing.yaml")
	for range 2 {
		runOK(t, "", "run", "--config", cfg, "--agent", "support", "--session", "budgeted", question)
	}
	r := run(t, "", "run", "--config", cfg, "--session", "budgeted", question)
	if r.code != cli.ExitParked {
		t.Fatalf("exit %d, want %d\n%s%s", r.code, cli.ExitParked, r.stdout, r.stderr)
	}
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	matchLines(t, strings.Join(lines[len(lines)-3:], "\n"), []string{
		"        budget  session budget would be exceeded (cost): $0.0218 of $0.0300; wait",
		"        runtime the next model call (about {ANY} tokens, ${ANY}) would exceed the cost budget of session budgeted {ANY}",
		"⏸ waiting_resource (quota_exceeded): the turn is parked until its budget is raised",
	})
	// A fourth turn would wait behind the parked one: refused, with why.
	r = run(t, "", "run", "--config", cfg, "--session", "budgeted", question)
	if r.code != cli.ExitParked || !strings.Contains(r.stderr, "waiting_resource, quota_exceeded") || r.stdout != "" {
		t.Errorf("run behind a parked turn: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}

// TestRunSandboxedExample runs examples/support/sandboxed.yaml: a shell
// call in the sandbox with a redacted account number, and a recursive
// delete the guard hook blocks.
func TestRunSandboxedExample(t *testing.T) {
	t.Parallel()
	if _, err := sandbox.New(sandbox.Options{}).Enforcer(); err != nil {
		testenv.Missing(t, "no sandbox can be enforced here: %v", err)
	}
	b := setup(t)
	r := runOK(t, "", "run", "--config", filepath.Join(b.dir, "sandboxed.yaml"), "--agent", "support", "How many tickets are open?")
	matchLines(t, r.stdout, []string{
		"request turn_{ID}  agent support  session ses_{ID}",
		"hop 1   model   replay/support-shell-v1 → tool_request: shell · 220 in / 28 out tokens",
		`                "Counting the tickets in the workspace."`,
		"        hook    pre_tool_use guard-rm → ok · {DUR}",
		"        policy  allow shell (default: no_policy_configured)",
		"        sandbox workspace_write, network none (bubblewrap)",
		"        output  1 secrets redacted from the output",
		`        tool    shell {ANY}`,
		"hop 2   model   replay/support-shell-v1 → tool_request: shell · 260 in / 20 out tokens",
		`                "Cleaning up the notes before finishing."`,
		"        hook    pre_tool_use guard-rm → block · {DUR}",
		"        policy  deny shell (hook: hook_blocked)",
		`        tool    shell  ✗ error: blocked by a hook: Recursive deletes are blocked by the guard-rm hook{ANY}`,
		"hop 3   model   replay/support-shell-v1 → complete: complete_task · 300 in / 40 out tokens",
		"        policy  allow complete_task (default: no_policy_configured)",
		`        tool    complete_task {ANY}`,
		"✔ completed in {DUR} · 3 hops · 3 tool calls · 780 in / 88 out tokens",
		"  result: {ANY}",
	})
	if strings.Contains(r.stdout, "acct-12345678") {
		t.Error("the account number reached the timeline")
	}
}

// TestDoctorProbe: doctor --probe asks each model's endpoint for its
// models, all at once: endpoints that answer show ok with a latency and
// whether the model is listed, and the run exits 0; an endpoint that is
// down or refuses the key fails the run (exit 1) with the reason; replay
// and unused models are not called; the key is never printed.
func TestDoctorProbe(t *testing.T) {
	t.Parallel()
	const key = "sk-doctor-probe-never-printed-0042"
	b := setup(t)
	openai := probetest.Serve(t, probetest.OpenAI(probetest.ReadFile(t, "../model/openaichat/testdata/models.json")), key)
	anthropic := probetest.Serve(t, probetest.Anthropic(probetest.ReadFile(t, "../model/anthropic/testdata/models.json")), key)
	healthy := b.write(t, "healthy.yaml", `models:
  gpt: {provider: openai_chat, model: gpt-4o, base_url: "`+openai.Up+`/v1", api_key: `+key+`}
  claude: {provider: anthropic_messages, model: claude-sonnet-4-5, base_url: "`+anthropic.Up+`", api_key: `+key+`}
  script: {provider: replay, script: support.replay.yaml}
  spare: {provider: openai_chat, model: gpt-4o, base_url: "`+openai.Down+`/v1", api_key: `+key+`}
agents:
  support: {models: [gpt, claude, script]}
`)
	r := run(t, "", "doctor", "--config", healthy, "--probe")
	if r.code != cli.ExitOK {
		t.Errorf("exit %d, want 0\n%s%s", r.code, r.stdout, r.stderr)
	}
	matchLines(t, r.stdout, []string{
		"config " + healthy,
		"",
		"models",
		"  ✔ claude             anthropic_messages/claude-sonnet-4-5     key in the config file · no price · tools,streaming",
		"      probe ok in {DUR}: 2 models; the model is not among them (an alias may still be served)",
		"  ✔ gpt                openai_chat/gpt-4o                       key in the config file · no price · tools,streaming",
		"      probe ok in {DUR}: 3 models; the model is listed",
		"  ✔ script             replay                                   no key needed · no price · tools",
		"      probe skipped: replay needs no probe",
		"  ✔ spare              openai_chat/gpt-4o                       key in the config file · no price · tools,streaming",
		"      probe skipped: no agent uses it",
		"",
		"agents",
		"  ✔ support            → gpt (then claude, script)",
	})

	broken := b.write(t, "broken.yaml", `models:
  local: {provider: openai_compatible, model: qwen3, base_url: "`+openai.Down+`/v1"}
  refused: {provider: openai_responses, model: gpt-4o, base_url: "`+openai.Refusing+`/v1", api_key: `+key+`}
  claude: {provider: anthropic_messages, model: claude-sonnet-4-5, base_url: "`+anthropic.Refusing+`", api_key: `+key+`}
agents:
  support: {models: [local, refused, claude]}
`)
	r = run(t, "", "doctor", "--config", broken, "--probe")
	if r.code != cli.ExitFailed {
		t.Errorf("exit %d, want 1\n%s%s", r.code, r.stdout, r.stderr)
	}
	matchLines(t, r.stdout, []string{
		"config " + broken,
		"",
		"models",
		"  ✘ claude             anthropic_messages/claude-sonnet-4-5     key in the config file · no price · tools,streaming",
		"      ✘ probe failed after {DUR}: auth (HTTP 401): invalid x-api-key: [REDACTED]",
		"  ✘ local              openai_compatible/qwen3                  no key needed · no price · tools,streaming",
		"      ✘ probe failed after {DUR}: network: {ANY}connection refused",
		"  ✘ refused            openai_responses/gpt-4o                  key in the config file · no price · tools,streaming",
		"      ✘ probe failed after {DUR}: auth (HTTP 401): Incorrect API key provided: [REDACTED]. You can find your API key at https://platform.openai.com/account/api-keys.",
		"",
		"agents",
		"  ✔ support            → local (then refused, claude)",
	})

	r = run(t, "", "doctor", "--config", broken, "--probe", "--json")
	if r.code != cli.ExitFailed {
		t.Errorf("--json: exit %d, want 1", r.code)
	}
	var rep cli.DoctorReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("--json output does not decode: %v\n%s", err, r.stdout)
	}
	refused := rep.Models[2]
	if p := refused.Probe; rep.OK || p == nil || p.Status != "failed" || p.Kind != "auth" || p.StatusCode != 401 ||
		refused.Problem != "its endpoint failed the probe: auth: "+p.Reason {
		t.Errorf("model refused: %+v, probe %+v", refused, refused.Probe)
	}
	for _, out := range []string{r.stdout, r.stderr} {
		if strings.Contains(out, key) {
			t.Errorf("doctor --probe printed the API key:\n%s", out)
		}
	}
	if r := run(t, "", "doctor", "--config", broken, "--probe", "--probe-timeout", "0s"); r.code != cli.ExitUsage {
		t.Errorf("--probe-timeout 0s: exit %d, want 2", r.code)
	}
}

// TestRunLongExample runs examples/support/long.yaml as its comment
// says: turns of one session, the later ones compacting the context
// automatically, each compaction shown in the timeline, and the context
// of a compacted turn rebuilt and verified by inspect context.
func TestRunLongExample(t *testing.T) {
	t.Parallel()
	b := setup(t)
	config := filepath.Join(b.dir, "long.yaml")
	var compacted []string
	for i := 1; i <= 4; i++ {
		r := runOK(t, "", "run", "--config", config, "--session", "long-demo", fmt.Sprintf("Question %d: what does the policy say?", i))
		for _, line := range strings.Split(r.stdout, "\n") {
			if strings.Contains(line, "context compacted auto summarize_then_drop") {
				compacted = append(compacted, r.stdout)
			}
		}
	}
	if len(compacted) < 2 {
		t.Fatalf("%d of 4 turns compacted, want the later ones", len(compacted))
	}
	last := compacted[len(compacted)-1]
	id := regexp.MustCompile(`request (turn_[0-9A-Z]+)`).FindStringSubmatch(last)
	if id == nil {
		t.Fatalf("no request id in:\n%s", last)
	}
	r := runOK(t, "", "inspect", "context", "--config", config, "--request", id[1], "--hop", "1")
	if !strings.Contains(r.stdout, "verified") || strings.Contains(r.stdout, "not verified") || !strings.Contains(r.stdout, "[Summary of the conversation before this point") {
		t.Errorf("inspect context of the compacted turn:\n%s", r.stdout)
	}
}
