package policy

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentrt/agentrt/internal/jsonread"
)

// maxInputDepth bounds the nesting of a call input that CEL sees.
const maxInputDepth = 1000

// errInputNotObject is the input of a call that is not a JSON object.
var errInputNotObject = jsonread.ErrNotObject

// inputOptions read a call's input as CEL sees it.
var inputOptions = jsonread.Options{MaxDepth: maxInputDepth, EmptyIsObject: true}

// decodeInput decodes a call's input as CEL sees it: a JSON object as
// map[string]any, with integers that fit as int64 and other numbers as
// float64. No input (or null) is an empty object. It is a strict JSON
// reader (package jsonread) that shares the input's memory: strings
// without escapes are substrings of one copy of raw, which is much
// faster than encoding/json's reflection for the few keys a when
// expression reads.
func decodeInput(raw json.RawMessage) (map[string]any, error) {
	m, err := jsonread.Object(raw, inputOptions)
	if se, ok := errors.AsType[*jsonread.SyntaxError](err); ok {
		return nil, fmt.Errorf("decoding input at offset %d: %s", se.Offset, se.Msg)
	}
	return m, err
}
