package agentrt_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/evidence"
	"github.com/agentrt/agentrt/internal/spectest"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/replaycase"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/telemetry"
)

// members reads a bundle's members by name, in archive order.
func members(t *testing.T, bundle []byte) ([]string, map[string][]byte) {
	t.Helper()
	gz, err := gzip.NewReader(bytes.NewReader(bundle))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	var names []string
	data := map[string][]byte{}
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return names, data
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, hdr.Name)
		data[hdr.Name] = b
	}
}

// TestExportEvidence exports a governed turn whose tool call a person
// approved: every member is there, the counts are right, the bundle
// verifies, evidence.changed is recorded and valid, and a second export
// is byte-identical.
func TestExportEvidence(t *testing.T) {
	t.Parallel()
	raw := []byte(`{"id":"resp_1","choices":[{"message":{"tool_calls":[{"id":"c1"}]}}]}`)
	g := startGov(t, agentrt.Config{Policy: kernel(t, askRules)},
		&model.Response{ToolCalls: []runtype.MessageToolCall{readCall("c1", "a.md")}, Raw: raw},
		&model.Response{Text: "alpha it is"})
	res, _ := g.submit(t, "evidence")
	g.respond(t, &apitype.RespondActionParams{ActionID: g.pending(t, res.TurnID)[0].ActionID, Decision: runtype.DecisionApprove})
	if turn := g.wait(t, res.TurnID); turn.Status != runtype.StatusCompleted {
		t.Fatalf("turn %s (%s), want completed", turn.Status, turn.StatusReason)
	}
	ctx := context.Background()
	params := &apitype.ExportEvidenceParams{SessionID: res.SessionID, TurnID: res.TurnID, ArtifactContents: true, Health: true}
	var buf bytes.Buffer
	m, err := g.rt.ExportEvidence(ctx, &buf, params)
	if err != nil {
		t.Fatal(err)
	}
	bundle := bytes.Clone(buf.Bytes())

	rep := evidence.Verify(bytes.NewReader(bundle), nil)
	if !rep.OK {
		t.Fatalf("Verify: %s: %s", rep.Broken, rep.Reason)
	}
	turnEvents := 0
	for _, e := range g.tb.sessionEvents(t, runtype.Owner{}, res.SessionID) {
		if e.TurnID == res.TurnID && e.Type != event.EvidenceChanged {
			turnEvents++
		}
	}
	// Artifacts: the call's input, its output (inline in its message) and
	// the first answer's raw response.
	want := evidence.Counts{Events: turnEvents, Decisions: 2, Approvals: 1, ToolCalls: 1, Receipts: 3, ProviderResponses: 2, Artifacts: 3}
	if diff := cmp.Diff(want, m.Counts); diff != "" {
		t.Errorf("counts (-want +got):\n%s", diff)
	}
	if m.SessionID != res.SessionID || m.TurnID != res.TurnID || m.ThreadID != res.ThreadID || m.TaskID != res.TaskID ||
		m.RuntimeID != g.rt.RuntimeID() || len(m.RunIDs) != 1 || m.TimeRange.First == nil || m.ReceiptHead != rep.ReceiptHead {
		t.Errorf("manifest ids = %+v", m)
	}
	wantSignals := map[string]evidence.SignalStatus{
		"request": "exported", "events": "exported", "session_snapshot": "exported", "thread_snapshot": "exported",
		"policy_decisions": "exported", "approvals": "exported", "tool_calls": "exported", "artifact_contents": "exported",
		"receipts": "exported", "provider_raw_responses": "unsupported", "replay_case": "exported", "health": "exported",
	}
	gotSignals := map[string]evidence.SignalStatus{}
	for k, s := range m.Signals {
		gotSignals[k] = s.Status
	}
	if diff := cmp.Diff(wantSignals, gotSignals); diff != "" {
		t.Errorf("signals (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"provider_raw_responses"}, m.KnownGaps); diff != "" {
		t.Errorf("known gaps (-want +got):\n%s", diff)
	}

	names, data := members(t, bundle)
	rawName, _ := evidence.ArtifactName("sha256:" + hex.EncodeToString(sha256Sum(raw)))
	for _, name := range []string{evidence.ManifestName, evidence.RequestName, evidence.EventsName, evidence.SessionName, evidence.ThreadName,
		evidence.DecisionsName, evidence.ApprovalsName, evidence.ToolCallsName, evidence.ReceiptsName, evidence.ProviderResponsesName,
		evidence.ReplayCaseName, evidence.HealthName, rawName} {
		if data[name] == nil && name != evidence.ApprovalsName {
			t.Errorf("no member %s in %v", name, names)
		}
	}
	if names[0] != evidence.ManifestName {
		t.Errorf("first member %s", names[0])
	}
	// The replay case is what agentrt replay re-runs from the bundle.
	rc, err := replaycase.Parse(data[evidence.ReplayCaseName])
	if err != nil || rc.TurnID != res.TurnID || len(rc.ModelOutputs) != 2 || len(rc.Steps) != 1 {
		t.Errorf("replay case %+v (%v); want turn %s with 2 model outputs and 1 step", rc, err, res.TurnID)
	}
	var call struct {
		InputRef, OutputRef, OutputSource, InputMember, OutputMember, ArgumentsSHA256 string
	}
	if err := json.Unmarshal(data[evidence.ToolCallsName], &call); err != nil {
		t.Fatal(err)
	}
	if in := data[call.InputMember]; string(in) != `{"path":"a.md"}` || call.OutputSource != "message" ||
		!strings.Contains(string(data[call.OutputMember]), "alpha") || call.ArgumentsSHA256 == "" {
		t.Errorf("tool call %+v: input %q, output %q", call, data[call.InputMember], data[call.OutputMember])
	}
	var approval apitype.ActionRead
	if err := json.Unmarshal(data[evidence.ApprovalsName], &approval); err != nil || approval.Decision != runtype.DecisionApprove || approval.Status != runtype.ActionApproved {
		t.Errorf("approvals.jsonl = %s (%v), want the approved action", data[evidence.ApprovalsName], err)
	}
	for _, line := range bytes.Split(bytes.TrimSpace(data[evidence.EventsName]), []byte("\n")) {
		spectest.Event(t, line)
	}
	spectest.Snapshot(t, json.RawMessage(data[evidence.SessionName]))

	// evidence.changed: one, valid, tying the export to its manifest.
	var changed []*event.Event
	for _, e := range g.tb.sessionEvents(t, runtype.Owner{}, res.SessionID) {
		if e.Type == event.EvidenceChanged {
			changed = append(changed, e)
		}
	}
	if len(changed) != 1 {
		t.Fatalf("%d evidence.changed events, want 1", len(changed))
	}
	e := changed[0]
	doc, err := e.JSON()
	if err != nil {
		t.Fatal(err)
	}
	spectest.Event(t, doc)
	p, ok := e.Payload.(*event.EvidencePayload)
	manifestSum := hex.EncodeToString(sha256Sum(data[evidence.ManifestName]))
	if !ok || e.EvidenceID != m.BundleID || e.TurnID != res.TurnID || p.ManifestSHA256 != manifestSum ||
		p.ExportedBy != apitype.DefaultPrincipal || p.Counts.Events != want.Events || !p.ArtifactContents || !p.Health {
		t.Errorf("evidence.changed = %s; want evidenceId %s, manifest %s", doc, m.BundleID, manifestSum)
	}
	// Outside a run, it belongs to the turn's span, as the other events
	// outside a run do.
	if e.TraceID != m.TraceID || e.SpanID != telemetry.TurnSpanID(res.TurnID) {
		t.Errorf("evidence.changed has trace %s span %s, want the turn's %s and %s", e.TraceID, e.SpanID, m.TraceID, telemetry.TurnSpanID(res.TurnID))
	}

	// The same request exported again: the same bytes (but health, which
	// is of the moment; exported without it).
	params.Health = false
	var a, b bytes.Buffer
	if _, err := g.rt.ExportEvidence(ctx, &a, params); err != nil {
		t.Fatal(err)
	}
	if _, err := g.rt.ExportEvidence(ctx, &b, params); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Error("two exports of the same request differ")
	}
	names, _ = members(t, a.Bytes())
	for _, n := range names {
		if n == evidence.HealthName {
			t.Error("health.json exported without Health")
		}
	}

	// Without artifact contents: refs, but no artifacts.
	var c bytes.Buffer
	m2, err := g.rt.ExportEvidence(ctx, &c, &apitype.ExportEvidenceParams{SessionID: res.SessionID, TurnID: res.TurnID})
	if err != nil {
		t.Fatal(err)
	}
	names, _ = members(t, c.Bytes())
	for _, n := range names {
		if strings.HasPrefix(n, evidence.ArtifactPrefix) {
			t.Errorf("artifact %s exported without ArtifactContents", n)
		}
	}
	if m2.Counts.Artifacts != 0 || m2.Signals["artifact_contents"].Status != evidence.SignalNotApplicable {
		t.Errorf("without contents: %d artifacts, signal %+v", m2.Counts.Artifacts, m2.Signals["artifact_contents"])
	}
}

