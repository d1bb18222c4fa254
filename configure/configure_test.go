package configure_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/configure"
	"github.com/google/go-cmp/cmp"
)

// TestHealthFromFile: the health section of agentrt.yaml sets the
// thresholds; the ones it leaves out get their defaults.
func TestHealthFromFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for name, body := range map[string]string{
		"s.replay.yaml": "responses: [{text: hi}]\n",
		"agentrt.yaml": "agents:\n  a:\n    model: {provider: replay, script: s.replay.yaml}\n" +
			"health:\n  stuck_after: 90s\n  queue_age_warn: 5s\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fromFile, _, err := configure.Load(filepath.Join(dir, "agentrt.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	want := agentrt.HealthThresholds{StuckAfter: 90 * time.Second, QueueAgeWarn: 5 * time.Second}
	if fromFile.Health != want {
		t.Errorf("Health from the file = %+v, want %+v", fromFile.Health, want)
	}
	want.ApprovalAgeWarn = time.Hour
	if got := fromFile.WithDefaults().Health; got != want {
		t.Errorf("Health with defaults = %+v, want %+v", got, want)
	}
}

// TestMemoryFromFile: an agent's memory section reaches its runtime
// config.
func TestMemoryFromFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for name, body := range map[string]string{
		"s.replay.yaml": "responses: [{text: hi}]\n",
		"agentrt.yaml": "agents:\n  a:\n    model: {provider: replay, script: s.replay.yaml}\n" +
			"    tools: [memory_save, memory_search, memory_forget]\n    memory: {inject: 4}\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg, _, err := configure.Load(filepath.Join(dir, "agentrt.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Agents["a"].Memory; got != (agentrt.AgentMemory{Inject: 4}) {
		t.Errorf("Memory = %+v, want inject 4", got)
	}
}

// TestDelegationFromFile: an agent's subagents and the delegation
// section reach the runtime config.
func TestDelegationFromFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for name, body := range map[string]string{
		"s.replay.yaml": "responses: [{text: hi}]\n",
		"agentrt.yaml": "agents:\n  a:\n    model: {provider: replay, script: s.replay.yaml}\n" +
			"    subagents:\n      - {agent: b, as_tool: lookup, description: Looks up., input_schema: {type: object}, max_parallel: 2, workspace: parent_readonly}\n" +
			"      - {agent: b}\n" +
			"  b:\n    model: {provider: replay, script: s.replay.yaml}\n" +
			"delegation: {max_depth: 5}\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg, _, err := configure.Load(filepath.Join(dir, "agentrt.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.MaxDelegationDepth != 5 {
		t.Errorf("MaxDelegationDepth = %d, want 5", cfg.MaxDelegationDepth)
	}
	want := []agentrt.SubagentUse{
		{Agent: "b", AsTool: "lookup", Description: "Looks up.", InputSchema: json.RawMessage(`{"type":"object"}`), MaxParallel: 2, Workspace: "parent_readonly"},
		{Agent: "b", AsTool: "delegate_b", Workspace: "own"},
	}
	if diff := cmp.Diff(want, cfg.Agents["a"].Subagents); diff != "" {
		t.Errorf("Subagents mismatch (-want +got):\n%s", diff)
	}
	if got := cfg.Agents["b"].Subagents; got != nil {
		t.Errorf("b's Subagents = %+v, want none", got)
	}
}
