package runtype

import "time"

// PrefixInstance prefixes a named instance's ID.
const PrefixInstance = "ins_"

// Instance is a named agent instance (docs/instances.md): an agent bound
// to a stable, tenant-scoped name (case/4711) with a durable session and
// a durable JSON state. Its turns run on its session's main thread, one
// after another. State changes only through the instance_state tool or
// the control plane; each change raises StateVersion by one.
//
// Version is the store's optimistic concurrency token, as a Schedule's:
// a batch writes an instance only while the stored version is the one
// the writer read (see store.Batch.Instances).
type Instance struct {
	ID string
	Owner
	// Name is unique in the tenant.
	Name  string
	Agent string
	// SessionID is the instance's own session.
	SessionID string
	// State is a JSON object valid against the agent's state schema at
	// SchemaVersion.
	State         string
	StateVersion  int64
	SchemaVersion int
	Version       int64
	CreatedAt     time.Time
	UpdatedAt     time.Time
	// LastWokenAt is when a turn was last submitted to it (zero: never).
	LastWokenAt time.Time
}
