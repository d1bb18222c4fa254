package agentrt

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/evidence"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/telemetry"
)

// EvidenceExport is a prepared evidence bundle: its manifest is final
// and evidence.changed is recorded; WriteTo writes the archive.
type EvidenceExport struct {
	manifest    *evidence.Manifest
	manifestSum string
	b           *evidence.Builder
}

// Manifest returns the bundle's manifest.
func (x *EvidenceExport) Manifest() *evidence.Manifest { return x.manifest }

// ManifestSHA256 returns the hex SHA-256 of the bundle's manifest.json.
func (x *EvidenceExport) ManifestSHA256() string { return x.manifestSum }

// WriteTo writes the bundle (a .tar.gz) to w. Artifact contents are read
// again as they are written; one that changed in between fails the
// write with evidence.ErrChanged.
func (x *EvidenceExport) WriteTo(w io.Writer) (int64, error) { return x.b.WriteTo(w) }

// ExportEvidence writes the evidence bundle of one request to w and
// records evidence.changed in its session. See PrepareEvidence.
func (rt *Runtime) ExportEvidence(ctx context.Context, w io.Writer, p *apitype.ExportEvidenceParams) (*evidence.Manifest, error) {
	x, err := rt.PrepareEvidence(ctx, p)
	if err != nil {
		return nil, err
	}
	if _, err := x.WriteTo(w); err != nil {
		return nil, fmt.Errorf("writing the evidence bundle: %w", err)
	}
	return x.manifest, nil
}

// PrepareEvidence reads everything a request's evidence bundle holds
// (docs/evidence.md), finishes its manifest, and records evidence.changed
// (with the bundle's id, its manifest's hash, its counts and who
// exported it) before a byte of the bundle is handed out. The bundle is
// a read: the same stored facts give a byte-identical bundle, and the
// evidence.changed events of earlier exports are not part of it.
//
// An unknown session or request, or a request of another session, is
// ErrNotFound.
func (rt *Runtime) PrepareEvidence(ctx context.Context, p *apitype.ExportEvidenceParams) (*EvidenceExport, error) {
	if !rt.running() {
		return nil, apitype.ErrStopped
	}
	owner := ownerOrDefault(p.Owner)
	switch {
	case p.SessionID == "":
		return nil, invalid("sessionId", "is required")
	case p.TurnID == "":
		return nil, invalid("requestId", "is required")
	}
	turn, err := rt.store.TurnGet(ctx, &store.TurnGetParams{TenantID: owner.TenantID, ID: p.TurnID})
	if err == nil && turn.SessionID != p.SessionID {
		err = store.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("reading request %s of session %s: %w", p.TurnID, p.SessionID, err)
	}
	x := &exporter{rt: rt, owner: owner, p: p, turn: turn, artifacts: map[string]artifactSource{},
		b: evidence.NewBuilder(turn.EndedAt)}
	if err := x.build(ctx); err != nil {
		return nil, err
	}
	m, raw, err := x.b.Finish(x.m)
	if err != nil {
		return nil, fmt.Errorf("finishing the evidence bundle: %w", err)
	}
	sum := sha256.Sum256(raw)
	out := &EvidenceExport{manifest: m, manifestSum: hex.EncodeToString(sum[:]), b: x.b}
	if err := rt.recordEvidence(ctx, owner, turn, out); err != nil {
		return nil, err
	}
	return out, nil
}

// recordEvidence writes evidence.changed for an export. Like every event
// outside a run, it belongs to the turn's span.
func (rt *Runtime) recordEvidence(ctx context.Context, owner runtype.Owner, turn *runtype.Turn, x *EvidenceExport) error {
	m := x.manifest
	e := rt.turnEvent(event.EvidenceChanged, turn, telemetry.TurnSpanID(turn.ID), &event.EvidencePayload{
		Change: "exported", PackRef: "evidence://" + turn.SessionID + "/" + turn.ThreadID + "/" + turn.ID,
		FormatVersion: m.FormatVersion, ManifestSHA256: x.manifestSum,
		Counts:           m.Counts,
		ArtifactContents: m.Scope.ArtifactContents, Health: m.Scope.Health, ExportedBy: owner.PrincipalID,
	})
	e.EvidenceID = m.BundleID
	if err := rt.writer.Write(context.WithoutCancel(ctx), &store.Batch{Events: []*event.Event{e}}); err != nil {
		return fmt.Errorf("recording evidence.changed: %w", err)
	}
	return nil
}

