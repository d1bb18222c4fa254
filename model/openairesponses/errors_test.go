package openairesponses_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/model/openairesponses"
)

// TestGenerateHTTPErrors checks the classification of error responses.
func TestGenerateHTTPErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		handler       http.HandlerFunc
		wantKind      model.ErrorKind
		wantCode      string
		wantRetry     time.Duration
		wantRateLimit map[string]string
	}{
		{
			name: "429 retry-after-ms",
			handler: jsonError(http.StatusTooManyRequests, map[string]string{
				"Retry-After-Ms":                 "1500",
				"X-Ratelimit-Limit-Requests":     "500",
				"X-Ratelimit-Remaining-Requests": "0",
				"X-Ratelimit-Reset-Requests":     "1.5s",
			}, `{"error":{"message":"Rate limit reached for gpt-4.1 in organization org-abc on requests per min (RPM): Limit 500, Used 500, Requested 1.","type":"requests","param":null,"code":"rate_limit_exceeded"}}`),
			wantKind:  model.ErrRateLimit,
			wantCode:  "rate_limit_exceeded",
			wantRetry: 1500 * time.Millisecond,
			wantRateLimit: map[string]string{
				"retry-after-ms":                 "1500",
				"x-ratelimit-limit-requests":     "500",
				"x-ratelimit-remaining-requests": "0",
				"x-ratelimit-reset-requests":     "1.5s",
			},
		},
		{
			name: "429 retry-after",
			handler: jsonError(http.StatusTooManyRequests, map[string]string{
				"Retry-After":                  "2",
				"X-Ratelimit-Remaining-Tokens": "0",
			}, `{"error":{"message":"Rate limit reached for gpt-4.1 on tokens per min (TPM).","type":"tokens","param":null,"code":"rate_limit_exceeded"}}`),
			wantKind:      model.ErrRateLimit,
			wantCode:      "rate_limit_exceeded",
			wantRetry:     2 * time.Second,
			wantRateLimit: map[string]string{"retry-after": "2", "x-ratelimit-remaining-tokens": "0"},
		},
		{
			name:     "400 context length",
			handler:  jsonError(http.StatusBadRequest, nil, `{"error":{"message":"Your input exceeds the context window of this model. Please adjust your input and try again.","type":"invalid_request_error","param":"input","code":"context_length_exceeded"}}`),
			wantKind: model.ErrContextLength,
			wantCode: "context_length_exceeded",
		},
		{
			name:     "400 bad request",
			handler:  jsonError(http.StatusBadRequest, nil, `{"error":{"message":"Unsupported parameter: 'temperature' is not supported with this model.","type":"invalid_request_error","param":"temperature","code":"unsupported_parameter"}}`),
			wantKind: model.ErrInvalidRequest,
			wantCode: "unsupported_parameter",
		},
		{
			name: "502 html",
			handler: func(w http.ResponseWriter, r *http.Request) {
				http.Error(w, "<html>Bad Gateway</html>", http.StatusBadGateway)
			},
			wantKind: model.ErrServer,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, tt.handler, nil)
			_, err := b.p.Generate(t.Context(), &model.Request{})
			me := asModelError(t, err)
			if me.Kind != tt.wantKind || me.Code != tt.wantCode || me.RetryAfter != tt.wantRetry {
				t.Errorf("error = %q: kind %s, code %q, retry after %v; want %s, %q, %v",
					me, me.Kind, me.Code, me.RetryAfter, tt.wantKind, tt.wantCode, tt.wantRetry)
			}
			if diff := cmp.Diff(tt.wantRateLimit, me.RateLimit); diff != "" {
				t.Errorf("RateLimit mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestGenerateAuthRedactsKey checks that a 401 echoing the key is an auth
// error whose text does not show the key.
func TestGenerateAuthRedactsKey(t *testing.T) {
	t.Parallel()
	b := setup(t, jsonError(http.StatusUnauthorized, nil,
		`{"error":{"message":"Incorrect API key provided: `+testKey+`. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`), nil)
	_, err := b.p.Generate(t.Context(), &model.Request{})
	me := asModelError(t, err)
	if me.Kind != model.ErrAuth || me.StatusCode != http.StatusUnauthorized {
		t.Errorf("error = %q: kind %s, status %d; want auth, 401", me, me.Kind, me.StatusCode)
	}
	if strings.Contains(err.Error(), testKey) || strings.Contains(fmt.Sprintf("%+v", me), testKey) {
		t.Errorf("error shows the key: %q", err)
	}
	if !strings.Contains(me.Message, "Incorrect API key provided: [REDACTED]") {
		t.Errorf("message = %q, want the provider's message with the key redacted", me.Message)
	}
}

// TestGenerateServerErrorThenSuccess checks that a 500 is a retryable
// server error, that the SDK does not retry it itself, and that the next
// call succeeds.
func TestGenerateServerErrorThenSuccess(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	ok := sse(fixture(t, "text.sse"))
	b := setup(t, func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			jsonError(http.StatusInternalServerError, nil, `{"error":{"message":"The server had an error while processing your request. Sorry about that!","type":"server_error","param":null,"code":null}}`)(w, r)
			return
		}
		ok(w, r)
	}, nil)
	_, err := b.p.Generate(t.Context(), &model.Request{})
	if me := asModelError(t, err); me.Kind != model.ErrServer || !me.Retryable() {
		t.Errorf("first call: error = %q, kind %s; want a retryable server error", me, me.Kind)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("the server got %d requests for the first call, want 1 (no SDK retries)", n)
	}
	got, err := b.p.Generate(t.Context(), &model.Request{})
	if err != nil {
		t.Fatalf("second call: %v", err)
	}
	if got.Text != "Hello! How can I help you today?" {
		t.Errorf("second call: Text = %q", got.Text)
	}
}

// stallingHandler sends the first events of a stream, calls sent, and
// then sends nothing until the request or the test ends.
func stallingHandler(t *testing.T, sent func()) http.HandlerFunc {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	head := fixture(t, "truncated.sse")
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write(head)
		w.(http.Flusher).Flush()
		if sent != nil {
			sent()
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}
}

// TestGenerateStall checks that a stream that stops mid-way is cut after
// the idle timeout as a timeout.
func TestGenerateStall(t *testing.T) {
	t.Parallel()
	const idle = 100 * time.Millisecond
	b := setup(t, stallingHandler(t, nil), func(c *openairesponses.Config) { c.IdleTimeout = idle })
	start := time.Now()
	_, err := b.p.Generate(t.Context(), &model.Request{})
	elapsed := time.Since(start)
	me := asModelError(t, err)
	if me.Kind != model.ErrTimeout || !errors.Is(err, model.ErrStalled) {
		t.Errorf("error = %q, kind %s; want a timeout caused by model.ErrStalled", me, me.Kind)
	}
	if elapsed < idle || elapsed > 20*idle {
		t.Errorf("Generate returned after %v, want about the idle timeout %v", elapsed, idle)
	}
}

// TestGenerateTimeout checks that the whole-request timeout applies while
// data keeps the idle timeout from firing.
func TestGenerateTimeout(t *testing.T) {
	t.Parallel()
	b := setup(t, stallingHandler(t, nil), func(c *openairesponses.Config) {
		c.Timeout = 100 * time.Millisecond
		c.IdleTimeout = time.Minute
	})
	_, err := b.p.Generate(t.Context(), &model.Request{})
	if me := asModelError(t, err); me.Kind != model.ErrTimeout || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error = %q, kind %s; want a timeout from the deadline", me, me.Kind)
	}
}

