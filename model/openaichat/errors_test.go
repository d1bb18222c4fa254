package openaichat_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/model/openaichat"
)

func asModelError(err error, target **model.Error) bool { return errors.As(err, target) }

// errorResponse answers with status, headers and body.
func errorResponse(status int, header map[string]string, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		for k, v := range header {
			w.Header().Set(k, v)
		}
		if strings.HasPrefix(body, "{") {
			w.Header().Set("Content-Type", "application/json")
		}
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}
}

func TestHTTPErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		status int
		header map[string]string
		body   string
		want   *model.Error
	}{
		{
			name:   "rate limit with retry-after-ms",
			status: 429,
			header: map[string]string{
				"Retry-After-Ms":                 "1500",
				"Retry-After":                    "2",
				"X-Ratelimit-Limit-Requests":     "500",
				"X-Ratelimit-Remaining-Requests": "0",
				"X-Ratelimit-Reset-Requests":     "1.5s",
				"X-Ratelimit-Remaining-Tokens":   "29000",
			},
			body: `{"error":{"message":"Rate limit reached for gpt-4o in organization org-x on requests per min (RPM): Limit 500, Used 500, Requested 1.","type":"requests","param":null,"code":"rate_limit_exceeded"}}`,
			want: &model.Error{
				Kind: model.ErrRateLimit, StatusCode: 429, Code: "rate_limit_exceeded", RetryAfter: 1500 * time.Millisecond,
				Message: "Rate limit reached for gpt-4o in organization org-x on requests per min (RPM): Limit 500, Used 500, Requested 1.",
				RateLimit: map[string]string{
					"retry-after-ms": "1500", "retry-after": "2", "x-ratelimit-limit-requests": "500",
					"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "1.5s", "x-ratelimit-remaining-tokens": "29000",
				},
			},
		},
		{
			name:   "rate limit with retry-after seconds",
			status: 429,
			header: map[string]string{"Retry-After": "3"},
			body:   `{"error":{"message":"You exceeded your current quota.","type":"tokens","param":null,"code":"rate_limit_exceeded"}}`,
			want: &model.Error{Kind: model.ErrRateLimit, StatusCode: 429, Code: "rate_limit_exceeded", RetryAfter: 3 * time.Second,
				Message: "You exceeded your current quota.", RateLimit: map[string]string{"retry-after": "3"}},
		},
		{
			name:   "context length",
			status: 400,
			body:   `{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130532 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`,
			want: &model.Error{Kind: model.ErrContextLength, StatusCode: 400, Code: "context_length_exceeded",
				Message: "This model's maximum context length is 128000 tokens. However, your messages resulted in 130532 tokens. Please reduce the length of the messages."},
		},
		{
			name:   "server error",
			status: 500,
			body:   `{"error":{"message":"The server had an error while processing your request.","type":"server_error","param":null,"code":null}}`,
			want:   &model.Error{Kind: model.ErrServer, StatusCode: 500, Code: "server_error", Message: "The server had an error while processing your request."},
		},
		{
			name:   "plain text body",
			status: 502,
			body:   "Bad Gateway",
			want:   &model.Error{Kind: model.ErrServer, StatusCode: 502, Message: "Bad Gateway"},
		},
		{
			name:   "error as a string",
			status: 404,
			body:   `{"error":"model \"llama9\" not found, try pulling it first"}`,
			want:   &model.Error{Kind: model.ErrInvalidRequest, StatusCode: 404, Message: `model "llama9" not found, try pulling it first`},
		},
		{
			name:   "top-level error fields",
			status: 400,
			body:   `{"object":"error","message":"This model's maximum context length is 4096 tokens. However, you requested 5000 tokens.","type":"BadRequestError","param":null,"code":400}`,
			want: &model.Error{Kind: model.ErrContextLength, StatusCode: 400, Code: "BadRequestError",
				Message: "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens."},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, errorResponse(tt.status, tt.header, tt.body))
			_, _, err := generate(t, b.provider(t, openaichat.Config{}), nil)
			var got *model.Error
			if !asModelError(err, &got) {
				t.Fatalf("Generate error = %T %v, want a *model.Error", err, err)
			}
			if diff := cmp.Diff(tt.want, got, cmpopts.IgnoreFields(model.Error{}, "Err")); diff != "" {
				t.Errorf("error mismatch (-want +got):\n%s", diff)
			}
			if n := len(b.requests); n != 1 {
				t.Errorf("the server received %d requests, want 1 (no SDK retries)", n)
			}
		})
	}
}

func TestServerErrorThenSuccess(t *testing.T) {
	t.Parallel()
	answers := make(chan http.HandlerFunc, 2)
	answers <- errorResponse(500, nil, `{"error":{"message":"The server had an error while processing your request.","type":"server_error","param":null,"code":null}}`)
	answers <- sseFile(t, "usage.sse")
	b := setup(t, func(w http.ResponseWriter, r *http.Request) { (<-answers)(w, r) })
	p := b.provider(t, openaichat.Config{})

	_, _, err := generate(t, p, nil)
	var me *model.Error
	if !asModelError(err, &me) || me.Kind != model.ErrServer || !me.Retryable() {
		t.Fatalf("first Generate error = %v, want a retryable server error", err)
	}
	if n := len(b.requests); n != 1 {
		t.Fatalf("after the 500 the server received %d requests, want 1 (no SDK retries)", n)
	}
	resp, _, err := generate(t, p, nil)
	if err != nil {
		t.Fatalf("second Generate: %v", err)
	}
	if resp.Text != "Four." {
		t.Errorf("second response text = %q, want Four.", resp.Text)
	}
}

