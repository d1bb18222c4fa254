package telemetry

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math/rand/v2"
	"sync/atomic"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// TurnSpanID returns the span id of a turn's span: the first 8 bytes of
// SHA-256("agentrt/turn/" + turnID), as 16 lowercase hex digits, never all
// zero. Every process derives the same id, so a run resumed anywhere is a
// child of the turn span, and events outside a run (the submission,
// control requests, answers to approvals) carry it.
func TurnSpanID(turnID string) string {
	sum := sha256.Sum256([]byte("agentrt/turn/" + turnID))
	if binary.BigEndian.Uint64(sum[:8]) == 0 {
		sum[7] = 1
	}
	return hex.EncodeToString(sum[:8])
}

// forcedIDs are the ids the next span started with a context holding them
// gets from an IDGenerator of NewIDGenerator. They apply once.
type forcedIDs struct {
	trace trace.TraceID
	span  trace.SpanID
	used  atomic.Bool
}

type forcedKey struct{}

// withIDs returns ctx asking for the next span started with it to have
// these ids (with an IDGenerator of NewIDGenerator).
func withIDs(ctx context.Context, tid trace.TraceID, sid trace.SpanID) context.Context {
	return context.WithValue(ctx, forcedKey{}, &forcedIDs{trace: tid, span: sid})
}

func forced(ctx context.Context) (*forcedIDs, bool) {
	f, ok := ctx.Value(forcedKey{}).(*forcedIDs)
	if !ok || !f.used.CompareAndSwap(false, true) {
		return nil, false
	}
	return f, true
}

// NewIDGenerator returns the IDGenerator the runtime's spans need: random
// ids, except for the turn span, which gets the turn's recorded trace id
// and its derived span id (TurnSpanID). Use it in a TracerProvider you
// build yourself (sdktrace.WithIDGenerator); with another generator the
// turn span's ids differ from the ids its children and events name.
func NewIDGenerator() sdktrace.IDGenerator { return idGen{} }

type idGen struct{}

func (idGen) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	if f, ok := forced(ctx); ok {
		return f.trace, f.span
	}
	var tid trace.TraceID
	for !tid.IsValid() {
		binary.NativeEndian.PutUint64(tid[:8], rand.Uint64())
		binary.NativeEndian.PutUint64(tid[8:], rand.Uint64())
	}
	return tid, randomSpanID()
}

func (idGen) NewSpanID(ctx context.Context, _ trace.TraceID) trace.SpanID {
	if f, ok := forced(ctx); ok {
		return f.span
	}
	return randomSpanID()
}

func randomSpanID() trace.SpanID {
	var sid trace.SpanID
	for !sid.IsValid() {
		binary.NativeEndian.PutUint64(sid[:], rand.Uint64())
	}
	return sid
}
