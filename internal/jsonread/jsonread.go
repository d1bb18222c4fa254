// Package jsonread is the strict JSON reader for a call's input, which
// policy decodes for CEL and tool decodes for validation and hashing.
// It reads one JSON object into maps of any, []any, strings, numbers,
// bools and nil, as encoding/json would, but without reflection and
// sharing the input's memory: a string without escapes is a substring
// of one copy of the input. Options choose how numbers come out, how
// deep the input may nest, and whether a string with escapes or invalid
// UTF-8 is decoded (through encoding/json) or declined.
package jsonread

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// Options say how Object reads.
type Options struct {
	// MaxDepth bounds the nesting of objects and arrays; deeper input
	// is a *SyntaxError.
	MaxDepth int
	// UseNumber keeps numbers as written, as json.Number. Otherwise an
	// integer that fits is an int64 and any other number a float64
	// (±Inf when out of range).
	UseNumber bool
	// PlainStrings declines a string with escapes or invalid UTF-8 with
	// ErrNotPlain, for a caller that leaves those to encoding/json.
	// Otherwise encoding/json decodes such a string, replacing invalid
	// UTF-8 as every JSON reader in agentrt does.
	PlainStrings bool
	// EmptyIsObject reads no input (only white space) and null as an
	// empty object rather than ErrNotObject.
	EmptyIsObject bool
}

// ErrNotObject is input whose top-level value is not a JSON object.
var ErrNotObject = errors.New("input is not a JSON object")

// ErrNotPlain is a string with escapes or invalid UTF-8, with
// Options.PlainStrings.
var ErrNotPlain = errors.New("jsonread: string with escapes or invalid UTF-8")

// SyntaxError is input that is not valid JSON, or nests too deep.
type SyntaxError struct {
	Offset int    // in the input, where the reader stopped
	Msg    string // what it found there
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("offset %d: %s", e.Offset, e.Msg)
}

// Object decodes data, which must be one JSON object with white space
// around it (or, with Options.EmptyIsObject, nothing or null). A
// repeated key keeps its last value. The error is ErrNotObject when the
// first non-space byte does not start an object, ErrNotPlain (see
// Options.PlainStrings), or a *SyntaxError.
func Object(data []byte, o Options) (map[string]any, error) {
	d := decoder{s: string(data), o: o}
	d.space()
	switch {
	case o.EmptyIsObject && d.i == len(d.s):
		return map[string]any{}, nil
	case o.EmptyIsObject && d.s[d.i] == 'n':
		if err := d.literal("null"); err != nil {
			return nil, err
		}
		if d.space(); d.i != len(d.s) {
			return nil, d.errorf("data after the JSON value")
		}
		return map[string]any{}, nil
	case d.i == len(d.s) || d.s[d.i] != '{':
		return nil, ErrNotObject
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

// IsNumber reports whether s is exactly one number in JSON's grammar.
func IsNumber(s string) bool {
	if s == "" || (s[0] != '-' && (s[0] < '0' || s[0] > '9')) {
		return false
	}
	d := decoder{s: s}
	_, _, ok := d.numberToken()
	return ok && d.i == len(s)
}

type decoder struct {
	s     string
	i     int
	depth int
	o     Options
}

func (d *decoder) errorf(format string, args ...any) error {
	return &SyntaxError{Offset: d.i, Msg: fmt.Sprintf(format, args...)}
}

func (d *decoder) space() {
	for d.i < len(d.s) {
		switch d.s[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

func (d *decoder) value() (any, error) {
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

func (d *decoder) literal(lit string) error {
	if len(d.s)-d.i < len(lit) || d.s[d.i:d.i+len(lit)] != lit {
		return d.errorf("invalid literal")
	}
	d.i += len(lit)
	return nil
}

func (d *decoder) enter() error {
	d.depth++
	if d.depth > d.o.MaxDepth {
		return d.errorf("nested more than %d levels deep", d.o.MaxDepth)
	}
	return nil
}

// object decodes an object starting at '{'.
func (d *decoder) object() (map[string]any, error) {
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

// array decodes an array starting at '['.
func (d *decoder) array() ([]any, error) {
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

// str decodes a string starting at '"'. One without escapes and in
// valid UTF-8 is a substring of the input; others are ErrNotPlain with
// Options.PlainStrings, or go through encoding/json.
func (d *decoder) str() (string, error) {
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
			if d.o.PlainStrings {
				return "", ErrNotPlain
			}
			plain = false
			d.i += 2
		case c < 0x20:
			return "", d.errorf("control character in string")
		case c >= utf8.RuneSelf:
			r, size := utf8.DecodeRuneInString(d.s[d.i:])
			if r == utf8.RuneError && size == 1 {
				if d.o.PlainStrings {
					return "", ErrNotPlain
				}
				plain = false
			}
			d.i += size
		default:
			d.i++
		}
	}
	return "", d.errorf("unterminated string")
}

// number decodes a number starting at '-' or a digit.
func (d *decoder) number() (any, error) {
	tok, integer, ok := d.numberToken()
	if !ok {
		return nil, d.errorf("invalid number")
	}
	if d.o.UseNumber {
		return json.Number(tok), nil
	}
	if integer {
		if n, err := strconv.ParseInt(tok, 10, 64); err == nil {
			return n, nil
		}
	}
	f, _ := strconv.ParseFloat(tok, 64) // valid syntax; ±Inf when out of range
	return f, nil
}

// numberToken reads a number in JSON's grammar,
// -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?, and returns it as
// written, and whether it is an integer (no fraction or exponent). On
// false, d.i is where the grammar failed.
func (d *decoder) numberToken() (tok string, integer, ok bool) {
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
		return "", false, false
	}
	integer = true
	if d.i < len(d.s) && d.s[d.i] == '.' {
		integer = false
		d.i++
		if digits() == 0 {
			return "", false, false
		}
	}
	if d.i < len(d.s) && (d.s[d.i] == 'e' || d.s[d.i] == 'E') {
		integer = false
		d.i++
		if d.i < len(d.s) && (d.s[d.i] == '+' || d.s[d.i] == '-') {
			d.i++
		}
		if digits() == 0 {
			return "", false, false
		}
	}
	return d.s[start:d.i], integer, true
}
