package httpapi_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/runtype"
)

// TestTokenRoutes: an admin creates, lists, rotates and revokes tokens
// over HTTP; a new token is in the answer that makes it and nowhere
// after; bad requests get 4xx with a reason.
func TestTokenRoutes(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	resp, raw := b.do(t, call{method: http.MethodPost, path: "/v1/tokens", body: `{"tenantId":"acme","principalId":"ci:deploy","role":"submitter","name":"CI"}`})
	if resp.StatusCode != http.StatusCreated || resp.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("POST /v1/tokens = %d (Cache-Control %q) %s", resp.StatusCode, resp.Header.Get("Cache-Control"), raw)
	}
	var k apitype.NewToken
	if err := json.Unmarshal(raw, &k); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(k.Token, apitype.TokenPrefix) || len(k.Token) != 52 || k.TenantID != "acme" || k.PrincipalID != "ci:deploy" ||
		k.Role != runtype.APIRoleSubmitter || k.Name != "CI" || !strings.HasPrefix(k.Token, k.Prefix) {
		t.Errorf("new token = %+v", k)
	}
	// It works, as what it was made for.
	ci := &testBundle{rt: b.rt, api: b.api, server: b.server, token: k.Token}
	sub := ci.submit(t, apitype.SubmitTurnRequest{Input: "hi"})
	if turn, err := b.rt.WaitTurn(t.Context(), runtype.Owner{TenantID: "acme"}, sub.TurnID); err != nil || turn.PrincipalID != "ci:deploy" {
		t.Errorf("the turn = %+v, %v; want acme's, ci:deploy's", turn, err)
	}

	var list apitype.TokenList
	raw = b.getJSON(t, call{path: "/v1/tokens"}, http.StatusOK, &list)
	if len(list.Tokens) != 2 || list.Tokens[0].Role != runtype.APIRoleAdmin || list.Tokens[1].TokenID != k.TokenID {
		t.Errorf("tokens = %+v, want the api-token file's and the new one", list.Tokens)
	}
	if strings.Contains(string(raw), k.Token) || strings.Contains(string(raw), testToken) {
		t.Errorf("the token list shows a token: %s", raw)
	}
	b.getJSON(t, call{path: "/v1/tokens?tenantId=acme"}, http.StatusOK, &list)
	if len(list.Tokens) != 1 || list.Tokens[0].TokenID != k.TokenID {
		t.Errorf("acme's tokens = %+v", list.Tokens)
	}

	var rotated apitype.NewToken
	b.getJSON(t, call{method: http.MethodPost, path: "/v1/tokens/" + k.TokenID + "/rotate"}, http.StatusCreated, &rotated)
	if rotated.Token == k.Token || rotated.PrincipalID != "ci:deploy" || rotated.Role != runtype.APIRoleSubmitter || rotated.Name != "CI" {
		t.Errorf("rotated = %+v", rotated)
	}
	resp, raw = ci.do(t, call{method: http.MethodGet, path: "/v1/requests"})
	wantError(t, resp, raw, http.StatusUnauthorized, "unauthorized", "revoked bearer token")
	ci.token = rotated.Token
	ci.getJSON(t, call{path: "/v1/requests"}, http.StatusOK, nil)

	var revoked apitype.TokenRead
	b.getJSON(t, call{method: http.MethodPost, path: "/v1/tokens/" + rotated.TokenID + "/revoke"}, http.StatusOK, &revoked)
	if revoked.RevokedAt == nil {
		t.Errorf("revoked = %+v", revoked)
	}
	resp, raw = ci.do(t, call{method: http.MethodGet, path: "/v1/requests"})
	wantError(t, resp, raw, http.StatusUnauthorized, "unauthorized", "revoked bearer token")

	for _, tt := range []struct {
		method, path, body string
		status             int
		code               string
		words              []string
	}{
		{http.MethodPost, "/v1/tokens", `{"principalId":"x","role":"root"}`, http.StatusBadRequest, "invalid_request", []string{"role", "root", "admin, operator, submitter, viewer"}},
		{http.MethodPost, "/v1/tokens", `{"role":"viewer"}`, http.StatusBadRequest, "invalid_request", []string{"principalId"}},
		{http.MethodPost, "/v1/tokens", `{"principalId":"x","role":"viewer","secret":"y"}`, http.StatusBadRequest, "invalid_json", []string{"secret"}},
		{http.MethodPost, "/v1/tokens/tok_nope/revoke", ``, http.StatusNotFound, "not_found", []string{"not found: token tok_nope"}},
		{http.MethodPost, "/v1/tokens/tok_nope/rotate", ``, http.StatusNotFound, "not_found", []string{"not found: token tok_nope"}},
		{http.MethodPost, "/v1/tokens/" + k.TokenID + "/rotate", ``, http.StatusConflict, "conflict", []string{"revoked"}},
	} {
		resp, raw := b.do(t, call{method: tt.method, path: tt.path, body: tt.body})
		wantError(t, resp, raw, tt.status, tt.code, tt.words...)
	}
}

