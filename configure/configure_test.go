package configure_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/configure"
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
