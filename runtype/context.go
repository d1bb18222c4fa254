package runtype

import (
	"cmp"
	"slices"
)

// This file holds the records of a thread's context: what stands in for
// earlier messages after a compaction, how a thread began (a reset's
// handoff, a fork) and the kinds of turns that maintain a thread rather
// than answer an input.

// TurnKind says what a turn does. The zero value is a turn that answers
// its input; the others are maintenance turns, queued on their thread like
// any turn (so they never run beside another turn of it) and recorded like
// one.
type TurnKind string

const (
	// TurnAnswer is an ordinary turn: the model answers its input.
	TurnAnswer TurnKind = ""
	// TurnCompact compacts the thread's context: its older messages are
	// summarized (or their tool outputs dropped) into a boundary message.
	TurnCompact TurnKind = "compact"
	// TurnReset writes a structured handoff of the thread and starts a
	// fresh thread of the session whose first message is the handoff.
	TurnReset TurnKind = "reset"
	// TurnJob dispatches a job: its task starts the job's items as
	// child tasks and collects their results (no model runs).
	TurnJob TurnKind = "job"
)

// Boundary kinds.
const (
	BoundaryCompaction = "compaction" // a summary of the messages it covers
	BoundaryHandoff    = "handoff"    // the first message of a thread a reset started
)

// Compaction strategies (agent config context.strategy).
const (
	StrategySummarize         = "summarize"
	StrategyDropToolOutputs   = "drop_tool_outputs"
	StrategySummarizeThenDrop = "summarize_then_drop"
	StrategyReset             = "reset"
)

// Boundary marks a message that stands in for earlier ones in the context
// the model sees. For a compaction, the model sees the boundary message
// first, then the thread's messages after ThroughSeq in order (other
// boundary messages left out), and nothing at or below ThroughSeq: the
// covered messages stay in the thread, only out of the model's view. The
// message itself is stored after the messages it covers, with the next
// Seq of the thread, by the turn that compacted.
//
// Persisted: JSON object in message records.
type Boundary struct {
	// ID names the compaction (or reset) that wrote the message.
	ID   string `json:"id"`
	Kind string `json:"kind"` // BoundaryCompaction or BoundaryHandoff
	// Strategy is the one that produced the text: summarize,
	// drop_tool_outputs (no model call) or reset.
	Strategy string `json:"strategy"`
	// Trigger is auto (a threshold) or manual (compact_thread).
	Trigger string `json:"trigger"`
	// FromSeq and ThroughSeq are the covered messages of the thread (for a
	// handoff, of the thread it continues, SourceThreadID).
	FromSeq    int64 `json:"fromSeq"`
	ThroughSeq int64 `json:"throughSeq"`
	// TokensBefore and TokensAfter estimate the context before and after.
	TokensBefore int64 `json:"tokensBefore"`
	TokensAfter  int64 `json:"tokensAfter"`
	// SummaryRef is the blob of the summary (or handoff document).
	SummaryRef string `json:"summaryRef,omitempty"`
	// PolicyRef is the blob of the policy snapshot in force when the
	// boundary was made (see docs/context.md).
	PolicyRef string `json:"policyRef,omitempty"`
	// SourceThreadID is, for a handoff, the thread the reset ended.
	SourceThreadID string `json:"sourceThreadId,omitempty"`
}

// ContextWindow returns the part of a conversation the model sees: after
// a compaction, its latest boundary message, then the messages after the
// ones it covers, other boundary messages left out (the latest one's
// summary holds theirs); otherwise msgs itself. msgs must be in Seq
// order. It returns the boundary the window starts from, nil for none.
func ContextWindow(msgs []Message) ([]Message, *Boundary) {
	at := -1
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].IsCompaction() {
			at = i
			break
		}
	}
	if at < 0 {
		return msgs, nil
	}
	b := msgs[at].Boundary
	first, _ := slices.BinarySearchFunc(msgs, b.ThroughSeq+1, func(m Message, seq int64) int { return cmp.Compare(m.Seq, seq) })
	out := make([]Message, 0, len(msgs)-first+17)
	out = append(out, msgs[at])
	for i := first; i < len(msgs); i++ {
		if !msgs[i].IsCompaction() {
			out = append(out, msgs[i])
		}
	}
	return out, b
}

// IsCompaction reports whether m is a compaction's boundary message.
func (m *Message) IsCompaction() bool {
	return m.Boundary != nil && m.Boundary.Kind == BoundaryCompaction
}

// Lineage kinds.
const (
	LineageReset = "reset"
	LineageFork  = "fork"
	// LineageSubagent and LineageJob mark a thread a subagent, a job's
	// dispatcher or a job item works on: it belongs to the session but
	// does not continue its conversation. SessionID, ThreadID and TurnID
	// name the thread and turn that delegated (empty for a host's).
	LineageSubagent = "subagent"
	LineageJob      = "job"
	// LineageSchedule marks the thread of a schedule's fire.
	LineageSchedule = "schedule"
)

// Lineage is how a thread began when it continues another: a reset's
// fresh thread, or a fork.
//
// Persisted: JSON object in thread records.
type Lineage struct {
	Kind string `json:"kind"` // LineageReset, LineageFork, LineageSubagent or LineageJob
	// SessionID and ThreadID are the thread continued from.
	SessionID string `json:"sessionId"`
	ThreadID  string `json:"threadId"`
	// TurnID is the reset turn, or the turn forked from.
	TurnID string `json:"turnId,omitempty"`
	// Seq is the source thread's last message the new thread continues
	// from (for a fork: the last it shares).
	Seq int64 `json:"seq,omitempty"`
	// HandoffRef is the blob of a reset's handoff document.
	HandoffRef string `json:"handoffRef,omitempty"`
}

// Delegated reports whether a thread of this lineage is one a subagent, a
// job or a schedule's fire works on, not one that continues its session's
// conversation.
func (l *Lineage) Delegated() bool {
	return l != nil && (l.Kind == LineageSubagent || l.Kind == LineageJob || l.Kind == LineageSchedule)
}
