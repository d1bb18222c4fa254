package openairesponses_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/model/openairesponses"
)

// testKey is the API key the tests configure; it is long enough for
// model.Redact to treat it as a secret.
const testKey = "sk-test-4f9c2a7e1b3d5f60"

// testBundle is a provider talking to a test server.
type testBundle struct {
	srv *httptest.Server
	p   *openairesponses.Provider
	// bodies receives the body of every request the server gets.
	bodies chan []byte
}

// setup starts a server that records each request body and answers with
// handler, and a provider pointed at it. mod, when not nil, adjusts the
// config.
func setup(t *testing.T, handler http.HandlerFunc, mod func(*openairesponses.Config)) *testBundle {
	t.Helper()
	b := &testBundle{bodies: make(chan []byte, 16)}
	b.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			t.Errorf("reading the request body: %v", err)
		}
		select {
		case b.bodies <- body:
		default:
		}
		handler(w, r)
	}))
	t.Cleanup(b.srv.Close)
	cfg := openairesponses.Config{Endpoint: model.Endpoint{
		Model:      "gpt-4.1",
		APIKey:     testKey,
		BaseURL:    b.srv.URL,
		HTTPClient: b.srv.Client(),
	}}
	if mod != nil {
		mod(&cfg)
	}
	p, err := openairesponses.New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	b.p = p
	return b
}

// fixture reads a file of testdata.
func fixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatalf("reading fixture: %v", err)
	}
	return b
}

// sse answers every request with body as an event stream.
func sse(body []byte) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write(body)
	}
}

// jsonError answers with an HTTP error status, extra headers and a JSON
// body.
func jsonError(status int, headers map[string]string, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		for k, v := range headers {
			w.Header().Set(k, v)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

// collect returns a Stream callback and a function reporting the deltas
// it received.
func collect() (func(model.Delta), func() []model.Delta) {
	var got []model.Delta
	return func(d model.Delta) { got = append(got, d) }, func() []model.Delta { return got }
}

// asModelError returns err as a *model.Error or fails the test.
func asModelError(t *testing.T, err error) *model.Error {
	t.Helper()
	var me *model.Error
	if !errors.As(err, &me) {
		t.Fatalf("error = %T %v, want *model.Error", err, err)
	}
	return me
}