// exporter gathers one bundle.
type exporter struct {
	rt    *Runtime
	owner runtype.Owner
	p     *apitype.ExportEvidenceParams
	turn  *runtype.Turn
	b     *evidence.Builder
	m     evidence.Manifest

	events    []*event.Event
	artifacts map[string]artifactSource // by ref, with --artifact-contents
}

// artifactSource is where an artifact's content is: bytes in hand, or
// the output store.
type artifactSource struct {
	data []byte
	open func() (io.ReadCloser, error)
}

func (x *exporter) build(ctx context.Context) error {
	t := x.turn
	x.m = evidence.Manifest{
		RuntimeID: x.rt.runtimeID, AgentrtVersion: Version(),
		SchemaVersions: evidence.SchemaVersions{Event: event.SchemaVersion, Snapshot: event.SchemaVersion},
		TenantID:       x.owner.TenantID, SessionID: t.SessionID, ThreadID: t.ThreadID, TurnID: t.ID, TaskID: t.TaskID, TraceID: t.TraceID,
		Scope:   evidence.Scope{ArtifactContents: x.p.ArtifactContents, Health: x.p.Health},
		Signals: map[string]evidence.Signal{},
	}
	steps := []func(context.Context) error{
		x.request, x.readEvents, x.snapshots, x.decisions, x.approvals, x.toolCalls, x.receipts, x.providerResponses, x.replayCase, x.health, x.addArtifacts,
	}
	for _, step := range steps {
		if err := step(ctx); err != nil {
			return err
		}
	}
	for name, s := range x.m.Signals {
		if s.Status == evidence.SignalUnsupported || s.Status == evidence.SignalMissingCorrelation {
			x.m.KnownGaps = append(x.m.KnownGaps, name)
		}
	}
	slices.Sort(x.m.KnownGaps)
	return nil
}

func (x *exporter) signal(name string, s evidence.SignalStatus, reason string) {
	x.m.Signals[name] = evidence.Signal{Status: s, Reason: reason}
}

// requestDoc is request.json.
type requestDoc struct {
	RequestID      string             `json:"requestId"`
	TurnID         string             `json:"turnId"`
	SessionID      string             `json:"sessionId"`
	ThreadID       string             `json:"threadId"`
	TaskID         string             `json:"taskId"`
	RunIDs         []string           `json:"runIds"`
	TraceID        string             `json:"traceId,omitempty"`
	Owner          runtype.Owner      `json:"owner"`
	Agent          string             `json:"agent"`
	IdempotencyKey string             `json:"idempotencyKey,omitempty"`
	Input          string             `json:"input"`
	Status         runtype.TaskStatus `json:"status"`
	StatusReason   string             `json:"statusReason,omitempty"`
	Result         string             `json:"result,omitempty"`
	Failure        *runtype.Failure   `json:"failure,omitempty"`
	Usage          runtype.Usage      `json:"usage"`
	CreatedAt      *time.Time         `json:"createdAt,omitempty"`
	StartedAt      *time.Time         `json:"startedAt,omitempty"`
	EndedAt        *time.Time         `json:"endedAt,omitempty"`
}

func (x *exporter) request(ctx context.Context) error {
	t := x.turn
	runs, err := x.rt.store.RunList(ctx, &store.RunListParams{TenantID: x.owner.TenantID, TaskID: t.TaskID})
	if err != nil {
		return fmt.Errorf("listing the request's runs: %w", err)
	}
	x.m.RunIDs = []string{}
	for _, r := range runs {
		x.m.RunIDs = append(x.m.RunIDs, r.ID)
	}
	x.signal("request", evidence.SignalExported, "")
	return x.b.AddJSON(evidence.RequestName, requestDoc{
		RequestID: t.ID, TurnID: t.ID, SessionID: t.SessionID, ThreadID: t.ThreadID, TaskID: t.TaskID, RunIDs: x.m.RunIDs,
		TraceID: t.TraceID, Owner: t.Owner, Agent: t.Agent, IdempotencyKey: t.IdempotencyKey, Input: t.Input,
		Status: t.Status, StatusReason: t.StatusReason, Result: t.Result, Failure: t.Failure, Usage: t.Usage,
		CreatedAt: ts(t.CreatedAt), StartedAt: ts(t.StartedAt), EndedAt: ts(t.EndedAt),
	})
}

