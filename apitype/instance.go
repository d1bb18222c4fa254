package apitype

import (
	"encoding/json"
	"time"

	"github.com/agentrt/agentrt/runtype"
)

// Named agent instances (docs/instances.md): an agent bound to a stable,
// tenant-scoped name with a durable session and a durable JSON state.

// InstanceRead is a named instance as the control plane shows it.
type InstanceRead struct {
	InstanceID    string          `json:"instanceId"`
	Name          string          `json:"name"`
	Agent         string          `json:"agent"`
	SessionID     string          `json:"sessionId"`
	State         json.RawMessage `json:"state"`
	StateVersion  int64           `json:"stateVersion"`
	SchemaVersion int             `json:"schemaVersion"`
	CreatedAt     time.Time       `json:"createdAt"`
	UpdatedAt     time.Time       `json:"updatedAt"`
	LastWokenAt   *time.Time      `json:"lastWokenAt,omitempty"`
}

// GetInstanceParams names an instance of Owner's tenant.
type GetInstanceParams struct {
	runtype.Owner
	Name string
}

// ListInstancesParams lists the tenant's instances by ID; Agent filters
// when set.
type ListInstancesParams struct {
	runtype.Owner
	Agent   string
	AfterID string
	Limit   int
}

type InstanceList struct {
	Instances []InstanceRead `json:"instances"`
	// NextAfterID pages on when the page is full.
	NextAfterID string `json:"nextAfterId,omitempty"`
}

// InstanceState is an instance's state and its versions.
type InstanceState struct {
	State         json.RawMessage `json:"state"`
	StateVersion  int64           `json:"stateVersion"`
	SchemaVersion int             `json:"schemaVersion"`
}

// SetInstanceStateParams replaces an instance's state. State must be
// valid against the agent's state schema. ExpectedStateVersion, when
// set, makes the change conditional: another version is ErrConflict.
type SetInstanceStateParams struct {
	runtype.Owner
	Name                 string
	State                json.RawMessage
	ExpectedStateVersion *int64
}

// SendInstanceEventParams posts an event to an instance: a turn on its
// session says which event arrived. Agent is required when the
// instance does not exist yet (the send creates it); a later send may
// omit it, and one naming another agent is refused. IdempotencyKey makes
// the send idempotent (it is the turn's key).
type SendInstanceEventParams struct {
	runtype.Owner
	Name           string          `json:"-"`
	Agent          string          `json:"agent,omitempty"`
	Type           string          `json:"type"`
	Data           json.RawMessage `json:"data,omitempty"`
	IdempotencyKey string          `json:"idempotencyKey,omitempty"`
}

// SendInstanceEventResult names the instance and the turn the event woke.
type SendInstanceEventResult struct {
	Instance InstanceRead `json:"instance"`
	TurnID   string       `json:"turnId"`
	TaskID   string       `json:"taskId"`
}
