package anthropic_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/model/anthropic"
)

// testKey is the API key tests configure; servers echo it back to check
// that it never leaks.
const testKey = "sk-ant-api03-test-0123456789abcdef"

// reply is what the test server answers one request with.
type reply struct {
	status int // zero: send nothing, not even headers, until the client goes away
	header map[string]string
	body   string
	hang   bool // after body, keep the response open until the client goes away
	drip   bool // after body, send a ping every 20ms until the client goes away
	cut    bool // after body, drop the connection without ending the response
}

// sse is a 200 reply streaming body.
func sse(body string) reply {
	return reply{status: http.StatusOK, header: map[string]string{"Content-Type": "text/event-stream; charset=utf-8"}, body: body}
}

// jsonError is an error reply with an API error body.
func jsonError(status int, body string) reply {
	return reply{status: status, header: map[string]string{"Content-Type": "application/json"}, body: body}
}

// received is a request the test server got.
type received struct {
	header http.Header
	body   []byte
}

// server answers requests with its replies in order and records them.
type server struct {
	*httptest.Server
	stop chan struct{} // closed at cleanup, to release hanging handlers

	mu       sync.Mutex
	replies  []reply    // guarded by mu
	received []received // guarded by mu
}

func newServer(t *testing.T, replies ...reply) *server {
	t.Helper()
	s := &server{stop: make(chan struct{}), replies: replies}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.received = append(s.received, received{header: r.Header.Clone(), body: body})
		if len(s.replies) == 0 {
			s.mu.Unlock()
			t.Errorf("unexpected request %d to %s", len(s.received), r.URL)
			http.Error(w, "no reply left", http.StatusTeapot)
			return
		}
		rep := s.replies[0]
		s.replies = s.replies[1:]
		s.mu.Unlock()
		s.serve(w, r, rep)
	}))
	// Cleanups run last first: release hanging handlers, then close.
	t.Cleanup(s.Close)
	t.Cleanup(func() { close(s.stop) })
	return s
}

func (s *server) serve(w http.ResponseWriter, r *http.Request, rep reply) {
	if rep.status == 0 {
		s.wait(r)
		return
	}
	for k, v := range rep.header {
		w.Header().Set(k, v)
	}
	w.WriteHeader(rep.status)
	io.WriteString(w, rep.body)
	w.(http.Flusher).Flush()
	switch {
	case rep.hang:
		s.wait(r)
	case rep.drip:
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-r.Context().Done():
				return
			case <-s.stop:
				return
			case <-tick.C:
				io.WriteString(w, "event: ping\ndata: {\"type\": \"ping\"}\n\n")
				w.(http.Flusher).Flush()
			}
		}
	case rep.cut:
		panic(http.ErrAbortHandler) // closes the connection mid-response
	}
}

func (s *server) wait(r *http.Request) {
	select {
	case <-r.Context().Done():
	case <-s.stop:
	}
}

// requests returns what the server has received.
func (s *server) requests() []received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]received(nil), s.received...)
}

// newProvider returns a Provider talking to s, with cfg's fields filled in
// where they are zero.
func newProvider(t *testing.T, s *server, cfg anthropic.Config) *anthropic.Provider {
	t.Helper()
	if cfg.Model == "" {
		cfg.Model = "claude-3-7-sonnet-latest"
	}
	if cfg.APIKey == "" {
		cfg.APIKey = testKey
	}
	cfg.BaseURL = s.URL
	cfg.HTTPClient = s.Client()
	p, err := anthropic.New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return p
}

