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
)

// This file holds the error answers: RFC 9457 problem details, one kind
// per condition a client may branch on, and the words that describe a
// body the JSON decoder refused without naming the Go types behind it.

// ProblemContentType is the media type of every error answer.
const ProblemContentType = "application/problem+json"

// ProblemTypePrefix starts every problem type URI; the kind's code ends
// it: urn:agentrt:problem:not_found. The URI names the kind and is not
// meant to be fetched; docs/api.md#errors describes each.
const ProblemTypePrefix = "urn:agentrt:problem:"

// Problem is the body of every error answer (application/problem+json,
// RFC 9457).
type Problem struct {
	// Type is the kind's URI: ProblemTypePrefix + Code.
	Type string `json:"type"`
	// Title is the kind's summary, the same for every problem of the kind.
	Title string `json:"title"`
	// Status is the HTTP status of the answer.
	Status int `json:"status"`
	// Detail explains this occurrence, for people.
	Detail string `json:"detail"`
	// Code is the kind's stable short name (not_found, busy, …), for
	// programs; an extension member, kept from the error body this API
	// answered before problem details.
	Code string `json:"code"`
}

// ProblemKind is one kind of error answer.
type ProblemKind struct {
	Code   string
	Status int
	Title  string
}

// Type is the kind's problem type URI.
func (k ProblemKind) Type() string { return ProblemTypePrefix + k.Code }

// The kinds of error answers. docs/api.md#errors says when each is
// answered.
var (
	ProblemInvalidJSON          = ProblemKind{"invalid_json", http.StatusBadRequest, "The body is not a JSON object the route accepts"}
	ProblemInvalidRequest       = ProblemKind{"invalid_request", http.StatusBadRequest, "A value of the request is not acceptable"}
	ProblemInvalidParameter     = ProblemKind{"invalid_parameter", http.StatusBadRequest, "A query parameter is malformed"}
	ProblemUnauthorized         = ProblemKind{"unauthorized", http.StatusUnauthorized, "Missing, wrong or revoked bearer token"}
	ProblemForbidden            = ProblemKind{"forbidden", http.StatusForbidden, "The token may not do this"}
	ProblemSelfApproval         = ProblemKind{"self_approval", http.StatusForbidden, "The submitter of a turn may not approve its actions"}
	ProblemNotFound             = ProblemKind{"not_found", http.StatusNotFound, "Not found"}
	ProblemMethodNotAllowed     = ProblemKind{"method_not_allowed", http.StatusMethodNotAllowed, "Method not allowed on this path"}
	ProblemConflict             = ProblemKind{"conflict", http.StatusConflict, "The request conflicts with the current state"}
	ProblemBusy                 = ProblemKind{"busy", http.StatusConflict, "The thread is busy"}
	ProblemNoPolicy             = ProblemKind{CodeNoPolicy, http.StatusConflict, "No policy is configured"}
	ProblemBodyTooLarge         = ProblemKind{"body_too_large", http.StatusRequestEntityTooLarge, "The body is too large"}
	ProblemUnsupportedMediaType = ProblemKind{"unsupported_media_type", http.StatusUnsupportedMediaType, "The body is not application/json"}
	ProblemOverloaded           = ProblemKind{"overloaded", http.StatusTooManyRequests, "Overloaded: submit again later"}
	ProblemInternal             = ProblemKind{"internal", http.StatusInternalServerError, "Internal error"}
	ProblemUnavailable          = ProblemKind{"unavailable", http.StatusServiceUnavailable, "The runtime cannot serve the request now"}
)

// ProblemKinds lists every kind of error answer.
var ProblemKinds = []ProblemKind{
	ProblemInvalidJSON, ProblemInvalidRequest, ProblemInvalidParameter, ProblemUnauthorized,
	ProblemForbidden, ProblemSelfApproval, ProblemNotFound, ProblemMethodNotAllowed,
	ProblemConflict, ProblemBusy, ProblemNoPolicy, ProblemBodyTooLarge,
	ProblemUnsupportedMediaType, ProblemOverloaded, ProblemInternal, ProblemUnavailable,
}

// CodeNoPolicy is the code of a 409 to a request that needs a policy
// when the runtime has none (switching a session's permission mode):
// agentrt.ErrNoPolicy.
const CodeNoPolicy = "no_policy"

// writeError answers a problem of kind k with detail.
func writeError(w http.ResponseWriter, k ProblemKind, detail string) {
	w.Header().Set("Content-Type", ProblemContentType)
	w.WriteHeader(k.Status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(Problem{Type: k.Type(), Title: k.Title, Status: k.Status, Detail: detail, Code: k.Code})
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
