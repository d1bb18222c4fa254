package evidence

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/runtype"
)

// FormatVersion names the bundle format this package writes and reads.
const FormatVersion = "agentrt-evidence/1"

// The members of a bundle. Every name but ManifestName and SignatureName
// is listed in the manifest with its size and hash.
const (
	ManifestName          = "manifest.json"            // always the first member
	RequestName           = "request.json"             // the request (turn): ids, agent, input, status, usage, times
	EventsName            = "events.jsonl"             // the request's events, envelopes as stored, in cursor order
	SessionName           = "session.json"             // the session snapshot (get_session)
	ThreadName            = "thread.json"              // the thread read model (get_thread_read)
	DecisionsName         = "decisions.jsonl"          // permission.evaluated and permission.resolved facts
	ApprovalsName         = "approvals.jsonl"          // the request's actions with their resolution
	ToolCallsName         = "tool-calls.jsonl"         // the request's tool calls with input and output refs
	ReceiptsName          = "receipts.jsonl"           // the session's receipt chain, from its first receipt
	ProviderResponsesName = "provider-responses.jsonl" // one line per model call: its raw-response ref or why there is none
	HealthName            = "health.json"              // the runtime's health, with --health
	ReplayCaseName        = "replay-case.json"         // the request as a replay case (package replaycase), for agentrt replay
	SignatureName         = "signature.json"           // the ed25519 signature over manifest.json, when signed
	ArtifactPrefix        = "artifacts/"               // artifacts/sha256-HEX: content-addressed artifact contents
)

// Manifest describes a bundle: what it is about, what it holds, and the
// size and SHA-256 of every member but itself and signature.json.
//
// Persisted: manifests are read back by later versions; fields may be
// added, never renamed or removed.
type Manifest struct {
	FormatVersion string `json:"formatVersion"`
	// BundleID is the evidence id (the evidenceId of evidence.changed):
	// "evd_" and the first 32 hex digits of the SHA-256 of the manifest
	// with an empty bundleId, so that the same content has the same id.
	BundleID       string         `json:"bundleId"`
	RuntimeID      string         `json:"runtimeId"`
	AgentrtVersion string         `json:"agentrtVersion"`
	SchemaVersions SchemaVersions `json:"schemaVersions"`

	TenantID  string   `json:"tenantId,omitempty"`
	SessionID string   `json:"sessionId"`
	ThreadID  string   `json:"threadId"`
	TurnID    string   `json:"turnId"`
	TaskID    string   `json:"taskId,omitempty"`
	RunIDs    []string `json:"runIds"`
	TraceID   string   `json:"traceId,omitempty"`

	Scope     Scope     `json:"scope"`
	TimeRange TimeRange `json:"timeRange"`
	Counts    Counts    `json:"counts"`
	// ReceiptHead is the hash of the last receipt in receipts.jsonl.
	ReceiptHead string `json:"receiptHead,omitempty"`
	// Signals says, for each kind of evidence, whether the bundle holds
	// it (exported), it does not apply to this request (not_applicable),
	// agentrt does not record it (unsupported), or it applies but could
	// not be tied to the request's facts (missing_correlation).
	Signals map[string]Signal `json:"signals"`
	// KnownGaps names the signals that apply to the request but were not
	// exported (unsupported or missing_correlation).
	KnownGaps []string `json:"knownGaps"`
	Members   []Member `json:"members"`
}

// SchemaVersions are the versions of the formats inside the bundle.
type SchemaVersions struct {
	// Event is the Agent Runtime standard's version of the event
	// envelopes in events.jsonl.
	Event string `json:"event"`
	// Snapshot is the version of session.json and thread.json.
	Snapshot string `json:"snapshot"`
}

// Scope is what the export was asked to include beyond the defaults.
type Scope struct {
	ArtifactContents bool `json:"artifactContents"`
	Health           bool `json:"health"`
}

// TimeRange spans the request's events.
type TimeRange struct {
	First *time.Time `json:"first,omitempty"`
	Last  *time.Time `json:"last,omitempty"`
}

// Counts counts what the bundle holds: the counts evidence.changed
// reports.
type Counts = event.EvidenceCounts

