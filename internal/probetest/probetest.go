// Package probetest serves model endpoints for the tests of probes
// (model.Prober, agentrt doctor --probe): one that answers a models list
// as the real API does when the right key comes with the request, one
// that refuses every key with 401 (echoing the key it was sent, as a
// careless proxy might, so that a test can check it is never shown), and
// one that is down.
package probetest

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/model"
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

// Key is the API key Check's endpoints accept.
const Key = "sk-probe-test-0123456789abcdef"

// Check runs the probe tests every provider shares against the endpoints
// of api: a listed and an unlisted model (the list holding models
// entries), a refused key (an auth error without the key in its
// message), an endpoint that is down (a network error) and a wrong base
// URL (an invalid request, 404). newProber makes the provider for a
// server's base URL and a model, with Key; listed and unlisted name models.
func Check(t *testing.T, api API, newProber func(base, model string) (model.Prober, error), listed, unlisted string, models int) {
	t.Helper()
	const key = Key
	srv := Serve(t, api, key)
	probe := func(base, m string) (*model.ProbeResult, error) {
		t.Helper()
		p, err := newProber(base, m)
		if err != nil {
			t.Fatal(err)
		}
		return p.Probe(context.Background())
	}
	for _, tt := range []struct {
		name, model string
		want        *model.ProbeResult
	}{
		{"listed", listed, &model.ProbeResult{Models: models, Listed: true}},
		{"not listed", unlisted, &model.ProbeResult{Models: models}},
	} {
		got, err := probe(srv.Up, tt.model)
		if err != nil {
			t.Fatalf("%s: Probe: %v", tt.name, err)
		}
		if *got != *tt.want {
			t.Errorf("%s: Probe = %+v, want %+v", tt.name, got, tt.want)
		}
	}
	for _, tt := range []struct {
		name, base string
		kind       model.ErrorKind
		status     int
	}{
		{"refused", srv.Refusing, model.ErrAuth, 401},
		{"down", srv.Down, model.ErrNetwork, 0},
		{"wrong base url", srv.Up + "/nowhere", model.ErrInvalidRequest, 404},
	} {
		_, err := probe(tt.base, listed)
		var me *model.Error
		if !errors.As(err, &me) || me.Kind != tt.kind || me.StatusCode != tt.status {
			t.Errorf("%s: Probe = %v, want a %s error (status %d)", tt.name, err, tt.kind, tt.status)
			continue
		}
		if strings.Contains(me.Error(), key) {
			t.Errorf("%s: the error shows the key: %v", tt.name, me)
		}
	}
}
