package jsonread

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

var (
	floats  = Options{MaxDepth: 1000, EmptyIsObject: true}
	numbers = Options{MaxDepth: 256, UseNumber: true, PlainStrings: true}
)

func TestObject(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		o    Options
		want map[string]any
		err  string // a substring of the error; "" for none
	}{
		{``, floats, map[string]any{}, ""},
		{` null `, floats, map[string]any{}, ""},
		{``, numbers, nil, "input is not a JSON object"},
		{`null`, numbers, nil, "input is not a JSON object"},
		{`null x`, floats, nil, "offset 5: data after the JSON value"},
		{`{} x`, floats, nil, "offset 3: data after the JSON object"},
		{`{"a":1,"b":-2.5,"c":"x","d":[true,false,null],"e":{"f":1e3},"h":9223372036854775808}`, floats, map[string]any{
			"a": int64(1), "b": -2.5, "c": "x", "d": []any{true, false, nil}, "e": map[string]any{"f": 1000.0},
			"h": 9223372036854775808.0,
		}, ""},
		{`{"a":1,"b":-2.5,"c":"x","d":[true,false,null],"e":{"f":1e3},"h":9223372036854775808}`, numbers, map[string]any{
			"a": json.Number("1"), "b": json.Number("-2.5"), "c": "x", "d": []any{true, false, nil},
			"e": map[string]any{"f": json.Number("1e3")}, "h": json.Number("9223372036854775808"),
		}, ""},
		{`{"a":1,"a":2}`, floats, map[string]any{"a": int64(2)}, ""},
		{`{"g":"\u00e9\n"}`, floats, map[string]any{"g": "é\n"}, ""},
		{`{"s":"` + "\xff" + `"}`, floats, map[string]any{"s": "\ufffd"}, ""},
		{`{"g":"\u00e9\n"}`, numbers, nil, ErrNotPlain.Error()},
		{`{"s":"` + "\xff" + `"}`, numbers, nil, ErrNotPlain.Error()},
		{`[]`, floats, nil, "input is not a JSON object"},
		{`"x"`, numbers, nil, "input is not a JSON object"},
		{`nul`, floats, nil, "offset 0: invalid literal"},
		{`{"a":01}`, floats, nil, "offset 6: expected ',' or '}'"},
		{`{"a":1.}`, floats, nil, "offset 7: invalid number"},
		{`{"a":"` + "\x01" + `"}`, floats, nil, "offset 6: control character in string"},
		{`{"a":"\x"}`, floats, nil, "offset 5: invalid string"},
		{`{"a" 1}`, floats, nil, "expected ':'"},
		{`{"a":1`, floats, nil, "unexpected end of input"},
		{`{"a":[1 2]}`, floats, nil, "expected ',' or ']'"},
		{`{"a":x}`, floats, nil, `invalid character 'x'`},
		{`{a:1}`, floats, nil, "expected a string key"},
		{`{"a":"x`, floats, nil, "unterminated string"},
		{strings.Repeat(`{"a":`, 1001), floats, nil, "offset 5000: nested more than 1000 levels deep"},
		{`{"a":` + strings.Repeat(`[`, 256), numbers, nil, "offset 260: nested more than 256 levels deep"},
	}
	for _, tt := range tests {
		got, err := Object([]byte(tt.in), tt.o)
		switch {
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("Object(%.40q, %+v) error = %v, want %q", tt.in, tt.o, err, tt.err)
		case tt.err == "" && err != nil:
			t.Errorf("Object(%.40q, %+v): %v", tt.in, tt.o, err)
		case tt.err == "":
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Object(%.40q, %+v) (-want +got):\n%s", tt.in, tt.o, diff)
			}
		}
	}
}

func TestIsNumber(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"0", "-0", "1", "-12", "1.5", "-0.25e+3", "1E-2", "123456789012345678901234567890"} {
		if !IsNumber(s) {
			t.Errorf("IsNumber(%q) = false", s)
		}
	}
	for _, s := range []string{"", "-", "+1", "01", "1.", ".5", "1e", "1e+", "0x1", "1 ", " 1", "NaN", "1.5.2"} {
		if IsNumber(s) {
			t.Errorf("IsNumber(%q) = true", s)
		}
	}
}

// FuzzObject: in either mode, what Object decodes encoding/json decodes
// to the same value, and what Object rejects as invalid JSON encoding/json
// rejects too.
func FuzzObject(f *testing.F) {
	for _, s := range []string{
		`{"a":1,"b":[1,2.5,"x",null,true,false,{}],"c":{"d":"e"}}`, `{"a":"\u00e9\ud83d\ude00\"\\\/\b\f\n\r\t"}`,
		`{"a":-0,"b":1E+2,"c":-1.5e-3,"d":123456789012345678901234567890}`, `{"a":1,"a":2}`,
		`{"a":"` + "\xff\xfe" + `"}`, `{"a":"\ud800"}`, ` { } `, `{"a":1}x`, `{"a":01}`, `{"a":.5}`,
		`{"a":1.}`, `{"a":-}`, `{"a":"x`, `{"a":[1,]}`, `{,}`, `{"a":tru}`, `null`, `[]`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		want, wantErr := reference(data)
		for _, o := range []Options{floats, numbers} {
			got, err := Object(data, o)
			if err != nil {
				var se *SyntaxError
				if errors.As(err, &se) && wantErr == nil && !strings.Contains(se.Msg, "nested") {
					t.Fatalf("Object(%q, %+v) error = %v; encoding/json decodes it", data, o, err)
				}
				continue
			}
			if wantErr != nil {
				if trimmed := bytes.Trim(data, " \t\r\n"); o.EmptyIsObject && (len(trimmed) == 0 || string(trimmed) == "null") {
					continue
				}
				t.Fatalf("Object(%q, %+v) = %v; encoding/json error = %v", data, o, got, wantErr)
			}
			w := want
			if !o.UseNumber {
				w = floatsOf(want).(map[string]any)
			}
			if diff := cmp.Diff(w, got, cmpopts.EquateNaNs()); diff != "" {
				t.Fatalf("Object(%q, %+v) (-encoding/json +got):\n%s", data, o, diff)
			}
		}
	})
}

// reference decodes data with encoding/json's Decoder and UseNumber,
// requiring one object.
func reference(data []byte) (map[string]any, error) {
	if !json.Valid(data) {
		return nil, errors.New("invalid JSON")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, err
	}
	if m == nil {
		return nil, errors.New("null")
	}
	return m, nil
}

// floatsOf converts json.Numbers as Options without UseNumber reads them.
func floatsOf(v any) any {
	switch v := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(v))
		for k, x := range v {
			m[k] = floatsOf(x)
		}
		return m
	case []any:
		a := make([]any, len(v))
		for i, x := range v {
			a[i] = floatsOf(x)
		}
		return a
	case json.Number:
		if n, err := v.Int64(); err == nil && !strings.ContainsAny(string(v), ".eE") {
			return n
		}
		f, _ := v.Float64()
		return f
	}
	return v
}