// readEvents adds events.jsonl: the request's events as stored, in cursor
// order, but for the evidence.changed of earlier exports.
func (x *exporter) readEvents(ctx context.Context) error {
	var buf bytes.Buffer
	f := event.Filter{TenantID: x.owner.TenantID, SessionID: x.turn.SessionID, TurnID: x.turn.ID}
	for cursor := int64(0); ; {
		page, err := x.rt.store.EventListAfter(ctx, &store.EventListAfterParams{Filter: f, AfterCursor: cursor, Limit: store.MaxListLimit})
		if err != nil {
			return fmt.Errorf("reading the request's events: %w", err)
		}
		for _, e := range page {
			if e.Type == event.EvidenceChanged {
				continue
			}
			line, err := e.JSON()
			if err != nil {
				return err
			}
			buf.Write(line)
			buf.WriteByte('\n')
			x.events = append(x.events, e)
		}
		if len(page) < store.MaxListLimit {
			break
		}
		cursor = page[len(page)-1].Cursor
	}
	x.m.Counts.Events = len(x.events)
	if n := len(x.events); n > 0 {
		x.m.TimeRange = evidence.TimeRange{First: ts(x.events[0].Timestamp), Last: ts(x.events[n-1].Timestamp)}
	}
	x.signal("events", evidence.SignalExported, "")
	return x.b.Add(evidence.EventsName, buf.Bytes())
}

func (x *exporter) snapshots(ctx context.Context) error {
	sess, err := x.rt.GetSession(ctx, x.owner, x.turn.SessionID)
	if err != nil {
		return fmt.Errorf("reading the session snapshot: %w", err)
	}
	thread, err := x.rt.GetThreadRead(ctx, x.owner, x.turn.SessionID, x.turn.ThreadID)
	if err != nil {
		return fmt.Errorf("reading the thread read model: %w", err)
	}
	x.signal("session_snapshot", evidence.SignalExported, "")
	x.signal("thread_snapshot", evidence.SignalExported, "")
	if err := x.b.AddJSON(evidence.SessionName, sess); err != nil {
		return err
	}
	return x.b.AddJSON(evidence.ThreadName, thread)
}

// decisions adds decisions.jsonl: the request's permission.evaluated and
// permission.resolved events, as in events.jsonl.
func (x *exporter) decisions(context.Context) error {
	var buf bytes.Buffer
	n := 0
	for _, e := range x.events {
		if e.Type != event.PermissionEvaluated && e.Type != event.PermissionResolved {
			continue
		}
		line, _ := e.JSON() // encoded by readEvents
		buf.Write(line)
		buf.WriteByte('\n')
		n++
	}
	x.m.Counts.Decisions = n
	x.exportedIf("policy_decisions", n > 0, "no tool call of the request reached the policy")
	return x.b.Add(evidence.DecisionsName, buf.Bytes())
}

func (x *exporter) exportedIf(name string, exported bool, whyNot string) {
	if exported {
		x.signal(name, evidence.SignalExported, "")
	} else {
		x.signal(name, evidence.SignalNotApplicable, whyNot)
	}
}

// approvals adds approvals.jsonl: the request's actions, oldest first,
// with their resolution.
func (x *exporter) approvals(ctx context.Context) error {
	var acts []*runtype.Action
	for before := ""; ; {
		page, err := x.rt.store.ActionList(ctx, &store.ActionListParams{
			TenantID: x.owner.TenantID, SessionID: x.turn.SessionID, TurnID: x.turn.ID, Limit: store.MaxListLimit, BeforeID: before,
		})
		if err != nil {
			return fmt.Errorf("listing the request's actions: %w", err)
		}
		acts = append(acts, page...)
		if len(page) < store.MaxListLimit {
			break
		}
		before = page[len(page)-1].ID
	}
	slices.SortFunc(acts, func(a, b *runtype.Action) int { return strings.Compare(a.ID, b.ID) })
	reads := make([]apitype.ActionRead, len(acts))
	for i, a := range acts {
		reads[i] = actionRead(a)
	}
	data, err := evidence.MarshalJSONL(reads)
	if err != nil {
		return err
	}
	x.m.Counts.Approvals = len(reads)
	x.exportedIf("approvals", len(reads) > 0, "no decision of the request asked a person")
	return x.b.Add(evidence.ApprovalsName, data)
}

