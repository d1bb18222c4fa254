// Package model defines how agentrt talks to language models: the Provider
// interface adapters implement, the request and response shapes, streamed
// deltas, classified provider errors and what HTTP adapters share
// (Endpoint, error classification, stall detection, raw capture,
// redaction), and routing: candidates with prices and capabilities, task
// profiles and Decide. Adapters live in subpackages (openaichat,
// openaicompat, openairesponses, anthropic, replay); the coordinator in
// package loop routes each turn and normalizes a Response into a turn
// output.
package model

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/agentrt/agentrt/runtype"
)

// Provider sends one model request. Implementations are safe for
// concurrent use by many runs.
type Provider interface {
	// Generate returns the model's complete response to req. It returns a
	// *Error for classified provider failures; ctx cancellation must stop
	// the request promptly.
	Generate(ctx context.Context, req *Request) (*Response, error)
	// Info names the provider kind and model, for events.
	Info() Info
}

// Prober is a Provider that can check its endpoint without generating
// anything: agentrt doctor --probe. Probe asks the endpoint for its
// models, which costs no tokens but needs the network, the base URL and
// the key to be right; it fails as Generate does (a *Error, the key kept
// out of its message). The HTTP adapters implement it; replay needs no
// probe.
type Prober interface {
	Probe(ctx context.Context) (*ProbeResult, error)
}

// ProbeResult is what a probe learned of an endpoint that answered.
type ProbeResult struct {
	// Models is how many models the endpoint listed.
	Models int
	// Listed reports whether the configured model is among them. An
	// endpoint may serve a model it does not list (an alias), so false
	// is worth a look, not a failure.
	Listed bool
}

// ProbeOf is the result of a probe that listed ids for a provider
// configured with model.
func ProbeOf(model string, ids []string) *ProbeResult {
	return &ProbeResult{Models: len(ids), Listed: slices.Contains(ids, model)}
}

// Info names a provider kind (openai_chat, openai_responses,
// anthropic_messages, openai_compatible, replay) and a model.
type Info struct {
	Kind  string
	Model string
}

// Request is one model call: instructions, the conversation so far and the
// tools the model may call. Providers must not modify it.
type Request struct {
	SessionID string
	TurnID    string
	// Instructions is the agent's system prompt.
	Instructions string
	// Messages is the thread's conversation in order. Messages with
	// RoleSystem after the first are runtime reminders.
	Messages []runtype.Message
	Tools    []ToolDefinition
	// MaxOutputTokens caps the response's tokens; zero leaves the
	// provider's (or the adapter's configured) default.
	MaxOutputTokens int
	// Stream, when set, receives text and reasoning in order as the
	// provider produces them, from the goroutine that called Generate, and
	// before Generate returns. The Response is complete either way;
	// providers that cannot stream never call it.
	Stream func(Delta)
}

// DeltaKind says what a streamed Delta carries.
type DeltaKind string

// Delta kinds.
const (
	DeltaText      DeltaKind = "text"
	DeltaReasoning DeltaKind = "reasoning"
)

// Delta is one streamed piece of a response.
type Delta struct {
	Kind DeltaKind
	Text string
}

// ToolDefinition is a tool as a model sees it.
type ToolDefinition struct {
	Name        string
	Description string
	InputSchema json.RawMessage
}

// FinishReason is the normalized reason a response ended.
type FinishReason string

// Finish reasons.
const (
	FinishStop          FinishReason = "stop"
	FinishToolCalls     FinishReason = "tool_calls"
	FinishLength        FinishReason = "length"
	FinishContentFilter FinishReason = "content_filter"
	FinishError         FinishReason = "error"
)

// Response is a model's answer, before the coordinator normalizes it.
type Response struct {
	Text string
	// ToolCalls are requested calls. Arguments is the text the model
	// produced, which may be malformed; an empty ID is filled in by the
	// coordinator.
	ToolCalls    []runtype.MessageToolCall
	FinishReason FinishReason
	// Usage is what the call consumed; Usage.CostUSD is left zero (the
	// coordinator prices usage with the candidate's declared prices).
	Usage runtype.Usage
	// Reasoning is the model's reasoning as the provider exposed it, with
	// any state the provider needs back in later requests.
	Reasoning []runtype.Reasoning
	// Model is the model that answered as the provider named it (often a
	// dated version of the requested name); empty when it did not say.
	Model string
	// Raw is the provider's raw response body (for a stream, the stream as
	// received, up to MaxRawBytes), kept as a blob for debugging and
	// replay. It may be nil.
	Raw []byte
	// RawMediaType is Raw's media type; empty means application/json.
	RawMediaType string
}

// MaxRawBytes bounds the raw response an adapter keeps.
const MaxRawBytes = 4 << 20

// ErrorKind classifies provider failures.
type ErrorKind string

// Error kinds. Which are retryable is decided by Error.Retryable.
const (
	ErrRateLimit       ErrorKind = "rate_limit"
	ErrOverloaded      ErrorKind = "overloaded"
	ErrServer          ErrorKind = "server"
	ErrTimeout         ErrorKind = "timeout"
	ErrNetwork         ErrorKind = "network"
	ErrAuth            ErrorKind = "auth"
	ErrInvalidRequest  ErrorKind = "invalid_request"
	ErrContextLength   ErrorKind = "context_length_exceeded"
	ErrContentFilter   ErrorKind = "content_filter"
	ErrScriptExhausted ErrorKind = "script_exhausted"
)

// Error is a classified provider failure.
type Error struct {
	Kind    ErrorKind
	Message string
	// RetryAfter is the provider's requested wait (Retry-After headers),
	// zero when it gave none.
	RetryAfter time.Duration
	// StatusCode is the HTTP status, when there was one.
	StatusCode int
	// Code is the provider's own error type or code, when it gave one
	// (rate_limit_exceeded, overloaded_error, context_length_exceeded, …).
	Code string
	// RateLimit holds the provider's rate-limit headers of the failed
	// response (lowercase names, such as x-ratelimit-remaining-tokens), or
	// nil.
	RateLimit map[string]string
	Err       error
}

func (e *Error) Error() string {
	if e.Message == "" && e.Err != nil {
		return fmt.Sprintf("model %s: %v", e.Kind, e.Err)
	}
	return fmt.Sprintf("model %s: %s", e.Kind, e.Message)
}

func (e *Error) Unwrap() error { return e.Err }

// Retryable reports whether repeating the same request may succeed.
func (e *Error) Retryable() bool {
	switch e.Kind {
	case ErrRateLimit, ErrOverloaded, ErrServer, ErrTimeout, ErrNetwork:
		return true
	}
	return false
}

// AsError returns err as a *Error, classifying unknown errors: context
// deadlines and stalls become timeouts, anything else a network error.
func AsError(err error) *Error {
	var me *Error
	if errors.As(err, &me) {
		return me
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrStalled) {
		return &Error{Kind: ErrTimeout, Message: err.Error(), Err: err}
	}
	return &Error{Kind: ErrNetwork, Message: err.Error(), Err: err}
}
