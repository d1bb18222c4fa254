package loop

import (
	"encoding/json"
	"fmt"
	"sync"

	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/runtype"
)

// This file fingerprints the context of each model call of a run
// (event.ContextFingerprint on model.requested): the thread's messages
// sent, as Seq ranges in the order sent, and the system prompt and tool
// list, as blobs the run writes once, all hashed by model.ContextDigest.
// The digest and the ranges grow with the conversation: a call folds in
// only the messages appended since the last one.

// fingerprint is a run's state for fingerprinting its calls' contexts.
// The run's goroutine uses it.
type fingerprint struct {
	// blobs are the agent's system prompt and tool list (plan); wrote
	// says the run has written its copies.
	blobs *contextBlobs
	wrote bool

	// next indexes the first message of r.messages not folded into
	// digest and ranges yet.
	next   int
	digest *model.ContextDigest // from digests, until release
	ranges [][2]int64
	inline [2][2]int64 // ranges' first array: a context has one range, or two after a compaction
}

// restart forgets the messages folded so far: the next call folds
// r.messages from the start. Call it when r.messages is replaced rather
// than appended to (a compaction).
func (f *fingerprint) restart() {
	f.next = 0
	if f.digest != nil {
		f.digest.Reset()
	}
	f.ranges = f.ranges[:0]
}

// digests keeps the digests of ended runs, whose hash state and buffer
// the next run reuses.
var digests = sync.Pool{New: func() any { return new(model.ContextDigest) }}

// release gives the digest back; the run makes no more calls.
func (f *fingerprint) release() {
	if f.digest != nil {
		f.digest.Reset()
		digests.Put(f.digest)
		f.digest = nil
	}
}

// fold adds msgs[f.next:] to the digest and ranges. Consecutive Seqs
// share a range; a message whose Seq does not follow the last one (the
// messages after a compaction's boundary message) starts a new one.
func (f *fingerprint) fold(msgs []runtype.Message) {
	if f.next > len(msgs) {
		f.restart() // replaced by fewer messages without a restart
	}
	if f.digest == nil {
		f.digest = digests.Get().(*model.ContextDigest)
	}
	if f.ranges == nil {
		f.ranges = f.inline[:0]
	}
	for i := f.next; i < len(msgs); i++ {
		m := &msgs[i]
		f.digest.Add(m)
		if n := len(f.ranges); n > 0 && f.ranges[n-1][1]+1 == m.Seq {
			f.ranges[n-1][1] = m.Seq
		} else {
			f.ranges = append(f.ranges, [2]int64{m.Seq, m.Seq})
		}
	}
	f.next = len(msgs)
}

// requested is a model.requested payload and its fingerprint in one
// allocation.
type requested struct {
	p      event.ModelRequestedPayload
	fp     event.ContextFingerprint
	ranges [2][2]int64
}

// requestedPayload is the payload of model.requested for the call of
// req on c: its fingerprint covers req's messages (r.messages). The
// first call of the run holds the system prompt and tool list blobs with
// it.
func (r *run) requestedPayload(c *model.Candidate, attempt int, req *model.Request) *event.ModelRequestedPayload {
	f := &r.fp
	f.fold(r.messages)
	if !f.wrote {
		f.wrote = true
		r.holdContextBlobs()
	}
	x := &requested{p: event.ModelRequestedPayload{
		Provider: providerRef(c), Hop: r.rec.Hops, Attempt: attempt, MessageCount: len(req.Messages), ToolCount: len(req.Tools),
	}}
	x.fp = event.ContextFingerprint{
		ThreadID: r.turn.ThreadID, MessageCount: len(req.Messages),
		InstructionsRef: f.blobs.instructions.Ref, ToolsRef: f.blobs.tools.Ref,
		EstimatedTokens: model.EstimateInputTokens(req),
		Hash:            f.digest.Sum(f.blobs.instructions.Ref, f.blobs.tools.Ref),
	}
	if len(f.ranges) <= len(x.ranges) {
		x.fp.Messages = x.ranges[:copy(x.ranges[:], f.ranges)]
	} else {
		x.fp.Messages = append([][2]int64(nil), f.ranges...)
	}
	if len(req.Messages) > 0 && req.Messages[0].Boundary != nil {
		x.fp.BoundaryID = req.Messages[0].Boundary.ID
	}
	x.p.Context = &x.fp
	return &x.p
}

// holdContextBlobs holds the run's copies of its agent's system prompt
// and tool list blobs, owned by the turn's tenant, to commit with the
// run's next write (the store keeps a blob whose ref it has once).
func (r *run) holdContextBlobs() {
	pair := new([2]runtype.Blob)
	pair[0], pair[1] = r.fp.blobs.instructions, r.fp.blobs.tools
	now := r.cfg.Now().UTC()
	for i := range pair {
		pair[i].Owner, pair[i].CreatedAt = r.turn.Owner, now
	}
	r.pendMu.Lock()
	r.held.Blobs = append(r.held.Blobs, &pair[0], &pair[1])
	r.pendMu.Unlock()
}

// contextBlobs are an agent's system prompt and tool list as blobs,
// without an owner: a run's copies get the turn's.
type contextBlobs struct {
	instructions, tools runtype.Blob
}

// contextTool is one tool of the tool list blob of a model call's
// context: the JSON array of the tools the model was offered, in order.
type contextTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"inputSchema,omitempty"`
}

// Media types of the context blobs.
const (
	instructionsMediaType = "text/plain; charset=utf-8"
	toolsMediaType        = "application/vnd.agentrt.tools+json"
)

// newContextBlobs makes the blobs of agent a's system prompt and tool
// list defs, redacted as the run's blobs are (their refs are of what the
// store keeps).
func (c *Coordinator) newContextBlobs(a *Agent, defs []model.ToolDefinition) (*contextBlobs, error) {
	list := make([]contextTool, len(defs))
	for i, d := range defs {
		list[i] = contextTool{Name: d.Name, Description: d.Description, InputSchema: d.InputSchema}
		if len(d.InputSchema) > 0 && !json.Valid(d.InputSchema) {
			// Kept as the text it is: the list records what was offered.
			list[i].InputSchema, _ = json.Marshal(string(d.InputSchema))
		}
	}
	tools, err := json.Marshal(list)
	if err != nil {
		return nil, fmt.Errorf("agent %q: encoding its tool list: %w", a.Name, err)
	}
	r := &run{cfg: &c.cfg} // redactData needs only the config
	mk := func(data []byte, mt string) runtype.Blob {
		return *r.blob(data, mt)
	}
	return &contextBlobs{instructions: mk([]byte(a.Instructions), instructionsMediaType), tools: mk(tools, toolsMediaType)}, nil
}
