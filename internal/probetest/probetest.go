// Package probetest serves model endpoints for the tests of probes
// (model.Prober, agentrt doctor --probe): one that answers a models list
// as the real API does when the right key comes with the request, one
// that refuses every key with 401 (echoing the key it was sent, as a
// careless proxy might, so that a test can check it is never shown), and
// one that is down.
package probetest

import (
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
)

// API is how a provider's models list is asked for and answered.
type API struct {
	// Path is the models list's path on the server: /v1/models.
	Path string
	// Key returns the API key a request presents.
	Key func(*http.Request) string
	// Models is the body of a models list (a file under testdata).
	Models string
	// Refusal is the body of a 401 for key.
	Refusal func(key string) string
}

// OpenAI is the models list of OpenAI's API and of OpenAI-compatible
// servers: GET /v1/models with a bearer token.
func OpenAI(models string) API {
	return API{
		Path:   "/v1/models",
		Key:    func(r *http.Request) string { return strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ") },
		Models: models,
		Refusal: func(key string) string {
			return `{"error":{"message":"Incorrect API key provided: ` + key + `. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`
		},
	}
}

// Anthropic is the models list of Anthropic's API: GET /v1/models with
// x-api-key and anthropic-version.
func Anthropic(models string) API {
	return API{
		Path: "/v1/models",
		Key: func(r *http.Request) string {
			if r.Header.Get("Anthropic-Version") == "" {
				return ""
			}
			return r.Header.Get("X-Api-Key")
		},
		Models: models,
		Refusal: func(key string) string {
			return `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key: ` + key + `"},"request_id":"req_011CProbeTest"}`
		},
	}
}

// Servers are the base URLs (no path) of the three endpoints.
type Servers struct {
	// Up answers the models list when the key is key, and 401 otherwise.
	Up string
	// Refusing answers 401 to every request.
	Refusing string
	// Down refuses connections: nothing listens there any more.
	Down string
}

// ReadFile returns the contents of a fixture, failing t when it cannot.
func ReadFile(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Serve starts the three endpoints of api for key; they stop when t ends.
func Serve(t testing.TB, api API, key string) Servers {
	t.Helper()
	answer := func(w http.ResponseWriter, status int, body string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		w.Write([]byte(body))
	}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch got := api.Key(r); {
		case r.Method != http.MethodGet || r.URL.Path != api.Path:
			answer(w, http.StatusNotFound, `{"error":{"message":"Unknown request URL: `+r.Method+` `+r.URL.Path+`","type":"invalid_request_error","code":"unknown_url"}}`)
		case got != key:
			answer(w, http.StatusUnauthorized, api.Refusal(got))
		default:
			answer(w, http.StatusOK, api.Models)
		}
	}))
	t.Cleanup(up.Close)
	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		answer(w, http.StatusUnauthorized, api.Refusal(api.Key(r)))
	}))
	t.Cleanup(refusing.Close)
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	return Servers{Up: up.URL, Refusing: refusing.URL, Down: down.URL}
}