// SignalStatus is the standard's applicability of an evidence signal.
type SignalStatus string

// The statuses of the Agent Runtime standard's evidence contract.
const (
	SignalExported           SignalStatus = "exported"
	SignalNotApplicable      SignalStatus = "not_applicable"
	SignalUnsupported        SignalStatus = "unsupported"
	SignalMissingCorrelation SignalStatus = "missing_correlation"
)

// Signal is one kind of evidence's status, with why when it is not
// plainly exported.
type Signal struct {
	Status SignalStatus `json:"status"`
	Reason string       `json:"reason,omitempty"`
}

// Member is one listed member of a bundle.
type Member struct {
	Name   string `json:"name"`
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256"`
}

// Receipt is a receipt as receipts.jsonl holds it: runtype.Receipt with
// JSON names; Body (the sealed event's stored encoding) is base64.
type Receipt struct {
	TenantID  string    `json:"tenantId,omitempty"`
	SessionID string    `json:"sessionId"`
	Seq       int64     `json:"seq"`
	EventID   string    `json:"eventId"`
	EventType string    `json:"eventType"`
	Body      []byte    `json:"body"`
	PrevHash  string    `json:"prevHash"`
	Hash      string    `json:"hash"`
	CreatedAt time.Time `json:"createdAt"`
}

// ReceiptOf converts a stored receipt.
func ReceiptOf(r *runtype.Receipt) Receipt {
	return Receipt{TenantID: r.TenantID, SessionID: r.SessionID, Seq: r.Seq, EventID: r.EventID, EventType: r.EventType,
		Body: r.Body, PrevHash: r.PrevHash, Hash: r.Hash, CreatedAt: r.CreatedAt.UTC()}
}

func (r Receipt) record() *runtype.Receipt {
	return &runtype.Receipt{TenantID: r.TenantID, SessionID: r.SessionID, Seq: r.Seq, EventID: r.EventID, EventType: r.EventType,
		Body: r.Body, PrevHash: r.PrevHash, Hash: r.Hash, CreatedAt: r.CreatedAt}
}

// ArtifactName is the member name of an artifact with a content ref
// ("sha256:" and 64 hex digits), and whether ref is one. The colon of the
// ref becomes a dash, so that the name is a valid file name everywhere.
func ArtifactName(ref string) (string, bool) {
	sum, ok := strings.CutPrefix(ref, "sha256:")
	if !ok || !isHexSHA256(sum) {
		return "", false
	}
	return ArtifactPrefix + "sha256-" + sum, true
}

// artifactSum returns the hex SHA-256 an artifact member's name claims.
func artifactSum(name string) (string, bool) {
	sum, ok := strings.CutPrefix(name, ArtifactPrefix+"sha256-")
	return sum, ok && isHexSHA256(sum)
}

func isHexSHA256(s string) bool {
	if len(s) != 64 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil && strings.ToLower(s) == s
}

// MarshalJSONL encodes items one JSON value per line.
func MarshalJSONL[T any](items []T) ([]byte, error) {
	var out []byte
	for _, it := range items {
		b, err := json.Marshal(it)
		if err != nil {
			return nil, fmt.Errorf("encoding a line: %w", err)
		}
		out = append(append(out, b...), '\n')
	}
	return out, nil
}

// checkName refuses a member name that is not a plain relative path:
// empty, absolute, with a "..", "." or empty element, a backslash or a
// control character.
func checkName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("empty member name")
	case len(name) > 255:
		return fmt.Errorf("member name longer than 255 bytes")
	case strings.HasPrefix(name, "/"):
		return fmt.Errorf("absolute member name %q", name)
	case strings.ContainsAny(name, "\\:"):
		return fmt.Errorf("member name %q holds a backslash or colon", name)
	case path.Clean(name) != name:
		return fmt.Errorf("member name %q is not a clean path", name)
	}
	for _, el := range strings.Split(name, "/") {
		if el == ".." || el == "." {
			return fmt.Errorf("member name %q leaves the bundle", name)
		}
	}
	for _, c := range name {
		if c < 0x20 || c == 0x7f {
			return fmt.Errorf("member name %q holds a control character", name)
		}
	}
	return nil
}
