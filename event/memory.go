package event

// ContextResolvedPayload is the payload of context.resolved: context the
// runtime put into a turn's conversation beyond what was said in it,
// recorded with the thread message that carries it so that replay and
// audit see exactly what the model saw and where it came from.
//
// Persisted: in the event log; fields are only ever added.
type ContextResolvedPayload struct {
	// Source is what resolved the context: "memory" (the agent's
	// memories that matched the turn's input).
	Source string `json:"source"`
	// Query is what the memories were searched with.
	Query string `json:"query,omitempty"`
	// MemoryIDs are the memories put into the context, best match
	// first.
	MemoryIDs []string `json:"memoryIds,omitempty"`
	// MessageSeq is the thread message (by its sequence in the thread)
	// that holds them.
	MessageSeq int64 `json:"messageSeq,omitempty"`
}

// ContextSourceMemory is ContextResolvedPayload.Source for memories.
const ContextSourceMemory = "memory"

func (*ContextResolvedPayload) isPayload() {}
