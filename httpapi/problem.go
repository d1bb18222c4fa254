package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"reflect"
	"strings"

	"github.com/agentrt/agentrt/apitype"
)

// This file writes the error answers (apitype.Problem, RFC 9457 problem
// details) and finds the words that describe a body the JSON decoder
// refused without naming the Go types behind it.

// writeError answers a problem of kind k with detail.
func writeError(w http.ResponseWriter, k apitype.ProblemKind, detail string) {
	w.Header().Set("Content-Type", apitype.ProblemContentType)
	w.WriteHeader(k.Status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(apitype.Problem{Type: k.Type(), Title: k.Title, Status: k.Status, Detail: detail, Code: k.Code})
}

// decodeProblem describes why the JSON decoder refused a body, in the
// body's terms: JSON values and field names, never the Go types the
// body decodes into.
func decodeProblem(err error) string {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return fmt.Sprintf("the body is not valid JSON: %s (at byte %d)", syntax, syntax.Offset)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "the body is not valid JSON: it ends inside the value"
	case errors.As(err, &typ):
		value, _, _ := strings.Cut(typ.Value, " ") // "number 1.5": the kind
		if typ.Field == "" {
			return fmt.Sprintf("the body is a JSON %s; want %s", value, jsonKind(typ.Type))
		}
		return fmt.Sprintf("field %s is a JSON %s; want %s", typ.Field, value, jsonKind(typ.Type))
	case errors.Is(err, os.ErrDeadlineExceeded):
		return "the body did not arrive in time"
	}
	// encoding/json reports an unknown field (DisallowUnknownFields) with
	// an error of no exported type: its text is the only way to tell.
	if field, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return "unknown field " + field
	}
	return "the body could not be read"
}

// jsonKind names the JSON values a Go type decodes from.
func jsonKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return "a string" // base64 or raw JSON
		}
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return "another JSON value"
}