// TestGenerateCallerCancel checks that cancelling the caller's ctx
// mid-stream returns promptly with the ctx's error, not a timeout.
func TestGenerateCallerCancel(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	// The idle timeout is far longer than the test may take, so only the
	// cancellation can end the call.
	b := setup(t, stallingHandler(t, nil), func(c *openairesponses.Config) { c.IdleTimeout = time.Hour })
	_, err := b.p.Generate(ctx, &model.Request{Stream: func(d model.Delta) { cancel() }})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error = %v, want context.Canceled", err)
	}
	var me *model.Error
	if errors.As(err, &me) {
		t.Errorf("error = %q is a *model.Error of kind %s, want the caller's ctx error", me, me.Kind)
	}
}

// TestGenerateCallerDeadline checks that the caller's own deadline is
// reported as the caller's ctx error, not as this request's timeout.
func TestGenerateCallerDeadline(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	b := setup(t, stallingHandler(t, nil), func(c *openairesponses.Config) { c.IdleTimeout = time.Hour })
	_, err := b.p.Generate(ctx, &model.Request{})
	var me *model.Error
	if !errors.Is(err, context.DeadlineExceeded) || errors.As(err, &me) {
		t.Errorf("error = %v (%T), want the caller's context.DeadlineExceeded", err, err)
	}
}
