package yamlpos

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// JSONOptions tune Value.JSON. A zero limit is no limit; with aliases, a
// small file can expand into a huge document.
type JSONOptions struct {
	MaxNodes int // values written, each alias expansion counted
	MaxDepth int // nesting, which also cuts a value that contains itself
	MaxBytes int // size of the encoding
	// PlainNumbers writes a string that YAML 1.2 reads as a number (see
	// Value.PlainNumber) as a JSON number.
	PlainNumbers bool
}

// JSONReason says why a value has no JSON encoding.
type JSONReason uint8

const (
	NotFinite JSONReason = iota + 1 // an infinity or a NaN
	TooManyNodes
	TooDeep
	TooLarge
	Unresolved // a value that cannot be resolved; its problem is reported
)

// JSONError says why a value has no JSON encoding. Value is the value at
// fault, the infinity or NaN or the one past a limit; nil for Unresolved.
type JSONError struct {
	Reason JSONReason
	Value  *Value
}

// Error names the reason by number; readers word it.
func (e *JSONError) Error() string {
	return fmt.Sprintf("yamlpos: value has no JSON encoding (reason %d)", e.Reason)
}

// JSON encodes v as compact JSON, keeping mapping keys in the order written
// and without HTML escaping, as a model would write it. A scalar tagged
// !!str is a string. The error is a *JSONError.
func (v *Value) JSON(opts JSONOptions) ([]byte, error) {
	e := &jsonEncoder{opts: opts}
	if err := e.encode(v, 0); err != nil {
		return nil, err
	}
	return e.buf, nil
}

type jsonEncoder struct {
	opts  JSONOptions
	buf   []byte
	nodes int
}

func (e *jsonEncoder) encode(v *Value, depth int) error {
	e.nodes++
	switch {
	case e.opts.MaxNodes > 0 && e.nodes > e.opts.MaxNodes:
		return &JSONError{TooManyNodes, v}
	case e.opts.MaxDepth > 0 && depth > e.opts.MaxDepth:
		return &JSONError{TooDeep, v}
	case v == nil:
		return &JSONError{Unresolved, nil}
	}
	switch {
	case v.Tag == "!!str" && v.Scalar():
		e.buf = appendString(e.buf, v.Text)
	case v.Kind == Map:
		e.buf = append(e.buf, '{')
		for i, f := range v.Fields() {
			if i > 0 {
				e.buf = append(e.buf, ',')
			}
			e.buf = append(appendString(e.buf, f.Key), ':')
			if err := e.encode(f.Value(), depth+1); err != nil {
				return err
			}
		}
		e.buf = append(e.buf, '}')
	case v.Kind == Seq:
		e.buf = append(e.buf, '[')
		for i, item := range v.Items() {
			if i > 0 {
				e.buf = append(e.buf, ',')
			}
			if err := e.encode(item, depth+1); err != nil {
				return err
			}
		}
		e.buf = append(e.buf, ']')
	case v.Kind == Null:
		e.buf = append(e.buf, "null"...)
	case v.Kind == Bool:
		e.buf = strconv.AppendBool(e.buf, v.Bool)
	case v.Kind == Float && v.Num == "":
		return &JSONError{NotFinite, v}
	case v.Kind == Int || v.Kind == Float:
		e.buf = append(e.buf, v.Num...)
	case e.opts.PlainNumbers && v.PlainNumber():
		e.buf = appendNumber(e.buf, v.Text)
	default:
		e.buf = appendString(e.buf, v.Text)
	}
	if e.opts.MaxBytes > 0 && len(e.buf) > e.opts.MaxBytes {
		return &JSONError{TooLarge, v}
	}
	return nil
}

// appendNumber appends a YAML 1.2 number the parser kept as a string.
func appendNumber(b []byte, s string) []byte {
	s = strings.TrimPrefix(s, "+")
	if json.Valid([]byte(s)) {
		return append(b, s...)
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return append(b, floatValue(s, f).Num...)
	}
	return appendString(b, s)
}

// appendString appends s as a JSON string without HTML escaping.
func appendString(b []byte, s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return append(b, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...)
}
