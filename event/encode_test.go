package event

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/runtype"
)

// marshalReflect is the reference encoding: encoding/json's, by
// reflection over the envelope's tags.
func marshalReflect(t testing.TB, e *Event) []byte {
	t.Helper()
	b, err := json.Marshal((*envelope)(e))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// goldenPayloads returns the payloads of testdata's events, one of every
// kind, for varied events to carry.
func goldenPayloads(t *testing.T) []Payload {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no goldens: %v", err)
	}
	var ps []Payload
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		e, err := Decode(data)
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, e.Payload)
	}
	return ps
}

// tricky are strings that exercise the escaping: HTML characters,
// control characters, quotes, backslashes, invalid UTF-8, U+2028/2029,
// multi-byte text.
var tricky = []string{
	"", "a", "ses_01JD2X", "<script>&amp;</script>", "quote\" back\\slash", "tab\tnew\nline\r",
	"\x00\x01\x1f\x7f", "\b\f", "bad \xff utf8 \xc3", "line\u2028para\u2029sep", "héllo wörld 日本語 🙂",
	"\xed\xa0\x80 surrogate", strings.Repeat("x", 300),
}

// randomEvent returns an event with every envelope field set or left
// empty at random, from tricky strings, carrying payload p.
func randomEvent(rng *rand.Rand, p Payload) *Event {
	s := func() string {
		if rng.IntN(3) == 0 {
			return ""
		}
		return tricky[rng.IntN(len(tricky))]
	}
	e := &Event{
		Type: Type(s()), EventID: s(), SchemaVersion: s(), RuntimeID: s(),
		Timestamp: time.Unix(rng.Int64N(4e9), rng.Int64N(1e9)).UTC(),
		Sequence:  rng.Int64N(1<<40) - 1<<20,
		SessionID: s(), ThreadID: s(), TurnID: s(), TaskID: s(), RunID: s(), AttemptID: s(), StepID: s(),
		ToolCallID: s(), ActionID: s(), SubagentID: s(), EvidenceID: s(), QueueID: s(), TraceID: s(), SpanID: s(),
		Status: s(), StatusReason: runtype.Reason(s()), OutputRef: s(),
		Payload: p, Cursor: rng.Int64(), TenantID: s(),
	}
	if rng.IntN(4) == 0 {
		e.Timestamp = e.Timestamp.In(time.FixedZone("X", 3600*rng.IntN(12)))
	}
	if rng.IntN(3) == 0 {
		e.PermissionDecision = &PermissionDecision{Decision: s(), Source: s()}
	}
	if n := rng.IntN(4); n > 0 {
		e.Refs = map[string]string{}
		for range n {
			e.Refs[s()] = s()
		}
	}
	return e
}

// TestEnvelopeMatchesEncodingJSON checks that the hand-written envelope
// encoder writes exactly the bytes encoding/json writes, for the golden
// events and for thousands of varied ones.
func TestEnvelopeMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	payloads := goldenPayloads(t)
	payloads = append(payloads, nil, RawPayload(`{"a":"<b>"}`), RawPayload(nil))
	rng := rand.New(rand.NewPCG(16, 4))
	for i := range 5000 {
		e := randomEvent(rng, payloads[i%len(payloads)])
		got, err := encode(e)
		if err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		if want := marshalReflect(t, e); !bytes.Equal(got, want) {
			t.Fatalf("event %d:\n got %s\nwant %s", i, got, want)
		}
	}
	// Years encoding/json cannot write fail in both.
	e := &Event{Type: TurnStarted, Timestamp: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}
	if _, err := encode(e); err == nil {
		t.Error("encoding year 10000: no error")
	}
}

// FuzzEnvelope compares the envelope encoder with encoding/json on
// arbitrary strings in the envelope's fields.
func FuzzEnvelope(f *testing.F) {
	for _, s := range tricky {
		f.Add(s, s, int64(7), int64(0))
	}
	f.Fuzz(func(t *testing.T, a, b string, seq, nanos int64) {
		e := &Event{
			Type: Type(a), EventID: b, Timestamp: time.Unix(0, nanos).UTC(), SchemaVersion: SchemaVersion,
			Sequence: seq, SessionID: a, StepID: b, Status: a, StatusReason: runtype.Reason(b),
			Payload: &SessionPayload{}, Refs: map[string]string{a: b, b: a},
		}
		got, err := encode(e)
		if err != nil {
			t.Fatal(err)
		}
		if want := marshalReflect(t, e); !bytes.Equal(got, want) {
			t.Fatalf("\n got %s\nwant %s", got, want)
		}
	})
}

// BenchmarkEnvelope encodes a typical tool.result event by hand (hand)
// and by reflection (reflect).
func BenchmarkEnvelope(b *testing.B) {
	e := &Event{
		Type: ToolResult, EventID: "evt_01JD2X0000000000000000000", Timestamp: time.Now().UTC(),
		SchemaVersion: SchemaVersion, RuntimeID: "rt_01JD2X0000000000000000000", Sequence: 17,
		SessionID: "s-1042", ThreadID: "thr_01JD2X0000000000000000000", TurnID: "turn_01JD2X0000000000000000000",
		TaskID: "task_01JD2X0000000000000000000", RunID: "run_01JD2X0000000000000000000",
		AttemptID: "run_01JD2X0000000000000000000", StepID: "step_01JD2X0000000000000000000",
		ToolCallID: "call_1042_3", TraceID: "4bf92f3577b34da6a3ce929d0e0e4736", SpanID: "00f067aa0ba902b7",
		Payload: &SessionPayload{},
	}
	b.Run("hand", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := encode(e); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("reflect", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			marshalReflect(b, e)
		}
	})
}
