package tool

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
)

// CanonicalJSON re-encodes the JSON value raw with object keys sorted, no
// insignificant whitespace, numbers exactly as written and no HTML
// escaping, so that equal arguments hash equally however a model spaced or
// ordered them. Duplicate object keys keep the last value, as
// encoding/json does.
func CanonicalJSON(raw json.RawMessage) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("decoding JSON: %w", err)
	}
	if rest := raw[dec.InputOffset():]; len(bytes.TrimLeft(rest, " \t\r\n")) > 0 {
		return nil, errors.New("decoding JSON: unexpected data after the top-level value")
	}
	return canonical(v, len(raw))
}

// canonical encodes a decoded JSON value (numbers as json.Number) with
// sorted keys and no insignificant whitespace.
func canonical(v any, sizeHint int) ([]byte, error) {
	var buf bytes.Buffer
	buf.Grow(sizeHint)
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	// encoding/json writes map keys sorted and json.Number verbatim.
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("encoding canonical JSON: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// ArgumentsSHA256 returns the lowercase hex SHA-256 of the canonical form
// of raw, or of raw itself when it is not valid JSON. Audit records carry
// it so that a decision can be tied to the exact arguments.
func ArgumentsSHA256(raw json.RawMessage) string {
	b, err := CanonicalJSON(raw)
	if err != nil {
		b = raw
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
