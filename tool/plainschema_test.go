package tool

import (
	"encoding/json"
	"testing"
)

var plainSchemas = []string{
	`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`,
	`{"type":"object","description":"d","properties":{"n":{"type":"number"},"b":{"type":"boolean","default":true},"z":{"type":"null"},"l":{"type":"array"},"o":{"type":"object","properties":{"x":{"type":"string"}},"required":["x"],"additionalProperties":false},"any":{"title":"t"}},"additionalProperties":false}`,
	`{"type":"object","required":["a","b"]}`,
	`{"type":"object","properties":{},"additionalProperties":true,"examples":[{}],"$comment":"c"}`,
}

var notPlainSchemas = []string{
	`{"type":"object","properties":{"n":{"type":"integer"}}}`,
	`{"type":"object","properties":{"s":{"type":"string","minLength":1}}}`,
	`{"type":"object","properties":{"s":{"type":["string","null"]}}}`,
	`{"type":"object","additionalProperties":{"type":"string"}}`,
	`{"type":"object","properties":{"s":true}}`,
	`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object"}`,
	`{"type":"object","$defs":{"a":{"type":"string"}},"properties":{"a":{"$ref":"#/$defs/a"}}}`,
}

var plainInputs = []string{
	`{}`, `{"text":"x"}`, `{"text":1}`, `{"text":null}`, `{"a":1,"b":2}`, `{"a":1}`,
	`{"n":1.5,"b":false,"z":null,"l":[1,"x"],"o":{"x":"y"},"any":{"q":[]}}`,
	`{"n":"1"}`, `{"b":1}`, `{"z":0}`, `{"l":{}}`, `{"o":{"x":"y","extra":1}}`, `{"o":{}}`, `{"o":[]}`,
	`{"other":1}`, `{"text":"x","other":true}`,
}

// TestPlainSchemaDecidesAsTheValidator: for a schema plainOf accepts,
// valid says what the JSON Schema validator says, on every input.
func TestPlainSchemaDecidesAsTheValidator(t *testing.T) {
	for _, raw := range notPlainSchemas {
		if _, plain, err := compileInputSchema("t", json.RawMessage(raw)); err != nil || plain != nil {
			t.Errorf("compileInputSchema(%s) = %v, %v; want no plain schema", raw, plain, err)
		}
	}
	for _, raw := range plainSchemas {
		for _, in := range plainInputs {
			checkPlainSchema(t, raw, []byte(in))
		}
	}
}

func FuzzPlainSchema(f *testing.F) {
	for i := range plainSchemas {
		for _, in := range plainInputs {
			f.Add(uint8(i), []byte(in))
		}
	}
	f.Fuzz(func(t *testing.T, i uint8, in []byte) {
		checkPlainSchema(t, plainSchemas[int(i)%len(plainSchemas)], in)
	})
}

func checkPlainSchema(t *testing.T, raw string, in []byte) {
	t.Helper()
	schema, plain, err := compileInputSchema("t", json.RawMessage(raw))
	if err != nil || plain == nil {
		t.Fatalf("compileInputSchema(%s) = %v, %v; want a plain schema", raw, plain, err)
	}
	v, ok := slowObject(in)
	if !ok {
		return
	}
	want := schema.Validate(v) == nil
	if got := plain.valid(v); got != want {
		t.Errorf("schema %s, input %s: plain valid = %v, validator %v", raw, in, got, want)
	}
}
