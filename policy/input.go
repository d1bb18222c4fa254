package policy

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// maxInputDepth bounds the nesting of a call input that CEL sees.
const maxInputDepth = 1000

// errInputNotObject is the input of a call that is not a JSON object.
var errInputNotObject = errors.New("input is not a JSON object")

// decodeInput decodes a call's input as CEL sees it: a JSON object as
// map[string]any, with integers that fit as int64 and other numbers as
// float64. No input (or null) is an empty object. It is a strict JSON
// reader that shares the input's memory: strings without escapes are
// substrings of one copy of raw, which is much faster than
// encoding/json's reflection for the few keys a when expression reads.
func decodeInput(raw json.RawMessage) (map[string]any, error) {
	d := &inputDecoder{s: string(raw)}
	d.space()
	switch {
	case d.i == len(d.s):
		return map[string]any{}, nil
	case d.s[d.i] == 'n':
		if err := d.literal("null"); err != nil {
			return nil, err
		}
		if d.space(); d.i != len(d.s) {
			return nil, d.errorf("data after the JSON value")
		}
		return map[string]any{}, nil
	case d.s[d.i] != '{':
		return nil, errInputNotObject
	}
	m, err := d.object()
	if err != nil {
		return nil, err
	}
	if d.space(); d.i != len(d.s) {
		return nil, d.errorf("data after the JSON object")
	}
	return m, nil
}

type inputDecoder struct {
	s     string
	i     int
	depth int
}

func (d *inputDecoder) errorf(format string, args ...any) error {
	return fmt.Errorf("decoding input at offset %d: %s", d.i, fmt.Sprintf(format, args...))
}

func (d *inputDecoder) space() {
	for d.i < len(d.s) {
		switch d.s[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

func (d *inputDecoder) value() (any, error) {
	d.space()
	if d.i == len(d.s) {
		return nil, d.errorf("unexpected end of input")
	}
	switch c := d.s[d.i]; {
	case c == '{':
		return d.object()
	case c == '[':
		return d.array()
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
	default:
		return nil, d.errorf("invalid character %q", c)
	}
}

func (d *inputDecoder) literal(lit string) error {
	if len(d.s)-d.i < len(lit) || d.s[d.i:d.i+len(lit)] != lit {
		return d.errorf("invalid literal")
	}
	d.i += len(lit)
	return nil
}

func (d *inputDecoder) enter() error {
	d.depth++
	if d.depth > maxInputDepth {
		return d.errorf("nested more than %d levels deep", maxInputDepth)
	}
	return nil
}

func (d *inputDecoder) object() (map[string]any, error) {
	if err := d.enter(); err != nil {
		return nil, err
	}
	d.i++ // {
	m := make(map[string]any)
	d.space()
	if d.i < len(d.s) && d.s[d.i] == '}' {
		d.i++
		d.depth--
		return m, nil
	}
	for {
		d.space()
		if d.i == len(d.s) || d.s[d.i] != '"' {
			return nil, d.errorf("expected a string key")
		}
		k, err := d.str()
		if err != nil {
			return nil, err
		}
		d.space()
		if d.i == len(d.s) || d.s[d.i] != ':' {
			return nil, d.errorf("expected ':'")
		}
		d.i++
		v, err := d.value()
		if err != nil {
			return nil, err
		}
		m[k] = v
		d.space()
		if d.i == len(d.s) {
			return nil, d.errorf("unexpected end of input")
		}
		switch d.s[d.i] {
		case ',':
			d.i++
		case '}':
			d.i++
			d.depth--
			return m, nil
		default:
			return nil, d.errorf("expected ',' or '}'")
		}
	}
}

func (d *inputDecoder) array() ([]any, error) {
	if err := d.enter(); err != nil {
		return nil, err
	}
	d.i++ // [
	a := []any{}
	d.space()
	if d.i < len(d.s) && d.s[d.i] == ']' {
		d.i++
		d.depth--
		return a, nil
	}
	for {
		v, err := d.value()
		if err != nil {
			return nil, err
		}
		a = append(a, v)
		d.space()
		if d.i == len(d.s) {
			return nil, d.errorf("unexpected end of input")
		}
		switch d.s[d.i] {
		case ',':
			d.i++
		case ']':
			d.i++
			d.depth--
			return a, nil
		default:
			return nil, d.errorf("expected ',' or ']'")
		}
	}
}

// str reads a string. One without escapes and in valid UTF-8 is a
// substring of the input; others go through encoding/json, which decodes
// escapes and replaces invalid UTF-8 as every JSON reader in agentrt does.
func (d *inputDecoder) str() (string, error) {
	start := d.i
	d.i++ // "
	plain := true
	for d.i < len(d.s) {
		c := d.s[d.i]
		switch {
		case c == '"':
			d.i++
			if plain {
				return d.s[start+1 : d.i-1], nil
			}
			var s string
			if err := json.Unmarshal([]byte(d.s[start:d.i]), &s); err != nil {
				d.i = start
				return "", d.errorf("invalid string: %v", err)
			}
			return s, nil
		case c == '\\':
			plain = false
			d.i += 2
		case c < 0x20:
			return "", d.errorf("control character in string")
		case c >= utf8.RuneSelf:
			r, size := utf8.DecodeRuneInString(d.s[d.i:])
			if r == utf8.RuneError && size == 1 {
				plain = false
			}
			d.i += size
		default:
			d.i++
		}
	}
	return "", d.errorf("unterminated string")
}

// number reads a number in JSON's grammar: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func (d *inputDecoder) number() (any, error) {
	start := d.i
	digits := func() int {
		n := 0
		for d.i < len(d.s) && d.s[d.i] >= '0' && d.s[d.i] <= '9' {
			d.i++
			n++
		}
		return n
	}
	if d.s[d.i] == '-' {
		d.i++
	}
	switch {
	case d.i < len(d.s) && d.s[d.i] == '0':
		d.i++
	case digits() == 0:
		return nil, d.errorf("invalid number")
	}
	integer := true
	if d.i < len(d.s) && d.s[d.i] == '.' {
		integer = false
		d.i++
		if digits() == 0 {
			return nil, d.errorf("invalid number")
		}
	}
	if d.i < len(d.s) && (d.s[d.i] == 'e' || d.s[d.i] == 'E') {
		integer = false
		d.i++
		if d.i < len(d.s) && (d.s[d.i] == '+' || d.s[d.i] == '-') {
			d.i++
		}
		if digits() == 0 {
			return nil, d.errorf("invalid number")
		}
	}
	tok := d.s[start:d.i]
	if integer {
		if n, err := strconv.ParseInt(tok, 10, 64); err == nil {
			return n, nil
		}
	}
	f, _ := strconv.ParseFloat(tok, 64) // valid syntax; ±Inf when out of range
	return f, nil
}
