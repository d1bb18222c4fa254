package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestDecodeProblem: every way the JSON decoder refuses a body is told
// in the body's terms, never with the Go types behind it.
func TestDecodeProblem(t *testing.T) {
	t.Parallel()
	type inner struct {
		Limit int `json:"limit"`
	}
	type body struct {
		Input  string          `json:"input"`
		Close  bool            `json:"close"`
		Cost   float64         `json:"cost"`
		Tags   []string        `json:"tags"`
		Inner  inner           `json:"inner"`
		Byptr  *inner          `json:"byptr"`
		Update json.RawMessage `json:"update"`
	}
	decode := func(s string) error {
		dec := json.NewDecoder(strings.NewReader(s))
		dec.DisallowUnknownFields()
		var b body
		return dec.Decode(&b)
	}
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"syntax", decode(`{"input" "x"}`), `the body is not valid JSON: invalid character '"' after object key (at byte 10)`},
		{"cut short", decode(`{"input": "x`), "the body is not valid JSON: it ends inside the value"},
		{"not an object", decode(`["x"]`), "the body is a JSON array; want an object"},
		{"a string field", decode(`{"input": 5}`), "field input is a JSON number; want a string"},
		{"a bool field", decode(`{"close": "yes"}`), "field close is a JSON string; want true or false"},
		{"a number field", decode(`{"cost": {}}`), "field cost is a JSON object; want a number"},
		{"an array field", decode(`{"tags": "a"}`), "field tags is a JSON string; want an array"},
		{"a nested field", decode(`{"inner": {"limit": 1.5}}`), "field inner.limit is a JSON number; want an integer"},
		{"through a pointer", decode(`{"byptr": 3}`), "field byptr is a JSON number; want an object"},
		{"an array for an object", decode(`{"inner": [1]}`), "field inner is a JSON array; want an object"},
		{"unknown field", decode(`{"bogus": 1}`), `unknown field "bogus"`},
		{"too slow", fmt.Errorf("read tcp 127.0.0.1:1: %w", os.ErrDeadlineExceeded), "the body did not arrive in time"},
		{"connection broken", errors.New("read tcp 127.0.0.1:1: connection reset by peer"), "the body could not be read"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if tt.err == nil {
				t.Fatal("the decoder accepted the body")
			}
			if got := decodeProblem(tt.err); got != tt.want {
				t.Errorf("decodeProblem(%v) = %q, want %q", tt.err, got, tt.want)
			}
		})
	}
}
