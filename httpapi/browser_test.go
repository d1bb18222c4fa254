package httpapi_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/httpapi"
	"github.com/agentrt/agentrt/runtype"
)

// signIn makes a console session from b's token and returns the cookie
// header that carries it and its CSRF token.
func (b *testBundle) signIn(t *testing.T) (cookie, csrf string) {
	t.Helper()
	bc, err := b.rt.SignIn(t.Context(), b.bearer())
	if err != nil {
		t.Fatalf("SignIn: %v", err)
	}
	m := hmac.New(sha256.New, []byte(bc.Text))
	m.Write([]byte("agentrt console csrf v1"))
	return httpapi.SessionCookie + "=" + bc.Text, hex.EncodeToString(m.Sum(nil))
}

// TestSessionCookie: the console's cookie authenticates the API as the
// token it was made from. A change made with it must come from the same
// origin and carry the session's CSRF token; it ends when the session is
// signed out or the token revoked; and its text is no bearer token.
func TestSessionCookie(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	op := b.as(t, "acme", "olivia", runtype.APIRoleOperator)
	cookie, csrf := op.signIn(t)
	other, _ := b.as(t, "acme", "oscar", runtype.APIRoleOperator).signIn(t)
	withCookie := func(h map[string]string) map[string]string {
		out := map[string]string{"Authorization": "", "Cookie": cookie}
		for k, v := range h {
			out[k] = v
		}
		return out
	}
	limit := `{"scope":"tenant","maxTokens":1000}`

	// A read needs no CSRF token, and acts as the token's tenant.
	var page apitype.RequestPage
	op.getJSON(t, call{path: "/v1/requests", header: withCookie(nil)}, http.StatusOK, &page)

	for _, tc := range []struct {
		name   string
		header map[string]string
		words  []string
	}{
		{"NoCSRF", nil, []string{"CSRF token"}},
		{"WrongCSRF", map[string]string{httpapi.CSRFHeader: strings.Repeat("0", 64)}, []string{"CSRF token"}},
		{"AnotherSessionsCSRF", map[string]string{httpapi.CSRFHeader: csrfOf(other)}, []string{"CSRF token"}},
		{"CrossSite", map[string]string{httpapi.CSRFHeader: csrf, "Sec-Fetch-Site": "cross-site"}, []string{"own origin"}},
		{"OtherOrigin", map[string]string{httpapi.CSRFHeader: csrf, "Origin": "https://evil.example"}, []string{"own origin"}},
	} {
		resp, body := op.do(t, call{method: http.MethodPut, path: "/v1/limits", body: limit, header: withCookie(tc.header)})
		t.Run(tc.name, func(t *testing.T) { wantError(t, resp, body, http.StatusForbidden, "forbidden", tc.words...) })
	}
	// The API reads the token from the header only, never from a body.
	resp, body := op.do(t, call{method: http.MethodPost, path: "/v1/turns", body: "csrf=" + csrf + "&agent=support",
		header: withCookie(map[string]string{"Content-Type": "application/x-www-form-urlencoded"})})
	wantError(t, resp, body, http.StatusForbidden, "forbidden", "CSRF token")
	// An unknown session is refused before anything else is looked at.
	resp, body = op.do(t, call{method: http.MethodPut, path: "/v1/limits", body: limit,
		header: map[string]string{"Authorization": "", "Cookie": httpapi.SessionCookie + "=arts_bogus", "Origin": "https://evil.example"}})
	wantError(t, resp, body, http.StatusUnauthorized, "unauthorized", "sign in again")
	// Same origin with the token: allowed.
	op.getJSON(t, call{method: http.MethodPut, path: "/v1/limits", body: limit,
		header: withCookie(map[string]string{httpapi.CSRFHeader: csrf, "Sec-Fetch-Site": "same-origin"})}, http.StatusOK, nil)

	// A viewer's cookie has a viewer's rights.
	vcookie, vcsrf := b.as(t, "acme", "val", runtype.APIRoleViewer).signIn(t)
	resp, body = op.do(t, call{method: http.MethodPut, path: "/v1/limits", body: limit,
		header: map[string]string{"Authorization": "", "Cookie": vcookie, httpapi.CSRFHeader: vcsrf}})
	wantError(t, resp, body, http.StatusForbidden, "forbidden", "role viewer")

	// The session's text is not a bearer token, nor may one be imported.
	text := strings.TrimPrefix(cookie, httpapi.SessionCookie+"=")
	resp, body = op.do(t, call{path: "/v1/requests", header: map[string]string{"Authorization": "Bearer " + text}})
	wantError(t, resp, body, http.StatusUnauthorized, "unauthorized", "wrong bearer token")
	if _, _, err := b.rt.ImportToken(t.Context(), apitype.SessionTokenPrefix+strings.Repeat("a", 48),
		&apitype.CreateTokenParams{Owner: runtype.Owner{PrincipalID: "x"}, Role: runtype.APIRoleAdmin}); err == nil {
		t.Error("ImportToken took a console session's prefix")
	}

	// Signed out: refused.
	if err := b.rt.SignOut(t.Context(), strings.TrimPrefix(other, httpapi.SessionCookie+"=")); err != nil {
		t.Fatal(err)
	}
	resp, body = op.do(t, call{path: "/v1/requests", header: map[string]string{"Authorization": "", "Cookie": other}})
	wantError(t, resp, body, http.StatusUnauthorized, "unauthorized", "console session ended")

	// The token revoked: every session made from it ends at once.
	tokens, err := b.rt.ListTokens(t.Context(), &apitype.ListTokensParams{TenantID: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range tokens {
		if k.PrincipalID == "olivia" && strings.HasPrefix(k.Prefix, apitype.TokenPrefix) {
			if _, err := b.rt.RevokeToken(t.Context(), k.TokenID); err != nil {
				t.Fatal(err)
			}
		}
	}
	resp, body = op.do(t, call{path: "/v1/requests", header: withCookie(nil)})
	wantError(t, resp, body, http.StatusUnauthorized, "unauthorized", "was revoked")
	// An unknown session.
	resp, body = op.do(t, call{path: "/v1/requests", header: map[string]string{"Authorization": "", "Cookie": httpapi.SessionCookie + "=arts_nope"}})
	wantError(t, resp, body, http.StatusUnauthorized, "unauthorized", "sign in again")
}

// csrfOf is the CSRF token of a cookie header's session.
func csrfOf(cookie string) string {
	m := hmac.New(sha256.New, []byte(strings.TrimPrefix(cookie, httpapi.SessionCookie+"=")))
	m.Write([]byte("agentrt console csrf v1"))
	return hex.EncodeToString(m.Sum(nil))
}

// TestStreamTicket: a ticket from POST /v1/stream-tickets opens one event
// stream without a header, as the token that asked for it, once; it is
// no bearer token and opens nothing else.
func TestStreamTicket(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	sub := b.as(t, "acme", "sam", runtype.APIRoleSubmitter)
	res := sub.submit(t, apitype.SubmitTurnRequest{Input: "hi"})
	if _, err := b.rt.WaitTurn(t.Context(), runtype.Owner{TenantID: "acme", PrincipalID: "sam"}, res.TurnID); err != nil {
		t.Fatal(err)
	}
	other := b.as(t, "acme", "sue", runtype.APIRoleSubmitter).submit(t, apitype.SubmitTurnRequest{Input: "hi"})

	ticket := func(t *testing.T) string {
		var tk apitype.StreamTicket
		sub.getJSON(t, call{method: http.MethodPost, path: "/v1/stream-tickets"}, http.StatusCreated, &tk)
		if !strings.HasPrefix(tk.Ticket, apitype.TicketPrefix) || tk.ExpiresAt.IsZero() {
			t.Fatalf("ticket %+v", tk)
		}
		return tk.Ticket
	}
	get := func(t *testing.T, path string) (*http.Response, []byte) {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, b.server.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := b.server.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp, body
	}

	tk := ticket(t)
	resp, body := get(t, "/v1/events?follow=false&sessionId="+res.SessionID+"&ticket="+tk)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"turn.completed"`) {
		t.Fatalf("the ticket's stream = %d %s", resp.StatusCode, body)
	}
	// Once only.
	resp, body = get(t, "/v1/events?follow=false&sessionId="+res.SessionID+"&ticket="+tk)
	wantError(t, resp, body, http.StatusUnauthorized, "unauthorized", "stream ticket ended")

	// As the submitter: another principal's session is not found.
	resp, body = get(t, "/v1/events?follow=false&sessionId="+other.SessionID+"&ticket="+ticket(t))
	wantError(t, resp, body, http.StatusNotFound, "not_found")

	// Not on other routes, and not as a bearer token.
	resp, body = get(t, "/v1/requests?ticket="+ticket(t))
	wantError(t, resp, body, http.StatusUnauthorized, "unauthorized", "missing bearer token")
	resp, body = sub.do(t, call{path: "/v1/requests", header: map[string]string{"Authorization": "Bearer " + ticket(t)}})
	wantError(t, resp, body, http.StatusUnauthorized, "unauthorized", "wrong bearer token")
	resp, body = get(t, "/v1/events?follow=false&sessionId="+res.SessionID+"&ticket=artt_forged")
	wantError(t, resp, body, http.StatusUnauthorized, "unauthorized", "unknown stream ticket")
}

// TestCORS: the origins of the allow-list get their preflights answered
// and their answers marked, without credentials; any other origin's
// preflight is refused, and its answers carry no CORS header.
func TestCORS(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{corsOrigins: []string{"https://App.example:8443"}})
	send := func(t *testing.T, method, path, origin string, h map[string]string) *http.Response {
		t.Helper()
		req, err := http.NewRequestWithContext(context.Background(), method, b.server.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Origin", origin)
		for k, v := range h {
			req.Header.Set(k, v)
		}
		resp, err := b.server.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	cors := func(r *http.Response) map[string]string {
		out := map[string]string{"status": http.StatusText(r.StatusCode)}
		for _, k := range []string{"Access-Control-Allow-Origin", "Access-Control-Allow-Methods", "Access-Control-Allow-Headers", "Access-Control-Allow-Credentials", "Vary"} {
			if v := r.Header.Get(k); v != "" {
				out[k] = v
			}
		}
		return out
	}
	preflight := map[string]string{"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "authorization, content-type"}
	ok := "https://app.example:8443"
	for _, tc := range []struct {
		name           string
		method, origin string
		h              map[string]string
		want           map[string]string
	}{
		{"Preflight", http.MethodOptions, ok, preflight, map[string]string{
			"status": "No Content", "Access-Control-Allow-Origin": ok, "Access-Control-Allow-Methods": "GET, POST, PUT, DELETE",
			"Access-Control-Allow-Headers": "Authorization, Content-Type, Idempotency-Key, Last-Event-ID", "Vary": "Origin",
		}},
		{"PreflightOtherOrigin", http.MethodOptions, "https://evil.example", preflight, map[string]string{"status": "Forbidden", "Vary": "Origin"}},
		{"PreflightOtherPort", http.MethodOptions, "https://app.example:9443", preflight, map[string]string{"status": "Forbidden", "Vary": "Origin"}},
		{"Get", http.MethodGet, ok, map[string]string{"Authorization": "Bearer " + testToken}, map[string]string{
			"status": "OK", "Access-Control-Allow-Origin": ok, "Vary": "Origin",
		}},
		{"GetOtherOrigin", http.MethodGet, "https://evil.example", map[string]string{"Authorization": "Bearer " + testToken}, map[string]string{"status": "OK"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, cors(send(t, tc.method, "/v1/requests", tc.origin, tc.h))); diff != "" {
				t.Errorf("CORS headers (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSessionCookieAttributes: signing in to the console sets the
// session cookie HttpOnly and SameSite=Strict for the whole server, and
// Secure when it is served over TLS.
func TestSessionCookieAttributes(t *testing.T) {
	t.Parallel()
	for _, tls := range []bool{false, true} {
		t.Run(map[bool]string{false: "HTTP", true: "HTTPS"}[tls], func(t *testing.T) {
			t.Parallel()
			b := setup(t, setupOpts{tls: tls})
			hc := *b.server.Client()
			hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
			resp, err := hc.PostForm(b.server.URL+"/ui/login", map[string][]string{"token": {testToken}})
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			var got *http.Cookie
			for _, c := range resp.Cookies() {
				if c.Name == httpapi.SessionCookie {
					got = c
				}
			}
			if resp.StatusCode != http.StatusSeeOther || got == nil {
				t.Fatalf("signing in: %s, cookies %v", resp.Status, resp.Cookies())
			}
			want := map[string]any{"HttpOnly": true, "SameSite": http.SameSiteStrictMode, "Secure": tls, "Path": "/", "prefix": apitype.SessionTokenPrefix}
			have := map[string]any{"HttpOnly": got.HttpOnly, "SameSite": got.SameSite, "Secure": got.Secure, "Path": got.Path, "prefix": got.Value[:len(apitype.SessionTokenPrefix)]}
			if diff := cmp.Diff(want, have); diff != "" {
				t.Errorf("the session cookie (-want +got):\n%s", diff)
			}
		})
	}
}
