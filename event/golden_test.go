package event

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/internal/spectest"
	"github.com/agentrt/agentrt/runtype"
)

var update = flag.Bool("update", false, "write the golden events of goldenEvents that testdata/ lacks (existing ones are never rewritten)")

// TestGolden decodes every stored event in testdata/ and re-encodes it.
//
// The goldens are the compatibility contract of the persisted encoding:
// they stand for events older agentrt versions wrote to event logs, which
// every later version must read back unchanged. So -update only adds
// missing files and never rewrites one. A change that stops an old golden
// from decoding into its typed payload, or from re-encoding to the same
// bytes, breaks stored logs: make the change compatible instead of
// editing the golden. Goldens are indented for review; "the same bytes"
// means the same as the golden with its insignificant whitespace removed.
func TestGolden(t *testing.T) {
	t.Parallel()
	if *update {
		writeMissingGoldens(t)
	}
	paths, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	var (
		kinds   = map[reflect.Type]bool{} // payload kinds the goldens cover
		haveFor = map[Type]bool{}
	)
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		e, err := Decode(data)
		if err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		kinds[reflect.TypeOf(e.Payload)] = true
		haveFor[e.Type] = true
		t.Run(filepath.Base(path), func(t *testing.T) {
			t.Parallel()
			checkGolden(t, path, data, e)
		})
	}
	for _, e := range goldenEvents() {
		if !haveFor[e.Type] {
			t.Errorf("no golden for %s: run go test ./event -run Golden -update", e.Type)
		}
	}
	for _, k := range payloadKinds() {
		if !kinds[k] {
			t.Errorf("no golden decodes to %v: add an example to goldenEvents and run with -update", k)
		}
	}
}

func checkGolden(t *testing.T, path string, data []byte, e *Event) {
	// TYPE.json, or TYPE+VARIANT.json for another shape of the same type
	// (a schedule's job.created, say).
	if base, want := filepath.Base(path), string(e.Type)+".json"; base != want && !strings.HasPrefix(base, string(e.Type)+"+") {
		t.Errorf("%s holds a %s event; name it %s (or %s+VARIANT.json)", path, e.Type, want, e.Type)
	}
	if !e.Type.Valid() {
		t.Errorf("type %q is not one of the standard's", e.Type)
	}
	if want, got := reflect.TypeOf(kindOf(e.Type)), reflect.TypeOf(e.Payload); got != want {
		t.Errorf("payload decoded into %v, want %v", got, want)
	}
	// Decode cached data as the encoding; drop it to encode afresh.
	e.raw.Store(nil)
	got, err := e.JSON()
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if err := json.Compact(&want, data); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want.Bytes()) {
		t.Errorf("re-encoding differs from the golden\n got: %s\nwant: %s", got, want.Bytes())
	}
	spectest.Event(t, data)
}

// kindOf is the payload value Decode produces for t.
func kindOf(t Type) Payload {
	if p := payloadFor(t); p != nil {
		return p
	}
	return RawPayload(nil)
}

// payloadKinds returns every payload type Decode can produce.
func payloadKinds() []reflect.Type {
	seen := map[reflect.Type]bool{}
	var kinds []reflect.Type
	for typ := range known {
		k := reflect.TypeOf(kindOf(typ))
		if !seen[k] {
			seen[k] = true
			kinds = append(kinds, k)
		}
	}
	slices.SortFunc(kinds, func(a, b reflect.Type) int { return strings.Compare(a.String(), b.String()) })
	return kinds
}

func writeMissingGoldens(t *testing.T) {
	t.Helper()
	for _, e := range goldenEvents() {
		path := filepath.Join("testdata", string(e.Type)+".json")
		if _, err := os.Stat(path); err == nil {
			continue
		} else if !errors.Is(err, fs.ErrNotExist) {
			t.Fatal(err)
		}
		raw, err := e.JSON()
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if err := json.Indent(&out, raw, "", "  "); err != nil {
			t.Fatal(err)
		}
		out.WriteByte('\n')
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s", path)
	}
}

