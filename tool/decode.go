package tool

import (
	"encoding/json"
	"slices"
	"unicode/utf8"

	"github.com/agentrt/agentrt/internal/jsonread"
)

// maxFastDepth bounds the nesting fastObject decodes; deeper input takes
// encoding/json's path, which has its own limit and error.
const maxFastDepth = 256

// fastOptions read as encoding/json's Decoder with UseNumber would,
// declining what fastObject leaves to it.
var fastOptions = jsonread.Options{MaxDepth: maxFastDepth, UseNumber: true, PlainStrings: true}

// fastObject decodes input as encoding/json's Decoder with UseNumber
// would, for the common case: one JSON object whose strings have no
// escapes and are valid UTF-8, nested at most maxFastDepth levels. It
// reports false for anything else (escapes, invalid UTF-8, invalid JSON,
// another top-level kind), and the caller decodes with encoding/json,
// which also words the errors. On success the value equals the
// Decoder's: maps of any, []any, string, json.Number (as written), bool
// and nil; a repeated key keeps its last value. Strings share one copy
// of input, which saves the Decoder's buffer and one allocation a string.
func fastObject(input []byte) (map[string]any, bool) {
	m, err := jsonread.Object(input, fastOptions)
	return m, err == nil
}

// appendCanonical appends the canonical JSON of v (see CanonicalJSON),
// a value decoded with numbers as json.Number, to dst. It reports false
// for a value it leaves to encoding/json: a string that needs escaping,
// a number that is not valid JSON, a type a decoder does not make.
func appendCanonical(dst []byte, v any) ([]byte, bool) {
	switch v := v.(type) {
	case nil:
		return append(dst, "null"...), true
	case bool:
		if v {
			return append(dst, "true"...), true
		}
		return append(dst, "false"...), true
	case string:
		return appendPlainString(dst, v)
	case json.Number:
		if !jsonread.IsNumber(string(v)) {
			return dst, false
		}
		return append(dst, v...), true
	case []any:
		dst = append(dst, '[')
		for i, e := range v {
			if i > 0 {
				dst = append(dst, ',')
			}
			var ok bool
			if dst, ok = appendCanonical(dst, e); !ok {
				return dst, false
			}
		}
		return append(dst, ']'), true
	case map[string]any:
		var buf [16]string
		keys := buf[:0]
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		dst = append(dst, '{')
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			var ok bool
			if dst, ok = appendPlainString(dst, k); !ok {
				return dst, false
			}
			dst = append(dst, ':')
			if dst, ok = appendCanonical(dst, v[k]); !ok {
				return dst, false
			}
		}
		return append(dst, '}'), true
	}
	return dst, false
}

// appendPlainString appends s quoted, when encoding/json would write it
// unchanged: valid UTF-8 without control characters, quotes,
// backslashes, U+2028 or U+2029.
func appendPlainString(dst []byte, s string) ([]byte, bool) {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 || c == '"' || c == '\\' {
				return dst, false
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || r == '\u2028' || r == '\u2029' {
			return dst, false
		}
		i += size
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"'), true
}
