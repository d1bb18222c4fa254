package tool

import (
	"unicode/utf8"

	"encoding/json"
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