// Identifiers shared by the golden events: one session whose turn runs a
// tool, the way the support example does.
const (
	gRuntime = "rt_01M7Z5JBXWX31QFZG10278CK86"
	gSession = "ses_01M7Z5ME2WKDB1TY0EY7JVQT1K"
	gThread  = "thr_01M7Z5ME2WKDB1TY0EY7JVQT1M"
	gTurn    = "turn_01M7Z5ME2WKDB1TY0EY7JVQT1Q"
	gTask    = "task_01M7Z5ME2WKDB1TY0EY7JVQT1R"
	gRun     = "run_01M7Z5ME30GPETVGA3GK813TZY"
	gStep    = "step_01M7Z5ME32P0CXAM9F73Q9B2YN"
	gCall    = "call_01M7Z5ME30GPETVGA3GK813V05"
	gTrace   = "05990a8f54167dea179853ce52c5479f"
	gSpan    = "fd0847e10dac1843"
	gArgsSHA = "2b634eada53fcdec22125302b610d2f5a639d45b86bab3b66bd6667818cba6e5"
)

// gEvent is an event of the golden session at sequence seq.
func gEvent(typ Type, seq int64, p Payload) *Event {
	return &Event{
		Type:          typ,
		EventID:       fmt.Sprintf("evt_01M7Z5ME30GPETVGA3GK8%05d", seq),
		Timestamp:     time.Date(2026, 11, 21, 13, 44, 47, 968971152, time.UTC).Add(time.Duration(seq) * time.Millisecond),
		SchemaVersion: "agentruntime-0.4.0", // the version the goldens were written with
		RuntimeID:     gRuntime,
		Sequence:      seq,
		SessionID:     gSession,
		ThreadID:      gThread,
		TraceID:       gTrace,
		Payload:       p,
	}
}

// gTurnEvent is gEvent for an event of the golden turn.
func gTurnEvent(typ Type, seq int64, p Payload) *Event {
	e := gEvent(typ, seq, p)
	e.TurnID, e.TaskID = gTurn, gTask
	return e
}

// gRunEvent is gEvent for an event of the golden turn's run.
func gRunEvent(typ Type, seq int64, p Payload) *Event {
	e := gTurnEvent(typ, seq, p)
	e.RunID, e.AttemptID, e.SpanID = gRun, gRun, gSpan
	return e
}

