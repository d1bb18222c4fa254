package agentrt_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/internal/spectest"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

// TestSnapshotCapabilitySessions: a session snapshot lists the session's
// capability sessions, as the store holds them, oldest first, with the
// runs that used them, and stays valid against the standard's schema; a
// thread read model leaves them out, and a session without any lists
// none.
func TestSnapshotCapabilitySessions(t *testing.T) {
	t.Parallel()
	rt, st := readRuntime(t)
	ctx := t.Context()
	b := writeBigSession(t, st, apitype.DefaultTenant, 2, false)
	bare := writeBigSession(t, st, apitype.DefaultTenant, 1, false)
	other := writeBigSession(t, st, "tenant_other", 1, false)

	at := time.Date(2026, 5, 6, 7, 8, 9, 10, time.UTC)
	ready := &runtype.CapabilitySession{
		ID: "cap_1", Owner: b.owner, SessionID: b.session.ID, Server: "everything",
		Transport: runtype.TransportStreamableHTTP, ProtocolVersion: "2025-06-18", ServerSessionID: "mcp-1",
		Status: runtype.CapabilityReady, Generation: 2, ExpiresAt: at.Add(time.Hour), ResumeCursor: "41",
		RuntimeID: "rt_1", CreatedAt: at, UpdatedAt: at.Add(time.Minute),
	}
	failed := &runtype.CapabilitySession{
		ID: "cap_2", Owner: b.owner, SessionID: b.session.ID, Server: "memory", Transport: runtype.TransportStdio,
		Status: runtype.CapabilityFailed, Generation: 1, Error: "the server exited: status 1",
		CreatedAt: at.Add(time.Second), UpdatedAt: at.Add(time.Second),
	}
	elsewhere := &runtype.CapabilitySession{
		ID: "cap_3", Owner: other.owner, SessionID: other.session.ID, Server: "everything",
		Transport: runtype.TransportStdio, Status: runtype.CapabilityReady, CreatedAt: at,
	}
	run := func(c *runtype.CapabilitySession, r *runtype.Turn, d time.Duration) *runtype.CapabilityRun {
		return &runtype.CapabilityRun{Owner: c.Owner, CapabilitySessionID: c.ID, RunID: r.RunID, At: at.Add(d)}
	}
	writeBatch(t, st, &store.Batch{
		// Written newest first: the snapshot lists by creation.
		CapabilitySessions: []*runtype.CapabilitySession{failed, ready, elsewhere},
		CapabilityRuns:     []*runtype.CapabilityRun{run(ready, b.turns[1], 2*time.Second), run(ready, b.turns[0], time.Second)},
	})

	snap, err := rt.GetSession(ctx, b.owner, b.session.ID)
	if err != nil {
		t.Fatal(err)
	}
	spectest.Snapshot(t, snap)
	ptr := func(t time.Time) *time.Time { return &t }
	want := []apitype.CapabilitySessionRead{{
		CapabilitySessionID: "cap_1", Server: "everything", Transport: runtype.TransportStreamableHTTP,
		ProtocolVersion: "2025-06-18", MCPSessionID: "mcp-1", Status: runtype.CapabilityReady, Generation: 2,
		ExpiresAt: ptr(at.Add(time.Hour)), ResumeCursor: "41", RunIDs: []string{b.turns[0].RunID, b.turns[1].RunID},
		CreatedAt: ptr(at), UpdatedAt: ptr(at.Add(time.Minute)),
	}, {
		CapabilitySessionID: "cap_2", Server: "memory", Transport: runtype.TransportStdio, Status: runtype.CapabilityFailed,
		Generation: 1, Error: "the server exited: status 1", RunIDs: []string{},
		CreatedAt: ptr(at.Add(time.Second)), UpdatedAt: ptr(at.Add(time.Second)),
	}}
	if d := cmp.Diff(want, snap.CapabilitySessions); d != "" {
		t.Errorf("capability sessions (-want +got):\n%s", d)
	}
	raw, err := json.Marshal(snap)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		CapabilitySessions []map[string]any `json:"capabilitySessions"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"capabilitySessionId", "server", "transport", "protocolVersion", "mcpSessionId", "status",
		"generation", "expiresAt", "resumeCursor", "runIds", "createdAt", "updatedAt"} {
		if _, ok := doc.CapabilitySessions[0][k]; !ok {
			t.Errorf("capability session lacks %s: %v", k, doc.CapabilitySessions[0])
		}
	}

	for _, c := range []struct {
		name    string
		read    func() (*apitype.Snapshot, error)
		listed  bool     // the JSON has capabilitySessions
		wantIDs []string // their IDs
	}{
		{"a session without any", func() (*apitype.Snapshot, error) { return rt.GetSession(ctx, bare.owner, bare.session.ID) }, true, nil},
		{"another tenant's session", func() (*apitype.Snapshot, error) { return rt.GetSession(ctx, other.owner, other.session.ID) }, true, []string{"cap_3"}},
		{"a thread read", func() (*apitype.Snapshot, error) { return rt.GetThreadRead(ctx, b.owner, b.session.ID, b.thread.ID) }, false, nil},
	} {
		snap, err := c.read()
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		spectest.Snapshot(t, snap)
		raw, err := json.Marshal(snap)
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]json.RawMessage
		if err := json.Unmarshal(raw, &doc); err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, cs := range snap.CapabilitySessions {
			ids = append(ids, cs.CapabilitySessionID)
		}
		if _, listed := doc["capabilitySessions"]; listed != c.listed || !slices.Equal(ids, c.wantIDs) {
			t.Errorf("%s: capabilitySessions %s (listed %t), want IDs %v (listed %t)", c.name, doc["capabilitySessions"], listed, c.wantIDs, c.listed)
		}
	}
}

// writeBatch applies b to st in a transaction of its own.
func writeBatch(t *testing.T, st store.Store, b *store.Batch) {
	t.Helper()
	ctx := context.Background()
	tx, err := st.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Apply(ctx, b); err != nil {
		tx.Rollback()
		t.Fatalf("Apply: %v", err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}
