package tool_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"

	"github.com/agentrt/agentrt/tool"
)

func TestCanonicalJSON(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want string
	}{
		{name: "sorted keys", in: `{"b":1,"a":2}`, want: `{"a":2,"b":1}`},
		{name: "nested and whitespace", in: "{ \"z\" : [ 1 , {\"y\":true,\"x\":null} ],\n\t\"a\": {\"d\":\"e\",\"c\":\"f\"} }", want: `{"a":{"c":"f","d":"e"},"z":[1,{"x":null,"y":true}]}`},
		{name: "numbers as written", in: `{"n":1.50,"e":1E+2,"big":123456789012345678901234567890,"neg":-0}`, want: `{"big":123456789012345678901234567890,"e":1E+2,"n":1.50,"neg":-0}`},
		{name: "no html escaping", in: `{"html":"<a href=\"x\">&</a>"}`, want: `{"html":"<a href=\"x\">&</a>"}`},
		{name: "unicode escapes decoded", in: `{"s":"caf\u00e9 \u2028"}`, want: "{\"s\":\"café \\u2028\"}"},
		{name: "duplicate keys keep the last", in: `{"a":1,"a":2}`, want: `{"a":2}`},
		{name: "scalar", in: ` "x" `, want: `"x"`},
		{name: "array", in: `[3, 2, 1]`, want: `[3,2,1]`},
		{name: "empty object", in: `{ }`, want: `{}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := tool.CanonicalJSON(json.RawMessage(tt.in))
			if err != nil {
				t.Fatalf("CanonicalJSON: %v", err)
			}
			if string(got) != tt.want {
				t.Errorf("CanonicalJSON(%s) = %s, want %s", tt.in, got, tt.want)
			}
		})
	}

	for _, in := range []string{``, `{`, `{"a":1} x`, `nope`} {
		t.Run("invalid "+in, func(t *testing.T) {
			t.Parallel()
			if got, err := tool.CanonicalJSON(json.RawMessage(in)); err == nil {
				t.Errorf("CanonicalJSON(%q) = %s, want an error", in, got)
			}
		})
	}
}

func TestArgumentsSHA256(t *testing.T) {
	t.Parallel()
	hash := func(b string) string {
		sum := sha256.Sum256([]byte(b))
		return hex.EncodeToString(sum[:])
	}

	a := tool.ArgumentsSHA256(json.RawMessage(`{"order_id":"A-1","limit":2}`))
	b := tool.ArgumentsSHA256(json.RawMessage("{ \"limit\": 2,\n \"order_id\": \"A-1\" }"))
	if a != b {
		t.Errorf("equal arguments hash differently: %s vs %s", a, b)
	}
	if want := hash(`{"limit":2,"order_id":"A-1"}`); a != want {
		t.Errorf("ArgumentsSHA256 = %s, want %s (hash of the canonical form)", a, want)
	}
	if c := tool.ArgumentsSHA256(json.RawMessage(`{"order_id":"A-1","limit":3}`)); c == a {
		t.Error("different arguments hash equally")
	}
	raw := `{"order_id": "A-1"` // malformed: the raw bytes are hashed
	if got, want := tool.ArgumentsSHA256(json.RawMessage(raw)), hash(raw); got != want {
		t.Errorf("ArgumentsSHA256(malformed) = %s, want %s", got, want)
	}
}
