package model

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// This file holds what every HTTP adapter shares: classifying a provider's
// error response by status, error code and headers; classifying transport
// failures; cutting stalled streams; keeping the raw response; and
// keeping credentials out of error text.

// ErrStalled is the cancellation cause of a request whose response stopped
// arriving for longer than its idle timeout.
var ErrStalled = errors.New("the provider stopped sending data")

// HTTPError classifies a provider's HTTP error response. code is the
// provider's error type or code from the response body (empty when it gave
// none) and message its human message. The classification rests on the
// status and the code; the message is consulted only for the one case the
// providers report without a distinct code (a prompt too long for the
// context window, which Anthropic reports as a plain invalid request).
func HTTPError(status int, h http.Header, code, message string) *Error {
	e := &Error{StatusCode: status, Code: code, Message: message, RateLimit: RateLimitHeaders(h)}
	if e.Message == "" {
		e.Message = http.StatusText(status)
	}
	switch code {
	case "context_length_exceeded", "string_above_max_length", "request_too_large":
		e.Kind = ErrContextLength
		return e
	case "content_filter", "content_policy_violation", "invalid_prompt":
		e.Kind = ErrContentFilter
		return e
	case "insufficient_quota", "billing_error":
		// The account cannot pay: waiting does not help.
		e.Kind = ErrAuth
		return e
	case "overloaded_error":
		e.Kind = ErrOverloaded
		return e
	case "rate_limit_error", "rate_limit_exceeded":
		e.Kind = ErrRateLimit
	}
	switch {
	case e.Kind != "":
	case status == http.StatusTooManyRequests:
		e.Kind = ErrRateLimit
	case status == 529 || status == http.StatusServiceUnavailable:
		e.Kind = ErrOverloaded
	case status == http.StatusRequestTimeout || status == http.StatusGatewayTimeout:
		e.Kind = ErrTimeout
	case status >= 500:
		e.Kind = ErrServer
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		e.Kind = ErrAuth
	case status == http.StatusRequestEntityTooLarge:
		e.Kind = ErrContextLength
	case tooLong(message):
		e.Kind = ErrContextLength
	default:
		e.Kind = ErrInvalidRequest
	}
	if e.Kind == ErrRateLimit || e.Kind == ErrOverloaded || e.Kind == ErrServer {
		e.RetryAfter = RetryAfter(h)
	}
	return e
}

// StreamError classifies an error a provider reported inside a streamed
// response (an error event, a failed response), which arrived with status
// 200: code is the provider's error type or code, mapped to the status the
// provider's documentation gives for it. An unknown or missing code is a
// server failure, since the request had been accepted. StatusCode stays 0.
func StreamError(code, message string) *Error {
	status, ok := codeStatus[code]
	if !ok {
		status = http.StatusInternalServerError
	}
	if message == "" {
		message = "the provider reported an error in the stream"
	}
	e := HTTPError(status, nil, code, message)
	e.StatusCode = 0
	return e
}

// codeStatus maps the error types and codes OpenAI and Anthropic send in
// streams to the HTTP statuses they document for them.
var codeStatus = map[string]int{
	"invalid_request_error":     http.StatusBadRequest,
	"authentication_error":      http.StatusUnauthorized,
	"permission_error":          http.StatusForbidden,
	"not_found_error":           http.StatusNotFound,
	"request_too_large":         http.StatusRequestEntityTooLarge,
	"rate_limit_error":          http.StatusTooManyRequests,
	"rate_limit_exceeded":       http.StatusTooManyRequests,
	"too_many_requests":         http.StatusTooManyRequests,
	"server_error":              http.StatusInternalServerError,
	"api_error":                 http.StatusInternalServerError,
	"service_unavailable_error": http.StatusServiceUnavailable,
	"timeout_error":             http.StatusGatewayTimeout,
	"overloaded_error":          529,
	"billing_error":             http.StatusPaymentRequired,
	"insufficient_quota":        http.StatusTooManyRequests,
	"context_length_exceeded":   http.StatusBadRequest,
	"content_filter":            http.StatusBadRequest,
	"invalid_prompt":            http.StatusBadRequest,
}

// tooLong recognizes the context-window messages of providers that give
// no error code for it.
func tooLong(message string) bool {
	m := strings.ToLower(message)
	return strings.Contains(m, "prompt is too long") ||
		strings.Contains(m, "maximum context length") ||
		strings.Contains(m, "context window")
}

// RetryAfter reads the wait a provider asked for: retry-after-ms, then
// retry-after in seconds or as an HTTP date. It returns zero when there is
// none or it cannot be read.
func RetryAfter(h http.Header) time.Duration {
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := h.Get("Retry-After")
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s <= 0 {
			return 0
		}
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := time.Until(t); d > 0 {
			return d
		}
	}
	return 0
}

