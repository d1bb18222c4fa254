package agentrt_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/internal/dbtest"
	"github.com/agentrt/agentrt/runtype"
)

// TestStartRefusesADamagedStore: a data directory whose database has a
// damaged page (in a table neither opening the store nor its health check
// reads) is refused by Start, with an error wrapping ErrCorrupt that names
// the file and says what to do; the undamaged original starts.
func TestStartRefusesADamagedStore(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rt := startDurable(t, admissionConfig(t, dir))
	res, err := rt.SubmitTurn(context.Background(), &apitype.SubmitTurnParams{Agent: "a", Input: "hello"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.WaitTurn(t.Context(), runtype.Owner{}, res.TurnID); err != nil {
		t.Fatal(err)
	}
	if err := rt.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	original, err := os.ReadFile(filepath.Join(dir, "agentrt.db"))
	if err != nil {
		t.Fatal(err)
	}
	damaged := t.TempDir()
	db := filepath.Join(damaged, "agentrt.db")
	if err := os.WriteFile(db, original, 0o600); err != nil {
		t.Fatal(err)
	}
	dbtest.DamageTable(t, db, "messages")

	again, err := agentrt.New(admissionConfig(t, damaged))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	defer again.Stop(context.Background())
	err = again.Start(context.Background())
	if !errors.Is(err, agentrt.ErrCorrupt) || !errors.Is(err, agentrt.ErrStorage) {
		t.Fatalf("Start on a damaged store = %v, want an error wrapping ErrCorrupt", err)
	}
	for _, want := range []string{db, "damaged", "backup", "quick_check"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Start's error %q does not mention %q", err, want)
		}
	}

	// The original is sound and starts.
	startDurable(t, admissionConfig(t, dir))
}

// TestStartGoesOnWhenTheIntegrityCheckRunsOut: the integrity check is
// bounded; one that runs out of time is logged, and the start goes on.
func TestStartGoesOnWhenTheIntegrityCheckRunsOut(t *testing.T) {
	t.Parallel()
	var logs syncBuffer
	cfg := admissionConfig(t, t.TempDir())
	cfg.IntegrityCheck = time.Nanosecond
	cfg.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
	startDurable(t, cfg)
	found := false
	for _, l := range logs.lines(t) {
		if msg, _ := l["msg"].(string); l["level"] == "WARN" && strings.Contains(msg, "integrity check") && strings.Contains(msg, "did not finish in time") {
			found = true
		}
	}
	if !found {
		t.Errorf("no warning that the integrity check did not finish; logs:\n%s", logs.b.String())
	}
}