// toolCallDoc is one line of tool-calls.jsonl.
type toolCallDoc struct {
	ToolCallID      string                 `json:"toolCallId"`
	RunID           string                 `json:"runId"`
	StepID          string                 `json:"stepId,omitempty"`
	Hop             int                    `json:"hop"`
	Name            string                 `json:"name"`
	Status          runtype.ToolCallStatus `json:"status"`
	Decision        string                 `json:"decision,omitempty"`
	IdempotencyKey  string                 `json:"idempotencyKey,omitempty"`
	ArgumentsSHA256 string                 `json:"argumentsSha256,omitempty"`
	// InputRef is "sha256:" and the hash of the arguments as the model
	// produced them (ArgumentsSHA256 is of their canonical form).
	InputRef   string `json:"inputRef"`
	InputBytes int64  `json:"inputBytes"`
	// OutputRef is the content ref of the call's whole output, and
	// OutputSource where the runtime keeps it: blob (the store), output_store
	// (spilled to disk), message (inline in the conversation), or none
	// (no output recorded: the call did not finish).
	OutputRef     string           `json:"outputRef,omitempty"`
	OutputBytes   int64            `json:"outputBytes"`
	OutputSource  string           `json:"outputSource"`
	ResultPreview string           `json:"resultPreview,omitempty"`
	Failure       *runtype.Failure `json:"failure,omitempty"`
	StartedAt     *time.Time       `json:"startedAt,omitempty"`
	EndedAt       *time.Time       `json:"endedAt,omitempty"`
	// InputMember and OutputMember name the contents in the bundle, with
	// --artifact-contents.
	InputMember  string `json:"inputMember,omitempty"`
	OutputMember string `json:"outputMember,omitempty"`
}

