package runtype

import "time"

// PrefixMemory is the prefix of memory entry identifiers.
const PrefixMemory = "mem_"

// MemorySource says where a memory's content came from.
type MemorySource string

// Memory sources.
const (
	// MemorySourceModel: the agent's model wrote it through memory_save,
	// from what it knows or was told by the user.
	MemorySourceModel MemorySource = "model"
	// MemorySourceToolOutput: the content came from a tool's output,
	// which is untrusted (a web page, a file, another system's reply).
	// It passed the prompt-injection checker before it was saved.
	MemorySourceToolOutput MemorySource = "tool_output"
	// MemorySourceOperator: an operator wrote it, not a model.
	MemorySourceOperator MemorySource = "operator"
)

// Valid reports whether s is one of the memory sources.
func (s MemorySource) Valid() bool {
	switch s {
	case MemorySourceModel, MemorySourceToolOutput, MemorySourceOperator:
		return true
	}
	return false
}

// Memory is one entry of an agent's long-term memory: text that outlives
// a thread, kept per tenant and agent, with the provenance of who wrote
// it. Owner is the tenant and the principal whose turn wrote it.
//
// Instance names an instance of the agent (a named schedule instance,
// say); empty is the agent's shared memory, the only one today.
type Memory struct {
	ID string
	Owner
	Agent    string
	Instance string
	Content  string
	Source   MemorySource
	// Where it was written: the session, turn, run and tool call (empty
	// for an operator's entry).
	SessionID  string
	TurnID     string
	RunID      string
	ToolCallID string
	CreatedAt  time.Time
}

// MemoryHit is a memory a search found, with its rank among the hits
// (1 is the best match).
type MemoryHit struct {
	Memory
	Rank int
}
