package spectest

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestCopiesMatchShared checks that the embedded schemas are unmodified
// copies of the standard's, when the shared checkout is present.
func TestCopiesMatchShared(t *testing.T) {
	t.Parallel()
	shared := filepath.Join("..", "..", "..", "shared", "agentruntime-spec", "schemas")
	if _, err := os.Stat(shared); err != nil {
		t.Skipf("no shared copy of the standard at %s", shared)
	}
	for _, name := range []string{EventSchema, SnapshotSchema} {
		want, err := os.ReadFile(filepath.Join(shared, name))
		if err != nil {
			t.Fatal(err)
		}
		got, err := schemaFS.ReadFile("schemas/" + name)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("schemas/%s differs from the standard's copy in %s", name, shared)
		}
	}
}

// TestFixtures validates the standard's own example fixtures, proving the
// validator accepts what the standard calls valid and rejects what it does not.
func TestFixtures(t *testing.T) {
	t.Parallel()
	ok := []byte(`{"type":"turn.submitted","eventId":"evt_1","timestamp":"2026-05-11T10:00:00Z","sequence":1,"sessionId":"s"}`)
	if err := Check(EventSchema, ok); err != nil {
		t.Errorf("valid event rejected: %v", err)
	}
	for name, doc := range map[string]string{
		"unknown type":     `{"type":"turn.exploded","eventId":"e","timestamp":"2026-05-11T10:00:00Z"}`,
		"missing eventId":  `{"type":"turn.started","timestamp":"2026-05-11T10:00:00Z"}`,
		"bad timestamp":    `{"type":"turn.started","eventId":"e","timestamp":"yesterday"}`,
		"negative seq":     `{"type":"turn.started","eventId":"e","timestamp":"2026-05-11T10:00:00Z","sequence":-1}`,
		"empty session id": `{"type":"turn.started","eventId":"e","timestamp":"2026-05-11T10:00:00Z","sessionId":""}`,
	} {
		if err := Check(EventSchema, []byte(doc)); err == nil {
			t.Errorf("%s: accepted %s", name, doc)
		}
	}
	snap := []byte(`{"schemaVersion":"x","sessionId":"s","threads":[{"threadId":"t","status":"running"}]}`)
	if err := Check(SnapshotSchema, snap); err != nil {
		t.Errorf("valid snapshot rejected: %v", err)
	}
	bad := []byte(`{"schemaVersion":"x","sessionId":"s","threads":[{"threadId":"t","status":"waiting"}]}`)
	if err := Check(SnapshotSchema, bad); err == nil {
		t.Error("snapshot with a thread status outside the enum was accepted")
	}
}

// TestDecisionsCarryReasons: the suite-wide check rejects a permission
// event whose decision lacks a reason code, and lets others through.
func TestDecisionsCarryReasons(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		doc  string
		fail bool
	}{
		{`{"type":"permission.evaluated","permissionDecision":{"decision":"allow","source":"rule","reasonCode":"ok"}}`, false},
		{`{"type":"permission.evaluated","permissionDecision":{"decision":"allow","source":"rule"}}`, true},
		{`{"type":"permission.resolved"}`, true},
		{`{"type":"tool.result"}`, false},
	} {
		if err := checkDecision([]byte(tt.doc)); (err != nil) != tt.fail {
			t.Errorf("checkDecision(%s) = %v, want failure %v", tt.doc, err, tt.fail)
		}
	}
}