// RateLimitHeaders returns the rate-limit headers of a response
// (x-ratelimit-*, anthropic-ratelimit-*, retry-after*), lowercased, or nil.
func RateLimitHeaders(h http.Header) map[string]string {
	var out map[string]string
	for k, vs := range h {
		lk := strings.ToLower(k)
		if len(vs) == 0 || !(strings.HasPrefix(lk, "x-ratelimit-") || strings.HasPrefix(lk, "anthropic-ratelimit-") || strings.HasPrefix(lk, "retry-after")) {
			continue
		}
		if out == nil {
			out = make(map[string]string)
		}
		out[lk] = vs[0]
	}
	return out
}

// TransportError classifies an error that happened before or while a
// response arrived (no HTTP status to go by). ctx is the request's
// context: a stall (ErrStalled) or passed deadline is a timeout. A
// cancelled ctx returns its cause unchanged, so callers see cancellation
// as cancellation.
func TransportError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		cause := context.Cause(ctx)
		switch {
		case errors.Is(cause, ErrStalled):
			return &Error{Kind: ErrTimeout, Message: cause.Error(), Err: cause}
		case errors.Is(cause, context.DeadlineExceeded):
			return &Error{Kind: ErrTimeout, Message: "the request's deadline passed", Err: cause}
		}
		return cause
	}
	var me *Error
	if errors.As(err, &me) {
		return me
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return &Error{Kind: ErrTimeout, Message: err.Error(), Err: err}
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return &Error{Kind: ErrNetwork, Message: "the response ended early: " + err.Error(), Err: err}
	}
	return &Error{Kind: ErrNetwork, Message: err.Error(), Err: err}
}

// MalformedResponse is the error for a response body that does not parse
// as the provider's protocol (a broken SSE event, invalid JSON). It is a
// server error: retrying may get a good response.
func MalformedResponse(format string, args ...any) *Error {
	return &Error{Kind: ErrServer, Message: "malformed response: " + fmt.Sprintf(format, args...)}
}

// Watchdog cancels a request that stops receiving data. Kick it whenever
// data arrives; if idle passes without a kick, it cancels its context with
// ErrStalled. Stop releases it.
type Watchdog struct {
	idle   time.Duration
	cancel context.CancelCauseFunc
	timer  *time.Timer
}

// NewWatchdog returns ctx wrapped so that it is cancelled with ErrStalled
// after idle without a Kick. idle ≤ 0 disables the watchdog (the context
// is still cancellable by Stop).
func NewWatchdog(ctx context.Context, idle time.Duration) (context.Context, *Watchdog) {
	ctx, cancel := context.WithCancelCause(ctx)
	w := &Watchdog{idle: idle, cancel: cancel}
	if idle > 0 {
		w.timer = time.AfterFunc(idle, func() { cancel(ErrStalled) })
	}
	return ctx, w
}

// Kick restarts the idle period.
func (w *Watchdog) Kick() {
	if w.timer != nil {
		w.timer.Reset(w.idle)
	}
}

// Stop disarms the watchdog and releases its context.
func (w *Watchdog) Stop() {
	if w.timer != nil {
		w.timer.Stop()
	}
	w.cancel(context.Canceled)
}

// Capture keeps up to MaxRawBytes of a response body as it is read.
type Capture struct {
	mu   sync.Mutex
	buf  []byte
	body io.ReadCloser
	kick func()
}

// CaptureBody wraps body so that what is read from it is kept (up to
// MaxRawBytes) and, when kick is not nil, every read that returns data
// calls kick (for a Watchdog).
func CaptureBody(body io.ReadCloser, kick func()) *Capture {
	return &Capture{body: body, kick: kick}
}

func (c *Capture) Read(p []byte) (int, error) {
	n, err := c.body.Read(p)
	if n > 0 {
		if c.kick != nil {
			c.kick()
		}
		c.mu.Lock()
		if room := MaxRawBytes - len(c.buf); room > 0 {
			c.buf = append(c.buf, p[:min(n, room)]...)
		}
		c.mu.Unlock()
	}
	return n, err
}

// Close closes the body.
func (c *Capture) Close() error { return c.body.Close() }

// Bytes returns a copy of what was read so far.
func (c *Capture) Bytes() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]byte(nil), c.buf...)
}

// Redact replaces every occurrence of each secret in s with "[REDACTED]".
// Empty secrets and secrets shorter than 8 bytes (too short to be a
// credential, too likely to be ordinary text) are ignored.
func Redact(s string, secrets ...string) string {
	for _, sec := range secrets {
		if len(sec) >= 8 {
			s = strings.ReplaceAll(s, sec, "[REDACTED]")
		}
	}
	return s
}

// RedactBytes is Redact for a byte slice. It returns b itself when no
// secret occurs in it.
func RedactBytes(b []byte, secrets ...string) []byte {
	for _, sec := range secrets {
		if len(sec) >= 8 && strings.Contains(string(b), sec) {
			return []byte(Redact(string(b), secrets...))
		}
	}
	return b
}