// goldenEvents are the examples -update writes, one or more per payload
// kind, with every field of the payload set where the runtime sets it.
func goldenEvents() []*Event {
	sessionCreated := gEvent(SessionCreated, 1, &SessionPayload{Agent: "support"})
	sessionCreated.TraceID = ""
	sessionUpdated := gEvent(SessionUpdated, 40, &SessionPayload{Agent: "support", Title: "Where is order 1042?"})
	threadStarted := gEvent(ThreadStarted, 2, &ThreadPayload{Agent: "support"})
	threadStarted.TraceID = ""

	turnSubmitted := gTurnEvent(TurnSubmitted, 3, &TurnPayload{
		Status: runtype.StatusAccepted, Agent: "support", Source: "cli",
		InputPreview: "Where is order 1042?", IdempotencyKey: "req-1042",
	})
	turnCompleted := gRunEvent(TurnCompleted, 32, &TurnPayload{
		Status: runtype.StatusCompleted, Agent: "support",
		ResultPreview: "Order 1042 is delayed: it is 9 days past its promised date.",
		Usage:         &runtype.Usage{InputTokens: 2653, CachedInputTokens: 1200, OutputTokens: 195},
		Hops:          4, DurationMs: 318,
	})
	turnCompleted.Status = "completed"
	turnFailed := gRunEvent(TurnFailed, 33, &TurnPayload{
		Status: runtype.StatusFailed, Agent: "support", Reason: "no_completion",
		Failure: &runtype.Failure{Kind: runtype.FailureNoCompletion, Message: "the model replied twice without calling complete_task"},
		Usage:   &runtype.Usage{InputTokens: 20, OutputTokens: 4}, Hops: 2, DurationMs: 12,
	})
	turnFailed.Status, turnFailed.StatusReason = "failed", "no_completion"

	taskWaiting := gRunEvent(TaskWaiting, 20, &TaskPayload{
		Status: runtype.StatusWaitingPermission, Objective: "Where is order 1042?", Reason: "approval_required",
	})
	taskWaiting.Status, taskWaiting.StatusReason = "waiting_permission", "approval_required"
	taskWaiting.ActionID = "act_01M7Z5ME399Y0NDSXSN8VEWD18"
	taskFailed := gRunEvent(TaskFailed, 31, &TaskPayload{
		Status: runtype.StatusFailed, Reason: "script_exhausted", ResultPreview: "partial",
		Failure: &runtype.Failure{Kind: runtype.FailureScriptExhausted, Message: "replay script \"s.yaml\" has no response 2 for this session (it holds 1)"},
	})
	taskFailed.Status, taskFailed.StatusReason = "failed", "script_exhausted"

	attemptFailed := gRunEvent(TaskAttemptFailed, 30, &AttemptPayload{
		Attempt: 1, Status: runtype.StatusFailed, FailureCategory: "model_error", Retryable: true,
		Failure: &runtype.Failure{Kind: runtype.FailureModel, Message: "provider unavailable", Retryable: true},
	})

	nextAt := time.Date(2026, 11, 24, 21, 0, 2, 0, time.UTC)
	taskRetrying := gRunEvent(TaskRetrying, 33, &TaskPayload{
		Status: runtype.StatusRetrying, Reason: "model_error", Attempt: 2, NextAttemptAt: &nextAt,
		Failure: &runtype.Failure{Kind: runtype.FailureModel, Message: "provider unavailable", Retryable: true},
	})
	taskRetrying.Status, taskRetrying.StatusReason = "retrying", "model_error"
	taskLost := gRunEvent(TaskLost, 34, &TaskPayload{
		Status: runtype.StatusLost, Reason: "worker_lost", Attempt: 1,
		Failure: &runtype.Failure{Kind: runtype.FailureLost, Message: "attempt 1 stopped without a recorded end: its worker rt_1/4242-9f86d081 stopped renewing its lease", Retryable: true},
	})
	taskLost.Status, taskLost.StatusReason = "lost", "worker_lost"
	queueChanged := gTurnEvent(QueueChanged, 35, &QueuePayload{Change: "enqueued", TurnID: "turn_01M7Z5ME3A6K4RQ2TS1YQ8E0WZ", Queued: []QueuedTurn{
		{TurnID: "turn_01M7Z5ME3A6K4RQ2TS1YQ8E0WZ", TaskID: "task_01M7Z5ME3A9D1K3V2J0N5R7B4C", QueuedAt: nextAt},
	}})
	queueChanged.QueueID = queueChanged.ThreadID

	catalog := gRunEvent(ToolCatalogResolved, 9, &ToolCatalogPayload{Tools: []ToolSummary{
		{Name: "lookup_order", Source: "command", ReadOnly: true, Idempotent: true},
		{Name: "open_ticket", Source: "command", Idempotent: true},
		{Name: "delete_ticket", Source: "go", Destructive: true},
		{Name: "complete_task", Source: "builtin", Idempotent: true},
	}})

	modelRequested := gRunEvent(ModelRequested, 10, &ModelRequestedPayload{
		Provider: ProviderRef{Kind: "replay", Model: "support-triage-v1"}, Hop: 1, Attempt: 1, MessageCount: 3, ToolCount: 4,
		Context: &ContextFingerprint{ThreadID: gThread, Messages: [][2]int64{{57, 57}, {41, 56}, {58, 59}}, MessageCount: 19,
			InstructionsRef: "sha256:5f2c", ToolsRef: "sha256:9a0e", BoundaryID: "ctx_01M7Z5ME30GPETVGA3GK813V09",
			EstimatedTokens: 6120, Hash: "sha256:c0ffee"},
	})
	modelRequested.StepID, modelRequested.SpanID = "step_01M7Z5ME30GPETVGA3GK813V03", "7301e5beab42f141"
	modelCompleted := gRunEvent(ModelCompleted, 11, &ModelCompletedPayload{
		Status: "tool_request", Intent: "lookup", AssistantMessage: "Let me look up order 1042.",
		RequestedTools: []RequestedTool{{ToolCallID: gCall, Name: "lookup_order"}},
		Provider:       ProviderRef{Kind: "replay", Model: "support-triage-v1"}, FinishReason: "tool_calls",
		Usage: runtype.Usage{InputTokens: 412, CachedInputTokens: 100, OutputTokens: 31}, Hop: 1, LatencyMs: 7,
	})
	modelCompleted.StepID, modelCompleted.SpanID = "step_01M7Z5ME30GPETVGA3GK813V03", "7301e5beab42f141"
	modelCompleted.Refs = map[string]string{"rawResponse": "sha256:dd42a9d077dae4b751ca9333a371fb62a4be84217b74a2e1dc38881df594cd31"}
	modelFailed := gRunEvent(ModelFailed, 17, &ModelFailedPayload{
		Provider: ProviderRef{Kind: "replay"}, Hop: 2, Attempt: 1, Kind: "rate_limit",
		Message: "rate limited; retry after 1.5s", Retryable: true, RetryAfterMs: 1500, WillRetry: true,
	})
	modelFailed.StepID = "step_01M7Z5ME399Y0NDSXSN8VEWD15"

	permission := gRunEvent(PermissionEvaluated, 12, &PermissionPayload{ToolName: "lookup_order", Hop: 1})
	permission.StepID, permission.ToolCallID = gStep, gCall
	permission.PermissionDecision = &PermissionDecision{
		Decision: "allow", Source: "rule", RuleIDs: []string{"read-only-tools", "support-hours"},
		ReasonCode: "rule_matched", Message: "read-only tools are always allowed",
		ToolName: "lookup_order", ArgumentsSHA256: gArgsSHA,
	}

	toolStarted := gRunEvent(ToolStarted, 13, &ToolStartedPayload{
		Name: "lookup_order", Hop: 1, ArgumentsPreview: `{"order_id":"1042"}`, ArgumentsSHA256: gArgsSHA,
		IdempotencyKey: gSession + "/" + gCall, ReadOnly: true, Destructive: false, Idempotent: true,
	})
	toolStarted.StepID, toolStarted.ToolCallID = gStep, gCall
	toolProgress := gRunEvent(ToolProgress, 61, &ToolProgressPayload{ToolName: "everything__trigger-long-running-operation", Progress: 2, Total: 5, Message: "step 2 of 5"})
	toolProgress.StepID, toolProgress.ToolCallID = gStep, gCall
	toolResult := gRunEvent(ToolResult, 14, &ToolResultPayload{
		Name: "lookup_order", Preview: `{"order_id":"1042","status":"in_transit","carrier":"Parcelo"}`,
		Bytes: 4096, Truncated: true, DurationMs: 9,
	})
	toolResult.StepID, toolResult.ToolCallID = gStep, gCall
	toolResult.OutputRef = "blob:sha256:9f2c4e0b7d1a3c5e8f60718293a4b5c6d7e8f9012a3b4c5d6e7f8091a2b3c4d5"
	toolFailed := gRunEvent(ToolFailed, 15, &ToolResultPayload{
		Name: "read_file", IsError: true, Preview: "open missing.md: no such file or directory", Bytes: 42, DurationMs: 0,
		Failure: &runtype.Failure{Kind: runtype.FailureToolError, Message: "open missing.md: no such file or directory"},
	})
	toolFailed.StepID, toolFailed.ToolCallID = gStep, gCall

	actionRequired := gRunEvent(ActionRequired, 19, &ActionPayload{
		ActionType: "tool_permission", Prompt: "Allow open_ticket for order 1042?", ToolName: "open_ticket",
		Decisions: []string{"allow", "deny"},
	})
	actionRequired.ActionID, actionRequired.ToolCallID = "act_01M7Z5ME399Y0NDSXSN8VEWD18", gCall

	expires := time.Date(2026, 5, 12, 10, 0, 3, 0, time.UTC)
	permissionRequested := gRunEvent(PermissionRequested, 20, &PermissionPayload{ToolName: "open_ticket", Hop: 1})
	permissionRequested.StepID, permissionRequested.ToolCallID = gStep, gCall
	permissionRequested.ActionID = "act_01M7Z5ME399Y0NDSXSN8VEWD18"
	permissionRequested.PermissionDecision = &PermissionDecision{
		Decision: "ask", Source: "rule", RuleIDs: []string{"urgent-tickets"},
		RuleRefs:   []RuleRef{{ID: "urgent-tickets", Tier: "workspace", Source: "policy/workspace.yaml:4"}},
		ReasonCode: "urgent_ticket", Message: "urgent tickets page the on-call team", ToolName: "open_ticket",
		ArgumentsSHA256: gArgsSHA, Mode: "default", ApprovalActionID: "act_01M7Z5ME399Y0NDSXSN8VEWD18", ExpiresAt: &expires,
	}
	actionResolved := gRunEvent(ActionResolved, 41, &ActionPayload{
		ActionType: "tool_permission", Prompt: "Allow open_ticket for order 1042?", ToolName: "open_ticket",
		Status: "denied", Decision: "deny", Message: "use priority high instead", ResolvedBy: "alice",
	})
	actionResolved.ActionID, actionResolved.ToolCallID = "act_01M7Z5ME399Y0NDSXSN8VEWD18", gCall
	permissionResolved := gRunEvent(PermissionResolved, 42, &PermissionPayload{ToolName: "open_ticket", Hop: 1})
	permissionResolved.ActionID, permissionResolved.ToolCallID = "act_01M7Z5ME399Y0NDSXSN8VEWD18", gCall
	permissionResolved.PermissionDecision = &PermissionDecision{
		Decision: "allow", Source: "human", ReasonCode: "approved_by_human", ToolName: "open_ticket",
		ArgumentsSHA256: gArgsSHA, ApprovalActionID: "act_01M7Z5ME399Y0NDSXSN8VEWD18", ResolvedBy: "alice",
		UpdatedInputSHA256: "5b1e0fa2a3c7d9e1f0a2b4c6d8e0f1a3b5c7d9e1f3a5b7c9d1e3f5a7b9c1d3e5",
	}
	policyChanged := gEvent(PolicyChanged, 43, &PolicyChangedPayload{Mode: "read_only", PreviousMode: "default", ChangedBy: "alice"})

	warning := gRunEvent(RuntimeWarning, 16, &DiagnosticPayload{
		Code: "completion_required", Message: "the model replied without calling complete_task; it gets one more hop with a reminder",
	})

	contextResolved := gRunEvent(ContextResolved, 4, &ContextResolvedPayload{
		Source: ContextSourceMemory, Query: "Where is order 1042?",
		MemoryIDs: []string{"mem_01M7Z5ME2ZQ6D1F4QY3S8W4X4A", "mem_01M7Z5ME2ZQ6D1F4QY3S8W4X4B"}, MessageSeq: 7,
	})

	// An event agentrt keeps undecoded: other runtimes' payloads of types
	// agentrt does not produce survive a round trip as they were.
	artifact := gRunEvent(ArtifactChanged, 35, RawPayload(`{"artifactId":"art_1","kind":"file","path":"tickets/T-1042.json"}`))

	delta := gRunEvent(ModelDelta, 36, &DeltaPayload{Hop: 1, Candidate: "fast", Text: "Let me look up"})
	delta.StepID = "step_01M7Z5ME30GPETVGA3GK813V03"
	reasoningDelta := gRunEvent(ReasoningDelta, 37, &DeltaPayload{Hop: 1, Candidate: "fast", Text: "The customer asks about"})
	reasoningDelta.StepID = "step_01M7Z5ME30GPETVGA3GK813V03"
	reasoningSummary := gRunEvent(ReasoningSummary, 38, &DeltaPayload{Hop: 1, Candidate: "fast", Text: "Look the order up first."})
	reasoningSummary.StepID = "step_01M7Z5ME30GPETVGA3GK813V03"

	profile := gRunEvent(TaskProfileResolved, 5, &TaskProfilePayload{
		TaskKind: "support", Source: "agent_config", RequiredCapabilities: []string{"tools"},
		MinContextWindow: 32000, Preference: "cost", FallbackPolicy: "next_candidate",
	})
	candidates := gRunEvent(RoutingCandidatesResolved, 6, &CandidateSetPayload{
		CandidateCount: 2,
		Candidates: []CandidateInfo{
			{Name: "fast", Provider: "openai_chat", Model: "gpt-4.1-mini", Capabilities: []string{"tools", "streaming"},
				ContextWindow: 1047576, Price: &PriceInfo{InputPerMTok: 0.4, CachedInputPerMTok: 0.1, OutputPerMTok: 1.6}, TypicalLatencyMs: 800},
			{Name: "careful", Provider: "anthropic_messages", Model: "claude-sonnet-4-5", Capabilities: []string{"tools", "vision", "streaming"},
				ContextWindow: 200000, Price: &PriceInfo{InputPerMTok: 3, OutputPerMTok: 15}},
		},
		Excluded: []CandidateExclusion{{Candidate: "local", Reason: "context window 8192 is below the required 32000", Gap: "context_window"}},
	})
	decided := gRunEvent(RoutingDecided, 7, &RoutingPayload{
		RoutingMode: "auto", DecisionSource: "task_profile",
		DecisionReason:    "cheapest of 2 eligible candidates (fast: $0.4/M input, $1.6/M output); excluded: local",
		SelectedCandidate: "fast", SelectedProvider: "openai_chat", SelectedModel: "gpt-4.1-mini",
		CandidateCount: 2, FallbackChain: []string{"careful"}, CapabilityGap: "none",
	})
	single := gRunEvent(RoutingSingleCandidate, 7, &RoutingPayload{
		RoutingMode: "single", DecisionSource: "explicit_default", DecisionReason: "the agent declares a single candidate",
		SelectedCandidate: "default", SelectedProvider: "replay", SelectedModel: "support-triage-v1",
		CandidateCount: 1, CapabilityGap: "none",
	})
	notPossible := gRunEvent(RoutingNotPossible, 7, &RoutingPayload{
		RoutingMode: "auto", DecisionSource: "task_profile", DecisionReason: "no candidate meets the task profile: vision",
		CandidateCount: 0, CapabilityGap: "vision", RequiresUserOverride: true,
	})
	fallback := gRunEvent(RoutingFallbackApplied, 18, &RoutingPayload{
		RoutingMode: "fallback", DecisionSource: "fallback", DecisionReason: "fast failed with rate_limit; falling back to careful",
		SelectedCandidate: "careful", SelectedProvider: "anthropic_messages", SelectedModel: "claude-sonnet-4-5",
		CandidateCount: 2, CapabilityGap: "none", FromCandidate: "fast", FailureKind: "rate_limit", Hop: 2,
	})
	fallback.StepID = "step_01M7Z5ME399Y0NDSXSN8VEWD15"
	estimated := gRunEvent(CostEstimated, 8, &CostPayload{
		Hop: 1, Candidate: "fast", Provider: "openai_chat", Model: "gpt-4.1-mini", Currency: "USD", Priced: true,
		EstimatedInputTokens: 412, EstimatedOutputTokens: 1024, CostUSD: 0.0018032,
	})
	estimated.StepID = "step_01M7Z5ME30GPETVGA3GK813V03"
	recorded := gRunEvent(CostRecorded, 34, &CostPayload{
		Hop: 1, Candidate: "fast", Provider: "openai_chat", Model: "gpt-4.1-mini-2025-04-14", Currency: "USD", Priced: true,
		Usage:   &runtype.Usage{InputTokens: 412, CachedInputTokens: 100, OutputTokens: 31, CostUSD: 0.0001844},
		CostUSD: 0.0001844, TurnCostUSD: 0.0001844,
	})
	recorded.StepID = "step_01M7Z5ME30GPETVGA3GK813V03"
	rateLimit := gRunEvent(RateLimitHit, 17, &RateLimitPayload{
		Hop: 2, Candidate: "fast", Provider: "openai_chat", Model: "gpt-4.1-mini", StatusCode: 429, Code: "rate_limit_exceeded",
		RetryAfterMs: 1500, Headers: map[string]string{"x-ratelimit-remaining-tokens": "0", "retry-after-ms": "1500"}, Action: "fallback",
	})
	rateLimit.StepID = "step_01M7Z5ME399Y0NDSXSN8VEWD15"
	quotaLow := gRunEvent(QuotaLow, 21, &QuotaPayload{
		Scope: "session", ScopeID: gSession, LimitValues: LimitValues{MaxTokens: 10000, MaxCostUSD: 0.5},
		Source: "config", UsedTokens: 8200, UsedCostUSD: 0.21, Threshold: 0.8,
	})
	quotaBlocked := gRunEvent(QuotaBlocked, 22, &QuotaPayload{
		Scope: "tenant", ScopeID: "acme", LimitValues: LimitValues{MaxCostUSD: 5}, Source: "control_plane",
		UsedTokens: 1210000, UsedCostUSD: 4.9991, EstimatedTokens: 5100, EstimatedCostUSD: 0.0011,
		Exceeded: "cost", Action: "wait",
	})
	quotaBlocked.Status, quotaBlocked.StatusReason = "waiting_resource", "quota_exceeded"
	limitChanged := gEvent(LimitChanged, 41, &QuotaPayload{
		Scope: "session", ScopeID: gSession, LimitValues: LimitValues{MaxTokens: 20000, MaxCostUSD: 1},
		Source: "control_plane", UsedTokens: 9100, UsedCostUSD: 0.24,
		Previous: &LimitValues{MaxTokens: 10000, MaxCostUSD: 0.5}, ChangedBy: "ops-oncall",
	})

	sandboxApplied := gEvent(SandboxApplied, 44, &SandboxPayload{
		Profile: "workspace_write", Mode: "workspace_write", Network: "none", Enforcer: "bubblewrap",
		Cwd: "/work/ws", ReadRoots: []string{"/usr", "/work/ws"}, WriteRoots: []string{"/work/ws"},
		Limits: SandboxLimits{Processes: 256, MemoryBytes: 4 << 30, FileBytes: 1 << 30, CPUSeconds: 600}, ProcessID: "proc_1",
	})
	sandboxViolation := gEvent(SandboxViolation, 45, &SandboxPayload{
		Profile: "read_only", Mode: "read_only", Network: "none", Violation: "write_denied", Detail: "/work/ws/out.txt",
		Escalation: "workspace_write",
	})
	exit := 0
	processCompleted := gEvent(ProcessCompleted, 46, &ProcessPayload{ProcessID: "proc_1", ExitCode: &exit, Bytes: 2048, DurationMs: 35})
	processOutput := gEvent(ProcessOutput, 47, &ProcessPayload{ProcessID: "proc_1", Stream: "stdout", Data: "ok\n", Seq: 1, Bytes: 3})
	outputRedacted := gEvent(OutputRedacted, 48, &OutputPayload{Bytes: 4096, Redactions: map[string]int{"secret_env": 1, "openai_key": 2}})
	outputSpilled := gEvent(OutputSpilled, 49, &OutputPayload{Bytes: 104857600, StoredBytes: 104857600, InlineBytes: 32768, Limit: 32768, MediaType: "text/plain; charset=utf-8"})
	outputSpilled.OutputRef = "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
	hookCompleted := gEvent(HookCompleted, 50, &HookPayload{
		Point: "pre_tool_use", Hook: "guard-rm", Handler: "command", ToolName: "shell", TimeoutMs: 60000,
		Status: "ok", Decision: "deny", Reason: "rm -rf is not allowed", DurationMs: 12, FailMode: "fail_closed",
	})
	hookFailed := gEvent(HookFailed, 51, &HookPayload{
		Point: "post_tool_use", Hook: "lint", Handler: "http", Status: "failed", DurationMs: 5000,
		FailMode: "fail_open", ErrorCategory: "timeout", Message: "no answer within 5s",
	})
	evidenceChanged := gTurnEvent(EvidenceChanged, 44, &EvidencePayload{
		Change: "exported", PackRef: "evidence://" + gSession + "/" + gThread + "/" + gTurn, FormatVersion: "agentrt-evidence/1",
		ManifestSHA256:   "8a0f3c1d2e4b5a6978c0d1e2f3a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6",
		Counts:           EvidenceCounts{Events: 31, Decisions: 2, Approvals: 1, ToolCalls: 2, Receipts: 5, ProviderResponses: 3, Artifacts: 4},
		ArtifactContents: true, Health: true, ExportedBy: "alice",
	})
	evidenceChanged.EvidenceID, evidenceChanged.TraceID = "evd_5c0b8e7f1a2d3c4b5a69788796a5b4c3", ""

	compactionStarted := gRunEvent(ContextCompactionStarted, 45, &CompactionPayload{
		CompactionID: "ctx_01M7Z5ME30GPETVGA3GK813V09", Trigger: "auto", Strategy: "summarize", FromSeq: 1, ThroughSeq: 40,
		CoveredTurns: []string{gTurn}, WindowTokens: 8000, Threshold: 6400, TokensBefore: 6512,
		PolicySnapshotRef: "sha256:77aa", PendingActions: []string{"act_01M7Z5ME30GPETVGA3GK813V0C"},
	})
	compactionCompleted := gRunEvent(ContextCompactionCompleted, 46, &CompactionPayload{
		CompactionID: "ctx_01M7Z5ME30GPETVGA3GK813V09", Trigger: "auto", Strategy: "summarize", FromSeq: 1, ThroughSeq: 40,
		TokensBefore: 6512, TokensAfter: 1400, SummaryRef: "sha256:51aa", BoundarySeq: 57, PolicySnapshotRef: "sha256:77aa",
		Usage: &runtype.Usage{InputTokens: 6000, OutputTokens: 300, CostUSD: 0.002},
	})
	compactionFailed := gRunEvent(ContextCompactionFailed, 47, &CompactionPayload{
		CompactionID: "ctx_01M7Z5ME30GPETVGA3GK813V0A", Trigger: "manual", Strategy: "summarize", FromSeq: 1, ThroughSeq: 40,
		TokensBefore: 6512, TokensAfter: 3100, Fallback: "drop_tool_outputs",
		Failure: &runtype.Failure{Kind: runtype.FailureModel, Message: "the summary was empty"},
	})
	rollback := gTurnEvent(HistoryRollbackCompleted, 48, &HistoryPayload{
		ThreadID: gThread, ThroughSeq: 12, Messages: 12, TargetTurnID: gTurn, RolledBackTurns: []string{"turn_01M7Z5ME30GPETVGA3GK813V0B"},
	})
	return append([]*Event{
		contextResolved, compactionStarted, compactionCompleted, compactionFailed, rollback,
		evidenceChanged, taskRetrying, taskLost, queueChanged,
		sandboxApplied, sandboxViolation, processCompleted, processOutput, outputRedacted, outputSpilled, hookCompleted, hookFailed,
		sessionCreated, sessionUpdated, threadStarted,
		turnSubmitted, turnCompleted, turnFailed,
		taskWaiting, taskFailed, attemptFailed,
		catalog, modelRequested, modelCompleted, modelFailed,
		permission, toolStarted, toolProgress, toolResult, toolFailed,
		actionRequired, warning, artifact,
		permissionRequested, actionResolved, permissionResolved, policyChanged,
		delta, reasoningDelta, reasoningSummary,
		profile, candidates, decided, single, notPossible, fallback,
		estimated, recorded, rateLimit, quotaLow, quotaBlocked, limitChanged,
	}, delegationGoldens()...)
}
