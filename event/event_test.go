package event

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

func TestPreview(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		s       string
		max     int
		want    string
		wantCut bool
	}{
		{"fits", "abc", 3, "abc", false},
		{"empty", "", 0, "", false},
		{"ascii cut", "abcdef", 4, "abcd", true},
		{"inside a 2-byte rune", "hé", 2, "h", true},
		{"after a 2-byte rune", "héllo", 3, "hé", true},
		{"inside a 3-byte rune", "日本語", 5, "日", true},
		{"on a 3-byte boundary", "日本語", 6, "日本", true},
		{"inside a 4-byte rune", "a🙂b", 4, "a", true},
		{"nothing fits", "🙂", 3, "", true},
		{"zero max", "abc", 0, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, cut := Preview(tt.s, tt.max)
			if got != tt.want || cut != tt.wantCut {
				t.Errorf("Preview(%q, %d) = %q, %v; want %q, %v", tt.s, tt.max, got, cut, tt.want, tt.wantCut)
			}
		})
	}
}

// TestPreviewProperties: for every cut point of mixed-width text, Preview
// returns the longest valid UTF-8 prefix within max bytes.
func TestPreviewProperties(t *testing.T) {
	t.Parallel()
	s := "aé日🙂" + strings.Repeat("x日é🙂", 3) + "e\u0301" // 1-4 byte runes, a combining accent
	for max := 0; max <= len(s)+1; max++ {
		got, cut := Preview(s, max)
		switch {
		case len(got) > max:
			t.Errorf("max %d: %d bytes", max, len(got))
		case !strings.HasPrefix(s, got):
			t.Errorf("max %d: %q is not a prefix", max, got)
		case !utf8.ValidString(got):
			t.Errorf("max %d: %q is not valid UTF-8", max, got)
		case cut != (got != s):
			t.Errorf("max %d: cut = %v for %q", max, cut, got)
		case got != s:
			// The next rune must not have fit.
			if _, size := utf8.DecodeRuneInString(s[len(got):]); len(got)+size <= max {
				t.Errorf("max %d: %q stops short; the next rune fits", max, got)
			}
		}
	}
}

func TestFilterMatch(t *testing.T) {
	t.Parallel()
	e := &Event{TenantID: "acme", SessionID: "ses_1", TurnID: "turn_1"}
	tests := []struct {
		name string
		f    Filter
		want bool
	}{
		{"zero filter matches everything", Filter{}, true},
		{"tenant", Filter{TenantID: "acme"}, true},
		{"other tenant", Filter{TenantID: "globex"}, false},
		{"session", Filter{SessionID: "ses_1"}, true},
		{"other session", Filter{SessionID: "ses_2"}, false},
		{"turn", Filter{TurnID: "turn_1"}, true},
		{"other turn", Filter{TurnID: "turn_2"}, false},
		{"all fields", Filter{TenantID: "acme", SessionID: "ses_1", TurnID: "turn_1"}, true},
		{"one field off", Filter{TenantID: "acme", SessionID: "ses_1", TurnID: "turn_2"}, false},
		{"right session, other tenant", Filter{TenantID: "globex", SessionID: "ses_1"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := tt.f.Match(e); got != tt.want {
				t.Errorf("%+v.Match(%+v) = %v, want %v", tt.f, e, got, tt.want)
			}
		})
	}
	// An event without a turn (session.created) matches no turn filter.
	if (Filter{TurnID: "turn_1"}).Match(&Event{SessionID: "ses_1"}) {
		t.Error("a turn filter matched an event without a turn")
	}
}

// TestJSONCaches: JSON encodes once; MarshalJSON returns the same bytes.
func TestJSONCaches(t *testing.T) {
	t.Parallel()
	e := &Event{Type: SessionCreated, EventID: "evt_1", SchemaVersion: SchemaVersion, Sequence: 1,
		Payload: &SessionPayload{Agent: "support"}, Cursor: 7, TenantID: "acme"}
	first, err := e.JSON()
	if err != nil {
		t.Fatal(err)
	}
	e.Payload.(*SessionPayload).Agent = "changed after encoding"
	second, err := e.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if string(first) != string(second) {
		t.Errorf("second encoding %s differs from the first %s", second, first)
	}
	for _, internal := range []string{"acme", `"cursor"`, `"tenantId"`} {
		if strings.Contains(string(first), internal) {
			t.Errorf("encoding %s exposes %s", first, internal)
		}
	}
}

func TestDecode(t *testing.T) {
	t.Parallel()
	t.Run("unknown payload stays raw", func(t *testing.T) {
		t.Parallel()
		e, err := Decode([]byte(`{"type":"channel.connected","eventId":"evt_1","timestamp":"2026-11-21T13:00:00Z","payload":{"n":1}}`))
		if err != nil {
			t.Fatal(err)
		}
		if p, ok := e.Payload.(RawPayload); !ok || string(p) != `{"n":1}` {
			t.Errorf("payload = %#v, want RawPayload {\"n\":1}", e.Payload)
		}
	})
	for name, doc := range map[string]string{
		"not JSON":           `{"type":`,
		"payload wrong type": `{"type":"turn.completed","eventId":"evt_1","payload":"done"}`,
		"field wrong type":   `{"type":"tool.result","eventId":"evt_1","payload":{"isError":"yes"}}`,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if e, err := Decode([]byte(doc)); err == nil {
				t.Errorf("Decode(%s) = %+v, want an error", doc, e)
			}
		})
	}
}

// TestSetSequencePatchesEncoding: an event prepared before its sequence is
// known encodes exactly as one encoded afterwards.
func TestSetSequencePatchesEncoding(t *testing.T) {
	t.Parallel()
	mk := func() *Event {
		return &Event{Type: ToolResult, EventID: "evt_1", Timestamp: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
			SchemaVersion: SchemaVersion, RuntimeID: "rt_\"sequence\":7", SessionID: "s",
			Payload: &ToolResultPayload{Name: "x", Preview: `"sequence":9`}}
	}
	for _, seq := range []int64{1, 9, 10, 123456789} {
		prepared := mk()
		if err := prepared.Prepare(); err != nil {
			t.Fatal(err)
		}
		prepared.SetSequence(seq)
		fresh := mk()
		fresh.Sequence = seq
		got, _ := prepared.JSON()
		want, _ := fresh.JSON()
		if diff := cmp.Diff(string(want), string(got)); diff != "" {
			t.Errorf("sequence %d (-fresh +prepared):\n%s", seq, diff)
		}
	}
	unprepared := mk()
	unprepared.SetSequence(4)
	if b, _ := unprepared.JSON(); !strings.Contains(string(b), `"sequence":4,`) {
		t.Errorf("unprepared event encodes %s", b)
	}
}