// blocking returns a handler that sends head (nothing when nil) and then
// holds the response open until the test ends or the client goes away.
func blocking(t *testing.T, head []byte) http.HandlerFunc {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	return func(w http.ResponseWriter, r *http.Request) {
		if head != nil {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = w.Write(head)
			w.(http.Flusher).Flush()
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}
}

const firstChunk = `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"role":"assistant","content":"Hel"},"finish_reason":null}]}` + "\n\n"

func TestStall(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		head []byte
	}{
		{name: "before the response", head: nil},
		{name: "mid-stream", head: []byte(firstChunk)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, blocking(t, tt.head))
			p := b.provider(t, openaichat.Config{Endpoint: model.Endpoint{IdleTimeout: 100 * time.Millisecond}})
			start := time.Now()
			_, _, err := generate(t, p, nil)
			elapsed := time.Since(start)
			var me *model.Error
			if !asModelError(err, &me) || me.Kind != model.ErrTimeout {
				t.Fatalf("Generate error = %v, want a timeout", err)
			}
			if !errors.Is(err, model.ErrStalled) {
				t.Errorf("error %v does not wrap model.ErrStalled", err)
			}
			if elapsed < 100*time.Millisecond || elapsed > 2*time.Second {
				t.Errorf("Generate returned after %v, want about the 100ms idle timeout", elapsed)
			}
		})
	}
}

func TestTimeout(t *testing.T) {
	t.Parallel()
	// The stream keeps arriving in time for the idle timeout but outlasts
	// the whole call's.
	b := setup(t, blocking(t, []byte(firstChunk)))
	p := b.provider(t, openaichat.Config{Endpoint: model.Endpoint{Timeout: 150 * time.Millisecond}})
	_, _, err := generate(t, p, nil)
	var me *model.Error
	if !asModelError(err, &me) || me.Kind != model.ErrTimeout || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Generate error = %v, want a timeout from the deadline", err)
	}
}

func TestCallerCancel(t *testing.T) {
	t.Parallel()
	b := setup(t, blocking(t, []byte(firstChunk)))
	p := b.provider(t, openaichat.Config{})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	start := time.Now()
	var got []model.Delta
	_, err := p.Generate(ctx, &model.Request{Stream: func(d model.Delta) {
		got = append(got, d)
		cancel() // the caller gives up once the stream has started
	}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Generate error = %v, want context.Canceled", err)
	}
	var me *model.Error
	if asModelError(err, &me) {
		t.Errorf("Generate error is a *model.Error of kind %s, want the context's error", me.Kind)
	}
	if elapsed := time.Since(start); elapsed > 2*time.Second {
		t.Errorf("Generate returned after %v, want promptly", elapsed)
	}
	if diff := cmp.Diff([]model.Delta{{Kind: model.DeltaText, Text: "Hel"}}, got); diff != "" {
		t.Errorf("deltas mismatch (-want +got):\n%s", diff)
	}
}

func TestKeyIsRedacted(t *testing.T) {
	t.Parallel()
	t.Run("401 echoing the key", func(t *testing.T) {
		t.Parallel()
		b := setup(t, errorResponse(401, nil, `{"error":{"message":"Incorrect API key provided: `+testKey+`. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`))
		_, _, err := generate(t, b.provider(t, openaichat.Config{}), nil)
		var me *model.Error
		if !asModelError(err, &me) || me.Kind != model.ErrAuth {
			t.Fatalf("Generate error = %v, want an auth error", err)
		}
		want := "model auth: Incorrect API key provided: [REDACTED]. You can find your API key at https://platform.openai.com/account/api-keys."
		if err.Error() != want {
			t.Errorf("error = %q, want %q", err.Error(), want)
		}
	})
	t.Run("stream error and raw stream echoing the key", func(t *testing.T) {
		t.Parallel()
		stream := strings.ReplaceAll(firstChunk, "Hel", testKey) + `data: {"error":{"message":"key ` + testKey + ` is revoked","type":"invalid_request_error","code":"invalid_api_key"}}` + "\n\n"
		b := setup(t, sse([]byte(stream)))
		_, _, err := generate(t, b.provider(t, openaichat.Config{}), nil)
		if err == nil || strings.Contains(err.Error(), testKey) {
			t.Errorf("Generate error = %v, want an error without the key", err)
		}

		b = setup(t, sse([]byte(strings.ReplaceAll(finishStreamText(), "ok", testKey))))
		resp, _, err := generate(t, b.provider(t, openaichat.Config{}), nil)
		if err != nil {
			t.Fatalf("Generate: %v", err)
		}
		if strings.Contains(string(resp.Raw), testKey) || !strings.Contains(string(resp.Raw), "[REDACTED]") {
			t.Errorf("Raw holds the key or no redaction mark:\n%s", resp.Raw)
		}
	})
}

func finishStreamText() string { return string(finishStream("stop", false)) }