// TestRevocationReachesAnotherServer: two daemons on one data
// directory: a token an admin makes on one works on the other; revoked
// on the first, the second refuses it on its next request; rotated on
// the second, the first takes the new token and refuses the old.
func TestRevocationReachesAnotherServer(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	serve := func() *testBundle { return serveConfig(t, agentrt.Config{DataDir: dir}) }
	one, two := serve(), serve()
	var k apitype.NewToken
	one.getJSON(t, call{method: http.MethodPost, path: "/v1/tokens", body: `{"principalId":"alice","role":"operator"}`}, http.StatusCreated, &k)
	alice := *two
	alice.token = k.Token
	alice.getJSON(t, call{path: "/v1/requests"}, http.StatusOK, nil)

	one.getJSON(t, call{method: http.MethodPost, path: "/v1/tokens/" + k.TokenID + "/revoke"}, http.StatusOK, nil)
	resp, raw := alice.do(t, call{method: http.MethodGet, path: "/v1/requests"})
	wantError(t, resp, raw, http.StatusUnauthorized, "unauthorized", "revoked bearer token")

	var bob, rotated apitype.NewToken
	two.getJSON(t, call{method: http.MethodPost, path: "/v1/tokens", body: `{"principalId":"bob","role":"viewer"}`}, http.StatusCreated, &bob)
	two.getJSON(t, call{method: http.MethodPost, path: "/v1/tokens/" + bob.TokenID + "/rotate"}, http.StatusCreated, &rotated)
	onOne := *one
	onOne.token = bob.Token
	resp, raw = onOne.do(t, call{method: http.MethodGet, path: "/v1/requests"})
	wantError(t, resp, raw, http.StatusUnauthorized, "unauthorized", "revoked bearer token")
	onOne.token = rotated.Token
	onOne.getJSON(t, call{path: "/v1/requests"}, http.StatusOK, nil)
}

// syncBuffer is a bytes.Buffer safe for the server's and the runtime's
// concurrent logging.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestTokensStayOutOfLogsAndStore: tokens made, used, refused and
// revoked leave no trace of their text in the logs, the event log or
// the data directory's files, which hold their hashes.
func TestTokensStayOutOfLogsAndStore(t *testing.T) {
	t.Parallel()
	var logs syncBuffer
	b := setup(t, setupOpts{script: askScript, policy: askKernel(t), builtins: []string{"read_file"},
		logger: slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	var k, rotated apitype.NewToken
	b.getJSON(t, call{method: http.MethodPost, path: "/v1/tokens", body: `{"principalId":"alice","role":"operator"}`}, http.StatusCreated, &k)
	alice := *b
	alice.token = k.Token
	res := alice.submit(t, apitype.SubmitTurnRequest{Input: "go"})
	b.wait(t, res.TurnID)
	alice.do(t, call{method: http.MethodGet, path: "/v1/requests/turn_nope"})
	alice.do(t, call{method: http.MethodGet, path: "/v1/tokens"}) // forbidden
	b.getJSON(t, call{method: http.MethodPost, path: "/v1/tokens/" + k.TokenID + "/rotate"}, http.StatusCreated, &rotated)
	alice.do(t, call{method: http.MethodGet, path: "/v1/requests"}) // revoked
	secrets := []string{k.Token, rotated.Token, testToken}

	events := b.validateLog(t)
	if len(events) == 0 {
		t.Fatal("no events")
	}
	raw, err := json.Marshal(events)
	if err != nil {
		t.Fatal(err)
	}
	places := map[string]string{"the logs": logs.String(), "the events": string(raw)}
	files, err := filepath.Glob(filepath.Join(b.dataDir, "*"))
	if err != nil {
		t.Fatal(err)
	}
	var all []byte
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			if os.IsNotExist(err) || strings.Contains(err.Error(), "is a directory") {
				continue
			}
			t.Fatal(err)
		}
		places[filepath.Base(f)] = string(data)
		all = append(all, data...)
	}
	if !bytes.Contains(all, []byte(agentrt.TokenHash(k.Token))) {
		t.Errorf("the data directory's files (%v) hold no hash of the token: the test reads the wrong files", files)
	}
	for where, text := range places {
		for _, s := range secrets {
			if strings.Contains(text, s) {
				t.Errorf("%s hold the token %s…", where, s[:12])
			}
		}
	}
}
