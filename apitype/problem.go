package apitype

import "net/http"

// This file holds the body of every error answer of the HTTP API: RFC
// 9457 problem details, one kind per condition a client may branch on.

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
// answered; package client matches each to the sentinels above.
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