// TestExportEvidenceHealthOfItsTenant: a bundle's health.json is the
// exporting tenant's view. Another tenant's stuck runs, its pending
// approval and its queued task (the oldest in the queue) are in the
// runtime-wide health but nowhere in the bundle.
func TestExportEvidenceHealthOfItsTenant(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	acme := runtype.Owner{TenantID: "acme", PrincipalID: "mallory"}
	st, leased, unleased := stuckStoreOf(t, t0, acme)
	act := &runtype.Action{ID: runtype.NewIDGen(nil).New(runtype.PrefixAction), Owner: acme, SessionID: leased.SessionID,
		TurnID: leased.TurnID, Type: "tool_permission", Status: runtype.ActionPending, CreatedAt: t0, ExpiresAt: t0.Add(100 * time.Hour)}
	tx, err := st.Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Apply(context.Background(), &store.Batch{Actions: []*runtype.Action{act}}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	clock := &fakeClock{now: t0.Add(10 * time.Minute)}
	cfg := durableConfig(&brain{answer: callsOn("none")})
	cfg.Store, cfg.NoWorkers, cfg.Now = st, true, clock.Now
	rt := startDurable(t, cfg)
	res := submitTo(t, rt, apitype.SubmitTurnParams{Input: "mine"}) // queued: no workers

	ctx := context.Background()
	secrets := []string{"acme", "mallory", leased.ID, leased.TurnID, leased.SessionID, unleased.ID, unleased.TurnID, unleased.SessionID, act.ID}
	all, err := json.Marshal(rt.Health(ctx))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{leased.ID, unleased.ID, act.ID} { // the set-up is seen runtime-wide
		if !strings.Contains(string(all), s) {
			t.Fatalf("the runtime-wide health names no %s: %s", s, all)
		}
	}

	var buf bytes.Buffer
	if _, err := rt.ExportEvidence(ctx, &buf, &apitype.ExportEvidenceParams{SessionID: res.SessionID, TurnID: res.TurnID, Health: true}); err != nil {
		t.Fatal(err)
	}
	_, data := members(t, buf.Bytes())
	doc := data[evidence.HealthName]
	for _, s := range secrets {
		if strings.Contains(string(doc), s) {
			t.Errorf("health.json names %q of the other tenant: %s", s, doc)
		}
	}
	var h apitype.Health
	if err := json.Unmarshal(doc, &h); err != nil {
		t.Fatal(err)
	}
	// Its own tenant's view: nothing of its own is stuck or pending; the
	// queue counts its own waiting task alone (the other tenant's two
	// are due too), and the writer's counters, every tenant's, are left
	// out.
	if h.TenantID != apitype.DefaultTenant || h.StuckTotal != 0 || len(h.StuckRuns) != 0 || h.Approvals.Pending != 0 ||
		h.Queue.Depth != 1 || h.Queue.OldestTaskID != res.TaskID || h.Store.Writer != (apitype.WriterStats{}) {
		t.Errorf("health.json = %s, want the default tenant's view", doc)
	}
}

func sha256Sum(b []byte) []byte {
	s := sha256.Sum256(b)
	return s[:]
}

func TestExportEvidenceNotFound(t *testing.T) {
	t.Parallel()
	g := startGov(t, agentrt.Config{}, &model.Response{Text: "hi"})
	res, _ := g.submit(t, "one")
	other, _ := g.submit(t, "two")
	ctx := context.Background()
	for _, p := range []*apitype.ExportEvidenceParams{
		{SessionID: res.SessionID, TurnID: "turn_nope"},
		{SessionID: other.SessionID, TurnID: res.TurnID}, // a request of another session
		{SessionID: res.SessionID, TurnID: res.TurnID, Owner: runtype.Owner{TenantID: "other"}},
	} {
		if _, err := g.rt.ExportEvidence(ctx, io.Discard, p); !errors.Is(err, apitype.ErrNotFound) {
			t.Errorf("ExportEvidence(%+v) = %v, want ErrNotFound", p, err)
		}
	}
	var inv *apitype.InvalidError
	if _, err := g.rt.ExportEvidence(ctx, io.Discard, &apitype.ExportEvidenceParams{SessionID: res.SessionID}); !errors.As(err, &inv) {
		t.Errorf("no request id: %v, want an InvalidError", err)
	}
	// A turn without tool calls: the signals say what does not apply.
	m, err := g.rt.ExportEvidence(ctx, io.Discard, &apitype.ExportEvidenceParams{SessionID: res.SessionID, TurnID: res.TurnID})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"tool_calls", "policy_decisions", "approvals", "receipts", "artifact_contents"} {
		if m.Signals[s].Status != evidence.SignalNotApplicable {
			t.Errorf("signal %s = %+v, want not_applicable", s, m.Signals[s])
		}
	}
}
