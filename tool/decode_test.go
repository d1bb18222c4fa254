package tool

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// slowObject is what decodeObject did before fastObject: encoding/json's
// Decoder with UseNumber.
func slowObject(input []byte) (any, bool) {
	dec := json.NewDecoder(bytes.NewReader(input))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return nil, false
	}
	if len(bytes.TrimLeft(input[dec.InputOffset():], " \t\r\n")) > 0 {
		return nil, false
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, false
	}
	return v, true
}

var decodeSeeds = []string{
	`{}`, ` { } `, `{"a":1}`, `{"text":"session=1 turn=2 xxxx"}`,
	`{"a":[1,2.5,-0,1e3,1E-2,-12.5e+7],"b":{"c":null,"d":true,"e":false},"f":[]}`,
	`{"a":"é ü 日本"}`, `{"a":"\u00e9"}`, `{"a":"\n"}`, `{"a":"x\"y"}`,
	`{"a":1,"a":2}`, `{"a":01}`, `{"a":1.}`, `{"a":.5}`, `{"a":-}`, `{"a":1e}`,
	`{"a":+1}`, `{"a":tru}`, `{"a":nul}`, `{"a" 1}`, `{a:1}`, `{"a":1,}`, `{"a":[1,]}`,
	`{"a":1} x`, `{"a":1}{}`, `[]`, `"x"`, `1`, `null`, ``, `   `, `{`, `{"a":"`,
	"{\"a\":\"\xff\"}", "{\"a\":\"\x01\"}", `{"a":[[[[[[[[]]]]]]]]}`, `{"a":1}` + "\n\t ",
	`{"big":123456789012345678901234567890,"neg":-0.0}`,
	`{"b":1,"a":{"d":[true,null],"c":"x"},"é":2,"Z":3}`, `{"a":"\u2028 \u2029 <&>"}`, `{"a\"b":1}`,
	"{\"a\":\"\u2028\"}",
}

// checkCanonical: appendCanonical writes what canonical writes, or
// declines.
func checkCanonical(t *testing.T, v any) {
	t.Helper()
	want, err := canonical(v, 0)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := appendCanonical(nil, v)
	if ok && string(got) != string(want) {
		t.Errorf("appendCanonical(%v) = %s, want %s", v, got, want)
	}
}

// TestAppendCanonical: the common values take the fast path and match
// encoding/json; the ones it declines are left to it.
func TestAppendCanonical(t *testing.T) {
	for _, v := range []any{
		map[string]any{"text": "session=1 turn=2 xxx", "n": json.Number("-1.5e3"), "l": []any{true, false, nil}, "é": map[string]any{}},
		map[string]any{"b": "1", "a": "2", "c": []any{}},
	} {
		if _, ok := appendCanonical(nil, v); !ok {
			t.Errorf("appendCanonical(%v) declined", v)
		}
		checkCanonical(t, v)
	}
	for _, v := range []any{"a\nb", "\u2028", "x\"", "\xff", json.Number("01"), json.Number(""), 1.5, map[string]any{"\n": 1}} {
		if got, ok := appendCanonical(nil, v); ok {
			t.Errorf("appendCanonical(%q) = %s; want it declined", v, got)
		}
	}
}

// TestFastObjectMatchesEncodingJSON checks that the fast path decodes
// what encoding/json decodes to the same value, and declines the rest.
func TestFastObjectMatchesEncodingJSON(t *testing.T) {
	for _, in := range decodeSeeds {
		checkFastObject(t, []byte(in))
	}
	// The common inputs take the fast path.
	for _, in := range []string{`{"text":"session=1 turn=2 xxxx"}`, `{"a":"é","n":[1,-2.5e3],"o":{"b":null}}`} {
		if _, ok := fastObject([]byte(in)); !ok {
			t.Errorf("fastObject(%s) declined", in)
		}
	}
	deep := bytes.Repeat([]byte(`{"a":`), maxFastDepth+5)
	deep = append(deep, '1')
	deep = append(deep, bytes.Repeat([]byte(`}`), maxFastDepth+5)...)
	if _, ok := fastObject(deep); ok {
		t.Errorf("fastObject decoded input nested %d levels", maxFastDepth+5)
	}
	checkFastObject(t, deep)
}

// FuzzFastObject: whatever fastObject decodes, encoding/json decodes to
// the same value.
func FuzzFastObject(f *testing.F) {
	for _, in := range decodeSeeds {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, in []byte) { checkFastObject(t, in) })
}

func checkFastObject(t *testing.T, in []byte) {
	t.Helper()
	fast, ok := fastObject(in)
	slow, slowOK := slowObject(in)
	if slowOK {
		checkCanonical(t, slow)
	}
	if !ok {
		// Declined: decodeObject falls back to encoding/json.
		if got, reason := decodeObject(in); slowOK && (reason != "" || !cmp.Equal(got, slow)) {
			t.Errorf("decodeObject(%q) = %v, %q; want %v", in, got, reason, slow)
		}
		return
	}
	if !slowOK {
		t.Fatalf("fastObject(%q) decoded %v; encoding/json rejects it", in, fast)
	}
	if d := cmp.Diff(slow, any(fast)); d != "" {
		t.Errorf("fastObject(%q) differs from encoding/json (-json +fast):\n%s", in, d)
	}
}
