package loop

import (
	"encoding/json"
	"slices"
	"strings"
	"sync"

	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/output"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/tool"
)

// This file holds what the run does about secrets besides redacting tool
// output. The store's Writer redacts everything written (store.Batch.Redact)
// with the same Redactor; the run keeps three promises around that:
//
//   - Hashes are over what is kept. A call's argumentsSha256 is the hash of
//     its canonical arguments as the redactor leaves them, so that the
//     stored arguments verify against it, a replay of the stored model
//     outputs hashes to the same value, and the hash is no oracle for
//     guessing a redacted value.
//   - Blobs are redacted before their ref is computed, so the refs a run
//     hands out name what is stored.
//   - A tool runs with its real input. A call that runs within the hop
//     that asked for it has the model's arguments in memory. A call that
//     runs later, from what the store kept (after an approval, or in a new
//     attempt), would get the redacted input; the coordinator therefore
//     keeps the real input of a waiting call whose stored input holds a
//     redaction in memory (heldInputs), and a call whose stored input
//     holds one without a real input kept runs not at all: it fails with
//     input_redacted, which the model sees and may answer by calling
//     again.

// cut returns s cut to n bytes for an event or a record, and whether it
// was cut. The Writer redacts whatever is written, but it cannot find a
// secret a cut has halved: text that is cut is redacted first, looking a
// little past the cut.
func (c *Coordinator) cut(s string, n int) (string, bool) {
	if len(s) <= n {
		return s, false
	}
	if c.cfg.Redactor != nil {
		wide, _ := event.Preview(s, n+256)
		s = c.cfg.Redactor.Text(wide)
	}
	s, _ = event.Preview(s, n)
	return s, true
}

// check validates a call's input against its tool's schema and returns
// the hash of its canonical form after redaction.
func (r *run) check(name string, input json.RawMessage) (string, error) {
	sum, err := r.cfg.Registry.Check(name, input)
	if err != nil || r.cfg.Redactor == nil {
		return sum, err
	}
	if red := r.cfg.Redactor.JSON(string(input)); red != string(input) {
		sum = tool.ArgumentsSHA256(json.RawMessage(red))
	}
	return sum, nil
}

// argumentsSum hashes arguments that may not validate, after redaction.
func (r *run) argumentsSum(args string) string {
	if r.cfg.Redactor != nil {
		args = r.cfg.Redactor.JSON(args)
	}
	return tool.ArgumentsSHA256(json.RawMessage(args))
}

// redactData redacts a blob's data before its ref is computed.
func (r *run) redactData(data []byte, mediaType string) []byte {
	if r.cfg.Redactor == nil {
		return data
	}
	s := string(data)
	var red string
	if strings.Contains(mediaType, "json") {
		red = r.cfg.Redactor.JSON(s)
	} else {
		red = r.cfg.Redactor.Text(s)
	}
	if red == s {
		return data
	}
	return []byte(red)
}

// holdInput keeps the real input of a call that waits, when what the
// store keeps of it holds a redaction.
func (r *run) holdInput(callID, input string) {
	if r.cfg.Redactor != nil && output.Redacted(r.cfg.Redactor.JSON(input)) {
		r.c.held.put(r.turn.SessionID+"/"+callID, input)
	}
}

// realInput returns the real input of a call whose stored input is
// stored, when this coordinator kept it.
func (r *run) realInput(callID, stored string) (string, bool) {
	in, ok := r.c.held.take(r.turn.SessionID + "/" + callID)
	if !ok || r.cfg.Redactor == nil || r.cfg.Redactor.JSON(in) != stored {
		return "", false
	}
	return in, true
}

// inputRedacted is the failure of a call that cannot run: what the store
// kept of its input holds a redaction, and its real input is not known.
func inputRedacted(name string) *runtype.Failure {
	return failuref(runtype.FailureInputRedacted,
		"%s did not run: its input holds a secret, which agentrt does not store, and the runtime that knew the value "+
			"stopped before the call could run; call it again", name)
}

// maxHeldInputs bounds the bytes of real inputs a coordinator keeps; past
// it the oldest are dropped (their calls fail with input_redacted).
const maxHeldInputs = 16 << 20

// heldInputs are real inputs of waiting calls, by session and call id.
// They live in memory only: a runtime that stops forgets them.
type heldInputs struct {
	mu    sync.Mutex
	m     map[string]string // guarded by mu
	order []string          // guarded by mu: keys, oldest first
	bytes int               // guarded by mu
}

func (h *heldInputs) put(key, input string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.m == nil {
		h.m = make(map[string]string)
	}
	if old, ok := h.m[key]; ok {
		h.bytes -= len(old)
	} else {
		h.order = append(h.order, key)
	}
	h.m[key] = input
	h.bytes += len(input)
	for h.bytes > maxHeldInputs && len(h.order) > 0 {
		k := h.order[0]
		h.order = h.order[1:]
		if in, ok := h.m[k]; ok {
			h.bytes -= len(in)
			delete(h.m, k)
		}
	}
}

func (h *heldInputs) take(key string) (string, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	in, ok := h.m[key]
	if ok {
		delete(h.m, key)
		h.bytes -= len(in)
		if len(h.order) > 2*len(h.m)+64 {
			// Forget the keys of inputs taken.
			h.order = slices.DeleteFunc(h.order, func(k string) bool {
				_, ok := h.m[k]
				return !ok
			})
		}
	}
	return in, ok
}