// fixture returns a file of testdata.
func fixture(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// userRequest is a one-message request.
func userRequest() *model.Request {
	return &model.Request{Messages: userMessages("Weather in SF?")}
}

// modelError returns err's *model.Error without its wrapped error, for
// comparison, failing the test when err is not one.
func modelError(t *testing.T, err error) model.Error {
	t.Helper()
	var me *model.Error
	if !errors.As(err, &me) {
		t.Fatalf("error = %v (%T), want a *model.Error", err, err)
	}
	e := *me
	e.Err = nil
	return e
}

func TestNewValidates(t *testing.T) {
	t.Parallel()
	temp := 0.5
	tests := []struct {
		name string
		cfg  anthropic.Config
		want string
	}{
		{
			name: "model missing",
			cfg:  anthropic.Config{},
			want: "configuring the anthropic provider: model is required",
		},
		{
			name: "key missing",
			cfg:  anthropic.Config{Endpoint: model.Endpoint{Model: "m"}},
			want: "configuring the anthropic provider: api key is required",
		},
		{
			name: "bad base url",
			cfg:  anthropic.Config{Endpoint: model.Endpoint{Model: "m", APIKey: testKey, BaseURL: "api.anthropic.com"}},
			want: `configuring the anthropic provider: base url "api.anthropic.com" is not an absolute http or https url`,
		},
		{
			name: "negative durations and tokens",
			cfg:  anthropic.Config{Endpoint: model.Endpoint{Model: "m", APIKey: testKey, Timeout: -1, IdleTimeout: -time.Second, MaxOutputTokens: -5}},
			want: "configuring the anthropic provider: timeout -1ns is negative",
		},
		{
			name: "thinking budget too small",
			cfg:  anthropic.Config{Endpoint: model.Endpoint{Model: "m", APIKey: testKey}, ThinkingBudget: 100},
			want: "configuring the anthropic provider: thinking budget 100 is below the api's minimum of 1024",
		},
		{
			name: "thinking budget not below max tokens",
			cfg:  anthropic.Config{Endpoint: model.Endpoint{Model: "m", APIKey: testKey}, ThinkingBudget: 4096},
			want: "configuring the anthropic provider: thinking budget 4096 must be less than max output tokens 4096",
		},
		{
			name: "thinking with temperature",
			cfg:  anthropic.Config{Endpoint: model.Endpoint{Model: "m", APIKey: testKey, Temperature: &temp}, ThinkingBudget: 2048},
			want: "configuring the anthropic provider: temperature cannot be set when thinking is on",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, err := anthropic.New(tt.cfg)
			if p != nil || err == nil || err.Error() != tt.want {
				t.Errorf("New = %v, %v; want nil and the error\n%s", p, err, tt.want)
			}
		})
	}
}

func TestInfo(t *testing.T) {
	t.Parallel()
	p, err := anthropic.New(anthropic.Config{Endpoint: model.Endpoint{Model: "claude-sonnet-4-5", APIKey: testKey}})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(model.Info{Kind: "anthropic_messages", Model: "claude-sonnet-4-5"}, p.Info()); diff != "" {
		t.Errorf("Info mismatch (-want +got):\n%s", diff)
	}
}

