package tool

import (
	"encoding/json"
	"slices"
	"unicode/utf8"
)

// maxFastDepth bounds the nesting fastObject decodes; deeper input takes
// encoding/json's path, which has its own limit and error.
const maxFastDepth = 256

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
	d := fastDecoder{s: string(input)}
	d.space()
	if d.i == len(d.s) || d.s[d.i] != '{' {
		return nil, false
	}
	m, ok := d.object(0)
	if !ok {
		return nil, false
	}
	if d.space(); d.i != len(d.s) {
		return nil, false
	}
	return m, true
}

type fastDecoder struct {
	s string
	i int
}

func (d *fastDecoder) space() {
	for d.i < len(d.s) {
		switch d.s[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

func (d *fastDecoder) value(depth int) (any, bool) {
	d.space()
	if d.i == len(d.s) {
		return nil, false
	}
	switch c := d.s[d.i]; {
	case c == '{':
		return d.object(depth)
	case c == '[':
		return d.array(depth)
	case c == '"':
		return d.str()
	case c == 't':
		return true, d.literal("true")
	case c == 'f':
		return false, d.literal("false")
	case c == 'n':
		return nil, d.literal("null")
	case c == '-' || (c >= '0' && c <= '9'):
		return d.number()
	}
	return nil, false
}

func (d *fastDecoder) literal(lit string) bool {
	if len(d.s)-d.i < len(lit) || d.s[d.i:d.i+len(lit)] != lit {
		return false
	}
	d.i += len(lit)
	return true
}

// object decodes an object starting at '{'.
func (d *fastDecoder) object(depth int) (map[string]any, bool) {
	if depth++; depth > maxFastDepth {
		return nil, false
	}
	d.i++ // {
	m := make(map[string]any)
	d.space()
	if d.i < len(d.s) && d.s[d.i] == '}' {
		d.i++
		return m, true
	}
	for {
		d.space()
		if d.i == len(d.s) || d.s[d.i] != '"' {
			return nil, false
		}
		k, ok := d.str()
		if !ok {
			return nil, false
		}
		d.space()
		if d.i == len(d.s) || d.s[d.i] != ':' {
			return nil, false
		}
		d.i++
		v, ok := d.value(depth)
		if !ok {
			return nil, false
		}
		m[k] = v
		d.space()
		if d.i == len(d.s) {
			return nil, false
		}
		switch d.s[d.i] {
		case ',':
			d.i++
		case '}':
			d.i++
			return m, true
		default:
			return nil, false
		}
	}
}

// array decodes an array starting at '['.
func (d *fastDecoder) array(depth int) ([]any, bool) {
	if depth++; depth > maxFastDepth {
		return nil, false
	}
	d.i++ // [
	a := []any{}
	d.space()
	if d.i < len(d.s) && d.s[d.i] == ']' {
		d.i++
		return a, true
	}
	for {
		v, ok := d.value(depth)
		if !ok {
			return nil, false
		}
		a = append(a, v)
		d.space()
		if d.i == len(d.s) {
			return nil, false
		}
		switch d.s[d.i] {
		case ',':
			d.i++
		case ']':
			d.i++
			return a, true
		default:
			return nil, false
		}
	}
}

// str decodes a string starting at '"' that has no escapes and is valid
// UTF-8 without control characters.
func (d *fastDecoder) str() (string, bool) {
	start := d.i + 1
	ascii := true
	for j := start; j < len(d.s); j++ {
		switch c := d.s[j]; {
		case c == '"':
			d.i = j + 1
			s := d.s[start:j]
			if !ascii && !utf8.ValidString(s) {
				return "", false
			}
			return s, true
		case c == '\\' || c < 0x20:
			return "", false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return "", false
}

// number decodes a number as written, checking JSON's grammar.
func (d *fastDecoder) number() (json.Number, bool) {
	s, j := d.s, d.i
	if s[j] == '-' {
		j++
	}
	switch {
	case j < len(s) && s[j] == '0':
		j++
	case j < len(s) && s[j] >= '1' && s[j] <= '9':
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
		}
	default:
		return "", false
	}
	if j < len(s) && s[j] == '.' {
		j++
		if j == len(s) || s[j] < '0' || s[j] > '9' {
			return "", false
		}
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
		}
	}
	if j < len(s) && (s[j] == 'e' || s[j] == 'E') {
		j++
		if j < len(s) && (s[j] == '+' || s[j] == '-') {
			j++
		}
		if j == len(s) || s[j] < '0' || s[j] > '9' {
			return "", false
		}
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
		}
	}
	n := json.Number(s[d.i:j])
	d.i = j
	return n, true
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
		d := fastDecoder{s: string(v)}
		if v == "" || !isNumberStart(v[0]) {
			return dst, false
		}
		if _, ok := d.number(); !ok || d.i != len(d.s) {
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

func isNumberStart(c byte) bool { return c == '-' || (c >= '0' && c <= '9') }

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
