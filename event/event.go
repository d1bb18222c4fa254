package event

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/agentrt/agentrt/runtype"
)

// SchemaVersion is written into every event's schemaVersion field: the
// version of the Agent Runtime standard whose envelope agentrt speaks.
const SchemaVersion = "agentruntime-0.4.0"

// Preview limits: payloads carry at most this many bytes of arguments,
// results or messages. The full data is in the store (messages, blobs).
const (
	PreviewBytes = 2048
)

// Event is one durable execution fact in the standard's envelope.
//
// Persisted: the JSON encoding is stored in the event log and is the wire
// format of every API; fields are only ever added.
type Event struct {
	Type          Type      `json:"type"`
	EventID       string    `json:"eventId"`
	Timestamp     time.Time `json:"timestamp"`
	SchemaVersion string    `json:"schemaVersion"`
	RuntimeID     string    `json:"runtimeId,omitempty"`
	// Sequence is gap-free per session, from 1, assigned at commit.
	Sequence  int64  `json:"sequence"`
	SessionID string `json:"sessionId,omitempty"`
	ThreadID  string `json:"threadId,omitempty"`
	TurnID    string `json:"turnId,omitempty"`
	TaskID    string `json:"taskId,omitempty"`
	RunID     string `json:"runId,omitempty"`
	AttemptID string `json:"attemptId,omitempty"`
	// ParentTaskID and RootTaskID place the event's task in a delegation
	// tree (set on the events of a delegated task's turn).
	ParentTaskID string `json:"parentTaskId,omitempty"`
	RootTaskID   string `json:"rootTaskId,omitempty"`
	StepID       string `json:"stepId,omitempty"`
	ToolCallID   string `json:"toolCallId,omitempty"`
	ActionID     string `json:"actionId,omitempty"`
	SubagentID   string `json:"subagentId,omitempty"`
	// JobID and JobItemID name a job and one of its items (job.*).
	JobID     string `json:"jobId,omitempty"`
	JobItemID string `json:"jobItemId,omitempty"`
	// EvidenceID names an evidence bundle (evidence.changed).
	EvidenceID string `json:"evidenceId,omitempty"`
	QueueID    string `json:"queueId,omitempty"`
	TraceID    string `json:"traceId,omitempty"`
	SpanID     string `json:"spanId,omitempty"`

	Status             string              `json:"status,omitempty"`
	StatusReason       runtype.Reason      `json:"statusReason,omitempty"`
	OutputRef          string              `json:"outputRef,omitempty"`
	PermissionDecision *PermissionDecision `json:"permissionDecision,omitempty"`
	// DeliveryState is a task's result delivery (task.updated of a
	// schedule's fire).
	DeliveryState *DeliveryState `json:"deliveryState,omitempty"`

	Payload Payload           `json:"payload"`
	Refs    map[string]string `json:"refs,omitempty"`

	// Cursor is the event's position in the store-wide log, assigned at
	// commit. It is not part of the envelope; streams send it as the SSE id.
	Cursor int64 `json:"-"`
	// TenantID scopes reads; it is not part of the envelope.
	TenantID string `json:"-"`

	raw atomic.Pointer[[]byte] // cached encoding; see JSON
}

// JSON returns the event's envelope encoding. The first call encodes and
// caches; events read from a store carry the stored bytes. Callers must not
// modify an event after its first JSON call.
func (e *Event) JSON() ([]byte, error) {
	if p := e.raw.Load(); p != nil {
		return *p, nil
	}
	b, err := encode(e)
	if err != nil {
		return nil, fmt.Errorf("encoding %s event: %w", e.Type, err)
	}
	e.raw.Store(&b)
	return b, nil
}

// Prepare encodes e now, with the Sequence it has, so that a later
// SetSequence can patch the number in without encoding again. A writer
// calls it before its serial section; it is optional.
func (e *Event) Prepare() error {
	_, err := e.JSON()
	return err
}

// sequenceKey starts the sequence field in an encoding. Only a key can
// match it: inside a JSON string the quotes would be escaped.
var sequenceKey = []byte(`"sequence":`)

// SetSequence sets e.Sequence. If e was already encoded (see Prepare), the
// cached encoding is patched to carry the new number.
func (e *Event) SetSequence(n int64) {
	e.Sequence = n
	p := e.raw.Load()
	if p == nil {
		return
	}
	old := *p
	i := bytes.Index(old, sequenceKey)
	if i < 0 {
		e.raw.Store(nil) // cannot happen for an envelope; encode again on demand
		return
	}
	start := i + len(sequenceKey)
	end := start
	for end < len(old) && (old[end] == '-' || old[end] >= '0' && old[end] <= '9') {
		end++
	}
	patched := make([]byte, 0, len(old)+20)
	patched = append(patched, old[:start]...)
	patched = strconv.AppendInt(patched, n, 10)
	patched = append(patched, old[end:]...)
	e.raw.Store(&patched)
}

// MarshalJSON implements json.Marshaler through JSON's cache.
func (e *Event) MarshalJSON() ([]byte, error) { return e.JSON() }

// envelope has Event's fields but not its methods, so encoding it does not
// recurse into MarshalJSON.
type envelope Event

// Decode parses one encoded event. The payload is decoded into the typed
// struct for its type (RawPayload for types without one). The returned
// event caches data as its encoding.
func Decode(data []byte) (*Event, error) {
	var w struct {
		envelope
		Payload json.RawMessage `json:"payload"`
	}
	if err := json.Unmarshal(data, &w); err != nil {
		return nil, fmt.Errorf("decoding event: %w", err)
	}
	e := (*Event)(&w.envelope)
	p, err := decodePayload(e.Type, w.Payload)
	if err != nil {
		return nil, fmt.Errorf("decoding %s payload: %w", e.Type, err)
	}
	e.Payload = p
	own := append([]byte(nil), data...)
	e.raw.Store(&own)
	return e, nil
}

// Preview returns s cut to at most max bytes on a UTF-8 boundary, and
// whether it was cut.
func Preview(s string, max int) (string, bool) {
	if len(s) <= max {
		return s, false
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut], true
}

// Filter selects events. Zero fields match everything; TenantID must be set
// by anything serving more than one tenant.
type Filter struct {
	TenantID  string
	SessionID string
	TurnID    string
}

// Match reports whether e passes f.
func (f Filter) Match(e *Event) bool {
	return (f.TenantID == "" || f.TenantID == e.TenantID) &&
		(f.SessionID == "" || f.SessionID == e.SessionID) &&
		(f.TurnID == "" || f.TurnID == e.TurnID)
}