func contentRef(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func (x *exporter) toolCalls(ctx context.Context) error {
	tenant := x.owner.TenantID
	calls, err := x.rt.store.ToolCallList(ctx, &store.ToolCallListParams{TenantID: tenant, SessionID: x.turn.SessionID, TurnID: x.turn.ID})
	if err != nil {
		return fmt.Errorf("listing the request's tool calls: %w", err)
	}
	var inline map[string]string // tool call id → the output in its message
	if len(calls) > 0 {
		msgs, err := x.rt.store.MessageList(ctx, &store.MessageListParams{TenantID: tenant, ThreadID: x.turn.ThreadID})
		if err != nil {
			return fmt.Errorf("listing the thread's messages: %w", err)
		}
		inline = map[string]string{}
		for _, m := range msgs {
			if m.Role == runtype.RoleTool && m.TurnID == x.turn.ID {
				inline[m.ToolCallID] = m.Content
			}
		}
	}
	docs := make([]toolCallDoc, 0, len(calls))
	missing := 0
	for _, c := range calls {
		d := toolCallDoc{
			ToolCallID: c.ID, RunID: c.RunID, StepID: c.StepID, Hop: c.Hop, Name: c.Name, Status: c.Status, Decision: c.Decision,
			IdempotencyKey: c.IdempotencyKey, ArgumentsSHA256: c.ArgumentsSHA256,
			InputRef: contentRef([]byte(c.Arguments)), InputBytes: int64(len(c.Arguments)),
			OutputBytes: c.OutputBytes, ResultPreview: c.ResultPreview, Failure: c.Failure, StartedAt: ts(c.StartedAt), EndedAt: ts(c.EndedAt),
		}
		d.InputMember = x.artifact(d.InputRef, artifactSource{data: []byte(c.Arguments)})
		switch content, ok := inline[c.ID]; {
		case c.OutputRef != "":
			d.OutputRef = c.OutputRef
			src, where, err := x.rt.findContent(ctx, tenant, c.OutputRef)
			if err != nil {
				return err
			}
			if where == "" {
				missing++
				d.OutputSource = "missing"
				break
			}
			d.OutputSource = where
			d.OutputMember = x.artifact(c.OutputRef, src)
		case ok:
			d.OutputRef, d.OutputSource = contentRef([]byte(content)), "message"
			d.OutputMember = x.artifact(d.OutputRef, artifactSource{data: []byte(content)})
		default:
			d.OutputSource = "none"
		}
		docs = append(docs, d)
	}
	data, err := evidence.MarshalJSONL(docs)
	if err != nil {
		return err
	}
	x.m.Counts.ToolCalls = len(docs)
	x.exportedIf("tool_calls", len(docs) > 0, "the request called no tool")
	switch {
	case len(docs) == 0:
		x.signal("artifact_contents", evidence.SignalNotApplicable, "the request called no tool")
	case missing > 0:
		x.signal("artifact_contents", evidence.SignalMissingCorrelation, fmt.Sprintf("%d tool outputs are no longer stored under their refs", missing))
	case !x.p.ArtifactContents:
		x.signal("artifact_contents", evidence.SignalNotApplicable, "not asked for (artifact contents are exported on request)")
	default:
		x.signal("artifact_contents", evidence.SignalExported, "")
	}
	return x.b.Add(evidence.ToolCallsName, data)
}

// artifact notes content to export under ref, with --artifact-contents,
// and returns its member name ("" without).
func (x *exporter) artifact(ref string, src artifactSource) string {
	if !x.p.ArtifactContents {
		return ""
	}
	name, ok := evidence.ArtifactName(ref)
	if !ok {
		return ""
	}
	if _, dup := x.artifacts[ref]; !dup {
		x.artifacts[ref] = src
	}
	return name
}

// findContent finds a content ref: a blob of the store, or a file of the
// output store. where is "" when neither holds it.
func (rt *Runtime) findContent(ctx context.Context, tenant, ref string) (src artifactSource, where string, err error) {
	blob, err := rt.store.BlobGet(ctx, &store.BlobGetParams{TenantID: tenant, Ref: ref})
	switch {
	case err == nil:
		return artifactSource{data: blob.Data}, "blob", nil
	case !errors.Is(err, store.ErrNotFound):
		return artifactSource{}, "", fmt.Errorf("reading blob %s: %w", ref, err)
	}
	if rt.outputs == nil {
		return artifactSource{}, "", nil
	}
	rc, err := rt.outputs.Open(ref)
	if err != nil {
		return artifactSource{}, "", nil // not there (or not a ref the output store keeps)
	}
	rc.Close()
	outputs := rt.outputs
	return artifactSource{open: func() (io.ReadCloser, error) { return outputs.Open(ref) }}, "output_store", nil
}

// receipts adds receipts.jsonl: the session's chain from its first
// receipt to the last one sealing an event of the request (or, when none
// does, to the last one made by the request's end), so that it verifies
// from the start.
func (x *exporter) receipts(ctx context.Context) error {
	var all []*runtype.Receipt
	for after := int64(0); ; {
		page, err := x.rt.store.ReceiptList(ctx, &store.ReceiptListParams{TenantID: x.owner.TenantID, SessionID: x.turn.SessionID, AfterSeq: after, Limit: store.MaxListLimit})
		if err != nil {
			return fmt.Errorf("reading the session's receipts: %w", err)
		}
		all = append(all, page...)
		if len(page) < store.MaxListLimit {
			break
		}
		after = page[len(page)-1].Seq
	}
	mine := map[string]bool{}
	sealed := 0
	for _, e := range x.events {
		if store.Sealed(e.Type) {
			mine[e.EventID] = true
			sealed++
		}
	}
	cut, covered := 0, 0
	for i, r := range all {
		if mine[r.EventID] {
			cut, covered = i+1, covered+1
		}
	}
	if covered == 0 && x.m.TimeRange.Last != nil {
		for i, r := range all {
			if !r.CreatedAt.After(*x.m.TimeRange.Last) {
				cut = i + 1
			}
		}
	}
	lines := make([]evidence.Receipt, cut)
	for i, r := range all[:cut] {
		lines[i] = evidence.ReceiptOf(r)
	}
	data, err := evidence.MarshalJSONL(lines)
	if err != nil {
		return err
	}
	x.m.Counts.Receipts = cut
	if cut > 0 {
		x.m.ReceiptHead = all[cut-1].Hash
	}
	switch {
	case sealed == 0:
		x.signal("receipts", evidence.SignalNotApplicable, "the request recorded no sealed event")
	case covered < sealed:
		x.signal("receipts", evidence.SignalMissingCorrelation, fmt.Sprintf("%d of the request's %d sealed events have no receipt (recorded before receipts existed)", sealed-covered, sealed))
	default:
		x.signal("receipts", evidence.SignalExported, "")
	}
	return x.b.Add(evidence.ReceiptsName, data)
}

// providerResponseDoc is one line of provider-responses.jsonl: a model
// call of the request and its raw response.
type providerResponseDoc struct {
	EventID  string            `json:"eventId"`
	RunID    string            `json:"runId,omitempty"`
	StepID   string            `json:"stepId,omitempty"`
	Hop      int               `json:"hop"`
	Provider event.ProviderRef `json:"provider"`
	// Status is recorded (RawResponseRef names the raw response),
	// not_recorded (the provider adapter kept none) or missing (the ref's
	// content is no longer stored).
	Status         string `json:"status"`
	RawResponseRef string `json:"rawResponseRef,omitempty"`
	Member         string `json:"member,omitempty"`
}

func (x *exporter) providerResponses(ctx context.Context) error {
	var docs []providerResponseDoc
	recorded, missing := 0, 0
	for _, e := range x.events {
		if e.Type != event.ModelCompleted {
			continue
		}
		d := providerResponseDoc{EventID: e.EventID, RunID: e.RunID, StepID: e.StepID, Status: "not_recorded", RawResponseRef: e.Refs["rawResponse"]}
		if mc, ok := e.Payload.(*event.ModelCompletedPayload); ok {
			d.Hop, d.Provider = mc.Hop, mc.Provider
		}
		if d.RawResponseRef != "" {
			src, where, err := x.rt.findContent(ctx, x.owner.TenantID, d.RawResponseRef)
			if err != nil {
				return err
			}
			if where == "" {
				d.Status = "missing"
				missing++
			} else {
				d.Status = "recorded"
				recorded++
				d.Member = x.artifact(d.RawResponseRef, src)
			}
		}
		docs = append(docs, d)
	}
	data, err := evidence.MarshalJSONL(docs)
	if err != nil {
		return err
	}
	x.m.Counts.ProviderResponses = len(docs)
	n := len(docs)
	switch {
	case n == 0:
		x.signal("provider_raw_responses", evidence.SignalNotApplicable, "the request made no completed model call")
	case missing > 0:
		x.signal("provider_raw_responses", evidence.SignalMissingCorrelation, fmt.Sprintf("%d of %d raw responses are no longer stored", missing, n))
	case recorded < n:
		x.signal("provider_raw_responses", evidence.SignalUnsupported, fmt.Sprintf("the provider adapter kept no raw response for %d of %d model calls", n-recorded, n))
	default:
		x.signal("provider_raw_responses", evidence.SignalExported, "")
	}
	return x.b.Add(evidence.ProviderResponsesName, data)
}

// replayCase adds the request as a replay case: what agentrt replay
// re-runs from the bundle. It holds the model's text and the tools'
// exact arguments, so, like artifact contents, only on request. A
// request that cannot be replayed (it never reached a model) is
// not_applicable.
func (x *exporter) replayCase(ctx context.Context) error {
	if !x.p.ArtifactContents {
		x.signal("replay_case", evidence.SignalNotApplicable, "not asked for (the replay case holds contents: it is exported with artifact contents)")
		return nil
	}
	c, err := x.rt.ReplayCase(ctx, x.owner, x.turn.SessionID, x.turn.ID)
	if err != nil {
		return fmt.Errorf("building the replay case: %w", err)
	}
	if len(c.ModelOutputs) == 0 {
		x.signal("replay_case", evidence.SignalNotApplicable, "the request recorded no model output to replay")
		return nil
	}
	x.signal("replay_case", evidence.SignalExported, "")
	return x.b.AddJSON(evidence.ReplayCaseName, c)
}

func (x *exporter) health(ctx context.Context) error {
	if !x.p.Health {
		x.signal("health", evidence.SignalNotApplicable, "not asked for (the health snapshot is exported on request)")
		return nil
	}
	x.signal("health", evidence.SignalExported, "")
	// The bundle leaves the runtime: only the exporting tenant's view.
	return x.b.AddJSON(evidence.HealthName, x.rt.health(ctx, x.owner.TenantID))
}

// addArtifacts adds the noted artifacts, in ref order.
func (x *exporter) addArtifacts(context.Context) error {
	refs := make([]string, 0, len(x.artifacts))
	for ref := range x.artifacts {
		refs = append(refs, ref)
	}
	slices.Sort(refs)
	for _, ref := range refs {
		name, _ := evidence.ArtifactName(ref)
		src := x.artifacts[ref]
		var err error
		if src.open != nil {
			err = x.b.AddReader(name, src.open)
		} else {
			err = x.b.Add(name, src.data)
		}
		if err != nil {
			return err
		}
	}
	x.m.Counts.Artifacts = len(refs)
	return nil
}