// TestIgnoresEnvironment checks that the SDK's environment defaults are
// not used: no credential, base URL or header comes from the environment.
// It sets environment variables, so it cannot run in parallel.
func TestIgnoresEnvironment(t *testing.T) {
	elsewhere := newServer(t) // fails the test if it is called
	tests := []struct {
		name string
		env  map[string]string
	}{
		{"api key and base url", map[string]string{
			"ANTHROPIC_API_KEY": "sk-ant-from-the-environment", "ANTHROPIC_BASE_URL": elsewhere.URL,
		}},
		{"auth token", map[string]string{"ANTHROPIC_AUTH_TOKEN": "token-from-the-environment"}},
		// Custom headers apply when the environment holds no credential
		// (and no profile, hence the empty config dir).
		{"custom headers", map[string]string{"ANTHROPIC_CUSTOM_HEADERS": "X-From-Env: yes", "ANTHROPIC_CONFIG_DIR": t.TempDir()}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			s := newServer(t, sse(fixture(t, "text.sse")))
			p := newProvider(t, s, anthropic.Config{})
			if _, err := p.Generate(t.Context(), userRequest()); err != nil {
				t.Fatalf("Generate: %v", err)
			}
			reqs := s.requests()
			if len(reqs) != 1 {
				t.Fatalf("server got %d requests, want 1", len(reqs))
			}
			h := reqs[0].header
			got := map[string]string{
				"X-Api-Key":     h.Get("X-Api-Key"),
				"Authorization": h.Get("Authorization"),
				"X-From-Env":    h.Get("X-From-Env"),
			}
			want := map[string]string{"X-Api-Key": testKey, "Authorization": "", "X-From-Env": ""}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("request headers mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHTTPErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		reply reply
		want  model.Error
	}{
		{
			name: "429 with retry-after and rate-limit headers",
			reply: reply{status: 429, header: map[string]string{
				"Content-Type":                           "application/json",
				"Retry-After":                            "7",
				"Anthropic-Ratelimit-Requests-Limit":     "4000",
				"Anthropic-Ratelimit-Requests-Remaining": "0",
				"Anthropic-Ratelimit-Input-Tokens-Reset": "2025-10-30T16:17:36Z",
				"Request-Id":                             "req_hand_429",
				"Anthropic-Organization-Id":              "org",
			}, body: `{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"},"request_id":"req_hand_429"}`},
			want: model.Error{
				Kind: model.ErrRateLimit, StatusCode: 429, Code: "rate_limit_error", RetryAfter: 7 * time.Second,
				Message: "Number of request tokens has exceeded your per-minute rate limit",
				RateLimit: map[string]string{
					"retry-after":                            "7",
					"anthropic-ratelimit-requests-limit":     "4000",
					"anthropic-ratelimit-requests-remaining": "0",
					"anthropic-ratelimit-input-tokens-reset": "2025-10-30T16:17:36Z",
				},
			},
		},
		{
			name: "429 with retry-after-ms",
			reply: reply{status: 429, header: map[string]string{
				"Content-Type": "application/json", "Retry-After": "2", "Retry-After-Ms": "1500",
			}, body: `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`},
			want: model.Error{
				Kind: model.ErrRateLimit, StatusCode: 429, Code: "rate_limit_error", RetryAfter: 1500 * time.Millisecond,
				Message: "slow down", RateLimit: map[string]string{"retry-after": "2", "retry-after-ms": "1500"},
			},
		},
		{
			name:  "401 echoing the key",
			reply: jsonError(401, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key `+testKey+`"}}`),
			want: model.Error{
				Kind: model.ErrAuth, StatusCode: 401, Code: "authentication_error",
				Message: "invalid x-api-key [REDACTED]",
			},
		},
		{
			name:  "400 prompt too long",
			reply: jsonError(400, `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 215304 tokens > 200000 maximum"}}`),
			want: model.Error{
				Kind: model.ErrContextLength, StatusCode: 400, Code: "invalid_request_error",
				Message: "prompt is too long: 215304 tokens > 200000 maximum",
			},
		},
		{
			name:  "413 request too large",
			reply: jsonError(413, `{"type":"error","error":{"type":"request_too_large","message":"Request exceeds the maximum allowed number of bytes."}}`),
			want: model.Error{
				Kind: model.ErrContextLength, StatusCode: 413, Code: "request_too_large",
				Message: "Request exceeds the maximum allowed number of bytes.",
			},
		},
		{
			name:  "529 overloaded",
			reply: jsonError(529, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`),
			want:  model.Error{Kind: model.ErrOverloaded, StatusCode: 529, Code: "overloaded_error", Message: "Overloaded"},
		},
		{
			name:  "502 without a JSON body",
			reply: reply{status: 502, header: map[string]string{"Content-Type": "text/html"}, body: "<html>bad gateway</html>"},
			want:  model.Error{Kind: model.ErrServer, StatusCode: 502, Message: "Bad Gateway"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := newServer(t, tt.reply)
			p := newProvider(t, s, anthropic.Config{})
			resp, err := p.Generate(t.Context(), userRequest())
			if resp != nil {
				t.Errorf("Generate returned a response with the error %v", err)
			}
			if diff := cmp.Diff(tt.want, modelError(t, err)); diff != "" {
				t.Errorf("error mismatch (-want +got):\n%s", diff)
			}
			if strings.Contains(err.Error(), testKey) {
				t.Errorf("error %q holds the API key", err)
			}
		})
	}
}

// TestServerErrorThenSuccess checks that a 500 is a retryable server
// error that the SDK does not retry by itself, and that the next call
// succeeds.
func TestServerErrorThenSuccess(t *testing.T) {
	t.Parallel()
	s := newServer(t,
		jsonError(500, `{"type":"error","error":{"type":"api_error","message":"Internal server error"}}`),
		sse(fixture(t, "text.sse")),
	)
	p := newProvider(t, s, anthropic.Config{})

	_, err := p.Generate(t.Context(), userRequest())
	e := modelError(t, err)
	if e.Kind != model.ErrServer || !e.Retryable() {
		t.Errorf("first call: kind %s, retryable %t; want a retryable %s", e.Kind, e.Retryable(), model.ErrServer)
	}
	if n := len(s.requests()); n != 1 {
		t.Errorf("after the 500 the server got %d requests, want 1 (SDK retries must be off)", n)
	}
	resp, err := p.Generate(t.Context(), userRequest())
	if err != nil {
		t.Fatalf("second call: %v", err)
	}
	if want := "The current weather in San Francisco is 68 degrees Fahrenheit."; resp.Text != want {
		t.Errorf("second call: text %q, want %q", resp.Text, want)
	}
}

func TestTimeouts(t *testing.T) {
	t.Parallel()
	// A stream that starts and then stalls.
	head, _, _ := strings.Cut(fixture(t, "text.sse"), "event: content_block_delta")
	tests := []struct {
		name        string
		reply       reply
		cfg         anthropic.Config
		wantMessage string
	}{
		{
			name:        "stall before the response starts",
			reply:       reply{},
			cfg:         anthropic.Config{Endpoint: model.Endpoint{IdleTimeout: 100 * time.Millisecond}},
			wantMessage: model.ErrStalled.Error(),
		},
		{
			name:        "stall mid-stream",
			reply:       reply{status: 200, header: sse("").header, body: head, hang: true},
			cfg:         anthropic.Config{Endpoint: model.Endpoint{IdleTimeout: 100 * time.Millisecond}},
			wantMessage: model.ErrStalled.Error(),
		},
		{
			name:        "a stream that never ends",
			reply:       reply{status: 200, header: sse("").header, body: head, drip: true},
			cfg:         anthropic.Config{Endpoint: model.Endpoint{Timeout: 300 * time.Millisecond, IdleTimeout: time.Minute}},
			wantMessage: "the request's deadline passed",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := newServer(t, tt.reply)
			p := newProvider(t, s, tt.cfg)
			start := time.Now()
			_, err := p.Generate(t.Context(), userRequest())
			elapsed := time.Since(start)
			e := modelError(t, err)
			if e.Kind != model.ErrTimeout || e.Message != tt.wantMessage {
				t.Errorf("error = %s %q, want %s %q", e.Kind, e.Message, model.ErrTimeout, tt.wantMessage)
			}
			// Generous, for loaded machines; a stalled call would hang
			// for the default minute.
			if elapsed > 10*time.Second {
				t.Errorf("Generate took %s", elapsed)
			}
		})
	}
}

// TestCallerCancel cancels the caller's context while the stream is
// open: Generate returns the context's error at once, not a timeout.
func TestCallerCancel(t *testing.T) {
	t.Parallel()
	head, _, _ := strings.Cut(fixture(t, "text.sse"), "event: content_block_stop")
	s := newServer(t, reply{status: 200, header: sse("").header, body: head, hang: true})
	p := newProvider(t, s, anthropic.Config{})

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	req := userRequest()
	var deltas int
	req.Stream = func(model.Delta) {
		deltas++
		cancel()
	}
	_, err := p.Generate(ctx, req)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error = %v, want context.Canceled", err)
	}
	var me *model.Error
	if errors.As(err, &me) {
		t.Errorf("error is a *model.Error (%s), want the caller's cancellation", me.Kind)
	}
	if deltas == 0 {
		t.Error("no delta arrived before the cancellation")
	}
}
