package httpapi

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/agentrt/agentrt/apitype"
)

// This file holds what lets a browser reach the API: the console's
// session cookie and the CSRF token its changes carry, stream tickets
// for EventSource, and CORS for the origins the config allows.
//
// A request authenticates with, in this order: an Authorization header
// (a bearer token); the console's session cookie, whose requests other
// than GET and HEAD must come from the console's own origin and carry
// the session's CSRF token; or, on the event stream only, a stream
// ticket in the ticket query parameter. A long-lived token never goes in
// a URL.

const (
	// SessionCookie is the console session's cookie.
	SessionCookie = "agentrt_session"
	// CSRFHeader carries the CSRF token of a change made with the
	// session cookie; a form sends it as the csrf field instead.
	CSRFHeader = "X-CSRF-Token"
	// csrfField is the form field of the CSRF token.
	csrfField = "csrf"
)

// csrfToken is the CSRF token of a console session: an HMAC of a fixed
// label under the session's text, which only the holder of the cookie
// (and the server, which is sent it) can compute. It needs no state.
func csrfToken(session string) string {
	m := hmac.New(sha256.New, []byte(session))
	m.Write([]byte("agentrt console csrf v1"))
	return hex.EncodeToString(m.Sum(nil))
}

// validCSRF reports whether r carries the CSRF token of session, in the
// header or, when form is set (the console's pages, whose bodies are
// bounded first), its csrf field. The API never parses a body to look:
// a multipart body would be spooled to disk before anyone is known.
func validCSRF(r *http.Request, session string, form bool) bool {
	got := r.Header.Get(CSRFHeader)
	if got == "" && form {
		got = r.PostFormValue(csrfField)
	}
	return hmac.Equal([]byte(got), []byte(csrfToken(session)))
}

// sessionCookie is the request's console session text, or "".
func sessionCookie(r *http.Request) string {
	c, err := r.Cookie(SessionCookie)
	if err != nil {
		return ""
	}
	return c.Value
}

// setSessionCookie gives the browser its console session: HttpOnly, for
// this origin only (SameSite=Strict), Secure over TLS.
func setSessionCookie(w http.ResponseWriter, r *http.Request, bc *apitype.BrowserCredential) {
	http.SetCookie(w, &http.Cookie{
		Name: SessionCookie, Value: bc.Text, Path: "/", HttpOnly: true, Secure: r.TLS != nil,
		SameSite: http.SameSiteStrictMode, Expires: bc.ExpiresAt, MaxAge: int(time.Until(bc.ExpiresAt).Seconds()),
	})
}

func clearSessionCookie(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{
		Name: SessionCookie, Value: "", Path: "/", HttpOnly: true, Secure: r.TLS != nil,
		SameSite: http.SameSiteStrictMode, MaxAge: -1,
	})
}

// safeMethod reports whether a method changes nothing (RFC 9110 §9.2.1),
// so needs no CSRF token.
func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

// refuseChange says why a request made with the console's session
// cookie is refused, or "": one that changes anything must come from the
// console's own origin and carry the session's CSRF token (in its csrf
// form field too when form is set).
func (s *Server) refuseChange(r *http.Request, session string, form bool) string {
	switch {
	case safeMethod(r.Method):
		return ""
	case s.origins.Check(r) != nil:
		return "refused: a change made with the console's cookie must come from the console's own origin (cross-origin request)"
	case !validCSRF(r, session, form):
		return "refused: missing or wrong CSRF token; a change made with the console's cookie must carry it (" + CSRFHeader + " header or csrf field): reload the page and try again"
	}
	return ""
}

// browserAuth is how a request without an Authorization header
// authenticated: with the session cookie or a stream ticket.
type browserAuth struct {
	cred *apitype.Credential
	err  error
	// refused, when set, is why a cookie request is refused (403) before
	// its credential is even read.
	refused string
}

// authenticateBrowser authenticates a request that has no Authorization
// header. tickets says whether the route takes a stream ticket. It
// returns apitype.ErrUnauthorized when the request has neither.
func (s *Server) authenticateBrowser(r *http.Request, tickets bool) browserAuth {
	if session := sessionCookie(r); session != "" {
		// Who it is first: an unknown session is a 401 whatever it sends.
		cred, err := s.rt.AuthenticateSession(r.Context(), session)
		if err != nil {
			return browserAuth{err: err}
		}
		if why := s.refuseChange(r, session, false); why != "" {
			return browserAuth{refused: why}
		}
		return browserAuth{cred: cred}
	}
	if ticket := r.URL.Query().Get("ticket"); ticket != "" && tickets && r.Method == http.MethodGet {
		cred, err := s.rt.RedeemStreamTicket(r.Context(), ticket)
		return browserAuth{cred: cred, err: err}
	}
	return browserAuth{err: apitype.ErrUnauthorized}
}

// createStreamTicket answers POST /v1/stream-tickets: a ticket for one
// event stream, made from the caller's credential.
func (s *Server) createStreamTicket(w http.ResponseWriter, r *http.Request) {
	bc, err := s.rt.IssueStreamTicket(r.Context(), caller(r))
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusCreated, apitype.StreamTicket{Ticket: bc.Text, ExpiresAt: bc.ExpiresAt.UTC()})
}

// corsHeaders are the request headers another origin's page may send.
var corsHeaders = strings.Join([]string{"Authorization", "Content-Type", "Idempotency-Key", "Last-Event-ID"}, ", ")

// cors answers the preflight of, and marks the answers to, requests from
// the origins of Config.CORSOrigins. It never allows credentials: the
// console's cookie serves its own origin only, so another origin's page
// sends a bearer token or uses a stream ticket. A preflight from any
// other origin is refused (403); its simple requests get no CORS
// headers, so the browser keeps their answers from the page.
func (s *Server) cors(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		if origin == "" || !strings.HasPrefix(r.URL.Path, "/v1/") {
			next.ServeHTTP(w, r)
			return
		}
		allowed := slices.Contains(s.cfg.CORSOrigins, strings.ToLower(origin))
		h := w.Header()
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			h.Add("Vary", "Origin")
			if !allowed {
				writeError(w, apitype.ProblemForbidden, fmt.Sprintf("origin %s may not call the API from a browser: it is not in the server's cors_origins", origin))
				return
			}
			h.Set("Access-Control-Allow-Origin", origin)
			h.Set("Access-Control-Allow-Methods", "GET, POST, PUT, DELETE")
			h.Set("Access-Control-Allow-Headers", corsHeaders)
			h.Set("Access-Control-Max-Age", "600")
			w.WriteHeader(http.StatusNoContent)
			return
		}
		if allowed {
			h.Add("Vary", "Origin")
			h.Set("Access-Control-Allow-Origin", origin)
			h.Set("Access-Control-Expose-Headers", "Location, Retry-After, X-Request-Id")
		}
		next.ServeHTTP(w, r)
	})
}
