package config

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseModels(t *testing.T) {
	t.Parallel()
	dir := fixture(t)
	src := `models:
  fast:
    provider: openai_chat
    model: gpt-4.1-mini
    price: {input: 0.4, cached_input: 0.1, output: 1.6}
    context_window: 1047576
    max_output_tokens: 2048
    capabilities: [tools, vision, json_output, streaming]
    typical_latency: 800ms
    timeout: 2m
    idle_timeout: 30s
    temperature: 0.2
    reasoning_effort: low
    headers: {X-Title: agentrt}
  careful:
    provider: anthropic_messages
    model: claude-sonnet-4-5
    api_key_env: TEAM_ANTHROPIC_KEY
    thinking_budget: 2048
  local:
    provider: openai_compatible
    model: qwen3:8b
    base_url: http://localhost:11434/v1
  responses:
    provider: openai_responses
    model: o4-mini
    api_key: sk-test-inline
    reasoning_summary: auto
agents:
  support:
    models: [fast, careful, local]
    profile: {kind: triage, requires: [tools], min_context_window: 32000, prefer: cost, fallback: false}
  solo:
    model: responses
budgets:
  session: {max_tokens: 200000, max_cost_usd: 2.5}
  tenant: {max_cost_usd: 50, window: month}
  low_threshold: 0.9
  on_exceeded: fail
`
	f, err := Parse("agentrt.yaml", []byte(src), dir, Options{Builtins: builtins})
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	temp := 0.2
	fast := &Model{Key: "fast", Provider: ProviderOpenAIChat, Name: "gpt-4.1-mini", APIKeyEnv: "OPENAI_API_KEY",
		Price: Price{Input: 0.4, CachedInput: 0.1, Output: 1.6}, ContextWindow: 1047576, MaxOutputTokens: 2048,
		Capabilities: []string{"tools", "vision", "json_output", "streaming"}, TypicalLatency: 800 * time.Millisecond,
		Timeout: 2 * time.Minute, IdleTimeout: 30 * time.Second, Temperature: &temp, ReasoningEffort: "low",
		Headers: map[string]string{"X-Title": "agentrt"}}
	careful := &Model{Key: "careful", Provider: ProviderAnthropic, Name: "claude-sonnet-4-5", APIKeyEnv: "TEAM_ANTHROPIC_KEY",
		ThinkingBudget: 2048, Capabilities: []string{"tools", "streaming"}}
	local := &Model{Key: "local", Provider: ProviderOpenAICompatible, Name: "qwen3:8b", BaseURL: "http://localhost:11434/v1",
		Capabilities: []string{"tools", "streaming"}}
	responses := &Model{Key: "responses", Provider: ProviderOpenAIResponses, Name: "o4-mini", APIKey: "sk-test-inline",
		ReasoningSummary: "auto", Capabilities: []string{"tools", "streaming"}}
	if diff := cmp.Diff(map[string]*Model{"fast": fast, "careful": careful, "local": local, "responses": responses}, f.Models); diff != "" {
		t.Errorf("models (-want +got):\n%s", diff)
	}
	support := f.Agents["support"]
	if diff := cmp.Diff([]*Model{fast, careful, local}, support.Models); diff != "" {
		t.Errorf("support's candidates (-want +got):\n%s", diff)
	}
	if support.Models[0] != f.Models["fast"] {
		t.Error("a declared model is not shared: the agent got a copy")
	}
	wantProfile := Profile{Kind: "triage", Requires: []string{"tools"}, MinContextWindow: 32000, Prefer: "cost", Fallback: false}
	if diff := cmp.Diff(wantProfile, support.Profile); diff != "" {
		t.Errorf("profile (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]*Model{responses}, f.Agents["solo"].Models); diff != "" {
		t.Errorf("solo's model (-want +got):\n%s", diff)
	}
	wantBudgets := Budgets{Session: Budget{MaxTokens: 200000, MaxCostUSD: 2.5}, Tenant: Budget{MaxCostUSD: 50},
		TenantWindow: WindowMonth, LowThreshold: 0.9, OnExceeded: OnExceededFail}
	if diff := cmp.Diff(wantBudgets, f.Budgets); diff != "" {
		t.Errorf("budgets (-want +got):\n%s", diff)
	}
}

func TestParseModelErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		yaml string
		want []string
	}{
		{
			name: "UndeclaredModel",
			yaml: "models:\n  fast: {provider: openai_chat, model: m}\nagents:\n  a: {models: [fast, fsat]}\n",
			want: []string{`agentrt.yaml:4:22: agent "a" uses model "fsat", which is not declared under models; did you mean fast?`},
		},
		{
			name: "ModelAndModels",
			yaml: "models:\n  fast: {provider: openai_chat, model: m}\nagents:\n  a: {model: fast, models: [fast]}\n",
			want: []string{`agentrt.yaml:4:20: agent "a" has both model and models; use model for one model, models for candidates`},
		},
		{
			name: "EmptyAndDuplicateCandidates",
			yaml: "models:\n  fast: {provider: openai_chat, model: m}\nagents:\n  a: {models: []}\n  b: {models: [fast, fast]}\n",
			want: []string{
				`agentrt.yaml:4:15: models in agent "a" must not be empty`,
				`agentrt.yaml:5:22: model "fast" is listed twice in agent "b"`,
			},
		},
		{
			name: "KeysForOtherProviders",
			yaml: "models:\n  m:\n    provider: replay\n    script: support.replay.yaml\n    thinking_budget: 2048\n    base_url: http://x\n" +
				"  o: {provider: openai_chat, model: g, thinking_budget: 4096, reasoning_summary: auto}\n" + okAgent,
			want: []string{
				`agentrt.yaml:5:5: thinking_budget does not apply to provider replay in model "m"`,
				`agentrt.yaml:6:5: base_url does not apply to provider replay in model "m"`,
				`agentrt.yaml:7:40: thinking_budget does not apply to provider openai_chat in model "o"`,
				`agentrt.yaml:7:63: reasoning_summary does not apply to provider openai_chat in model "o"`,
			},
		},
		{
			name: "BadValues",
			yaml: "models:\n  m:\n    provider: openai_chat\n    model: g\n    price: {input: -1, output: cheap, extra: 1}\n" +
				"    capabilities: [tools, vison]\n    base_url: localhost:8080\n    api_key_env: 1BAD\n    temperature: 3\n" +
				"    reasoning_effort: max\n    context_window: 0\n" + okAgent,
			want: []string{
				`agentrt.yaml:5:20: price.input in model "m" must not be negative, got -1`,
				`agentrt.yaml:5:32: price.output in model "m" must be a number, got string "cheap"`,
				`agentrt.yaml:5:39: unknown key "extra" in price of model "m"`,
				`agentrt.yaml:6:27: capabilities in model "m": unknown capability string "vison"; did you mean vision? (known: tools, vision, json_output, reasoning, streaming)`,
				`agentrt.yaml:7:15: base_url in model "m" must be an http or https URL such as http://localhost:11434/v1, got "localhost:8080"`,
				`agentrt.yaml:8:18: api_key_env in model "m" must be an environment variable name, got "1BAD"`,
				`agentrt.yaml:9:18: temperature in model "m" must be between 0 and 2, got 3`,
				`agentrt.yaml:10:23: reasoning_effort in model "m" must be one of minimal, low, medium, high, got "max"`,
				`agentrt.yaml:11:21: context_window in model "m" must be between 1 and 2147483647, got 0`,
			},
		},
		{
			name: "ThinkingBudget",
			yaml: "models:\n  a: {provider: anthropic_messages, model: c, thinking_budget: 4096}\n" +
				"  b: {provider: anthropic_messages, model: c, thinking_budget: 2048, max_output_tokens: 8000, temperature: 1}\n" +
				"  c: {provider: anthropic_messages, model: c, thinking_budget: 2048, max_output_tokens: 2048}\n" + okAgent,
			want: []string{
				`agentrt.yaml:2:47: thinking_budget in model "a" must be below the default max_output_tokens (4096)`,
				`agentrt.yaml:3:95: temperature in model "b" cannot be set with thinking_budget (the API requires the default)`,
				`agentrt.yaml:4:47: thinking_budget in model "c" must be below max_output_tokens (2048)`,
			},
		},
		{
			name: "KeyAndKeyEnv",
			yaml: "models:\n  m: {provider: anthropic_messages, model: c, api_key: secret-value-1, api_key_env: K}\n" + okAgent,
			want: []string{`agentrt.yaml:2:47: api_key and api_key_env are exclusive in model "m"`},
		},
		{
			name: "Profile",
			yaml: "agents:\n  a:\n    model: {provider: replay, script: support.replay.yaml}\n" +
				"    profile: {requires: [gpu], prefer: speed, min_context_window: -1, fallbak: true}\n",
			want: []string{
				`agentrt.yaml:4:26: profile.requires in agent "a": unknown capability string "gpu" (known: tools, vision, json_output, reasoning, streaming)`,
				`agentrt.yaml:4:40: profile.prefer in agent "a" must be one of order, cost, latency, got "speed"`,
				`agentrt.yaml:4:67: profile.min_context_window in agent "a" must be between 0 and 2147483647, got -1`,
				`agentrt.yaml:4:71: unknown key "fallbak" in profile of agent "a"; did you mean fallback?`,
			},
		},
		{
			name: "Budgets",
			yaml: okAgent + "budgets:\n  session: {max_tokens: 1.5, max_cost_usd: -2}\n  tenant: {window: week}\n" +
				"  low_threshold: 1.5\n  on_exceeded: queue\n  team: {}\n",
			want: []string{
				`agentrt.yaml:5:25: budgets.session.max_tokens must be an integer, got number 1.5`,
				`agentrt.yaml:5:44: budgets.session.max_cost_usd must not be negative, got -2`,
				`agentrt.yaml:6:20: budgets.tenant.window must be one of total, day, month, got "week"`,
				`agentrt.yaml:7:18: budgets.low_threshold must be above 0 and at most 1 (a fraction of the budget), got 1.5`,
				`agentrt.yaml:8:16: budgets.on_exceeded must be one of wait, fail, got "queue"`,
				`agentrt.yaml:9:3: unknown key "team" in budgets`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := fixture(t)
			_, err := Parse("agentrt.yaml", []byte(tt.yaml), dir, Options{Builtins: builtins})
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

// TestAPIKeyNeverInErrors: an inline key is a secret, so no error about
// the model quotes it.
func TestAPIKeyNeverInErrors(t *testing.T) {
	t.Parallel()
	const key = "sk-live-DO-NOT-PRINT-4242"
	src := "models:\n  m: {provider: openai_chat, api_key: " + key + ", api_key_env: X, temperature: hot}\n" + okAgent
	_, err := Parse("agentrt.yaml", []byte(src), fixture(t), Options{})
	if err == nil {
		t.Fatal("Parse: no error")
	}
	if strings.Contains(err.Error(), key) {
		t.Errorf("error quotes the API key:\n%v", err)
	}
}

// TestAPIKeyFile: api_key_file is read when the file is loaded, relative
// to the config's folder, its trailing newline trimmed; it excludes
// api_key and api_key_env, and a missing, empty, multi-line or oversized
// file is an error at the key that never quotes what it holds.
func TestAPIKeyFile(t *testing.T) {
	t.Parallel()
	const key = "sk-file-DO-NOT-PRINT-4242"
	dir := fixture(t)
	writeFile(t, filepath.Join(dir, "keys", "openai"), key+"\r\n", 0o600)
	writeFile(t, filepath.Join(dir, "keys", "empty"), "\n", 0o600)
	writeFile(t, filepath.Join(dir, "keys", "two"), key+"\n"+key+"\n", 0o600)
	writeFile(t, filepath.Join(dir, "keys", "big"), strings.Repeat(key, 3000), 0o600)

	f, err := Parse("agentrt.yaml", []byte("models:\n  m: {provider: openai_chat, model: g, api_key_file: keys/openai}\n"+okAgent), dir, Options{Builtins: builtins})
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	m := f.Models["m"]
	if m.APIKey != key || m.APIKeyFile != filepath.Join(dir, "keys", "openai") || m.APIKeyEnv != "" {
		t.Errorf("model = key %q, file %q, env %q; want the file's key, its path, no env", m.APIKey, m.APIKeyFile, m.APIKeyEnv)
	}

	src := "models:\n" +
		"  a: {provider: openai_chat, model: g, api_key_file: keys/missing}\n" +
		"  b: {provider: openai_chat, model: g, api_key_file: keys/empty}\n" +
		"  c: {provider: openai_chat, model: g, api_key_file: keys/two}\n" +
		"  d: {provider: openai_chat, model: g, api_key_file: keys/big}\n" +
		"  e: {provider: openai_chat, model: g, api_key_file: keys/openai, api_key: x}\n" +
		"  f: {provider: openai_chat, model: g, api_key_file: keys/openai, api_key_env: X}\n" +
		"  g: {provider: replay, script: support.replay.yaml, api_key_file: keys/openai}\n" +
		"  h: {provider: openai_chat, model: g, api_key_file: keys}\n" + okAgent
	_, err = Parse("agentrt.yaml", []byte(src), dir, Options{Builtins: builtins})
	if err == nil {
		t.Fatal("Parse: no error")
	}
	want := []string{
		`agentrt.yaml:2:54: api_key_file "keys/missing" in model "a" does not exist (resolved to $DIR/keys/missing)`,
		`agentrt.yaml:3:54: api_key_file in model "b" ($DIR/keys/empty) is empty; it must hold the API key`,
		`agentrt.yaml:4:54: api_key_file in model "c" ($DIR/keys/two) holds more than one line; it must hold the API key only`,
		`agentrt.yaml:5:54: api_key_file in model "d" ($DIR/keys/big) is larger than 64 KiB; it must hold the API key only`,
		`agentrt.yaml:6:40: api_key_file and api_key are exclusive in model "e"`,
		`agentrt.yaml:7:40: api_key_file and api_key_env are exclusive in model "f"`,
		`agentrt.yaml:8:54: api_key_file does not apply to provider replay in model "g"`,
		`agentrt.yaml:9:54: api_key_file "keys" in model "h" is a directory, not a file`,
	}
	got := errorLines(t, err, dir)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("errors mismatch (-want +got):\n%s", diff)
	}
	if strings.Contains(err.Error(), key) {
		t.Errorf("error quotes the API key:\n%v", err)
	}
}
