package model

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"hash"

	"github.com/agentrt/agentrt/runtype"
)

// ContextDigest hashes the context of a model call — its messages in
// order, then the system prompt and tool list by reference — so that the
// context can be rebuilt from the log and checked against what was sent.
// Messages are added as the conversation grows; Sum may be taken after
// any of them, and adding goes on from there, so a run hashes each
// message once however many calls it makes.
//
// Each message is encoded as its role, content, tool call id, error flag,
// tool calls (id, name, arguments) and reasoning blocks, every field
// length-prefixed: two contexts hash alike only when the model was sent
// the same messages. The zero value is ready to use.
type ContextDigest struct {
	h   hash.Hash
	n   int
	buf []byte
	sum [sha256.Size]byte
}

// Add adds m, the next message of the context.
func (d *ContextDigest) Add(m *runtype.Message) {
	if d.h == nil {
		d.h = sha256.New()
	}
	b := d.buf[:0]
	b = appendField(b, string(m.Role))
	b = appendField(b, m.Content)
	b = appendField(b, m.ToolCallID)
	if m.IsError {
		b = append(b, 1)
	} else {
		b = append(b, 0)
	}
	b = binary.AppendUvarint(b, uint64(len(m.ToolCalls)))
	for _, c := range m.ToolCalls {
		b = appendField(b, c.ID)
		b = appendField(b, c.Name)
		b = appendField(b, c.Arguments)
	}
	b = binary.AppendUvarint(b, uint64(len(m.Reasoning)))
	for _, r := range m.Reasoning {
		b = appendField(b, r.Provider)
		b = appendField(b, r.ID)
		b = appendField(b, r.Text)
		b = appendField(b, r.Signature)
		b = appendField(b, r.Redacted)
		b = appendField(b, r.Encrypted)
	}
	d.h.Write(b)
	d.buf = b
	d.n++
}

// Len is the number of messages added.
func (d *ContextDigest) Len() int { return d.n }

// Reset empties d for a context that starts over (after a compaction
// replaced the messages, say), keeping what it allocated.
func (d *ContextDigest) Reset() {
	if d.h != nil {
		d.h.Reset()
	}
	d.n = 0
}

// Sum returns the context's hash, "sha256:" and hex, for the messages
// added so far under the system prompt and tool list with those refs.
// It allocates only the string it returns (refs of up to 80 bytes).
func (d *ContextDigest) Sum(instructionsRef, toolsRef string) string {
	if d.h == nil {
		d.h = sha256.New()
	}
	msgs := d.h.Sum(d.sum[:0])
	var b [8 + 2*sha256.Size + 160]byte
	p := append(b[:0], "agentrt-context/1\n"...)
	p = appendField(p, instructionsRef)
	p = appendField(p, toolsRef)
	p = binary.AppendUvarint(p, uint64(d.n))
	p = append(p, msgs...)
	sum := sha256.Sum256(p)
	var out [len("sha256:") + 2*sha256.Size]byte
	copy(out[:], "sha256:")
	hex.Encode(out[len("sha256:"):], sum[:])
	return string(out[:])
}

func appendField(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}
