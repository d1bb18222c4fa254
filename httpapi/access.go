package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/runtype"
)

// This file holds who may call what: the access values the route table
// uses, the guard that authenticates a request and checks its token's
// role (and, for a submitter, that the record it names is its own), and
// the not-found answer that is the same for a missing record, another
// tenant's and another principal's.

// access is who may call a route: the roles that may (none: the route
// needs no token), and what a submitter may call it for.
type access struct {
	roles []runtype.APIRole
	// own, for a route a submitter may call, names the record that must
	// be its own: the first of these parameters the request has, from
	// the path or else the query. A submitter that names none is
	// refused. Without own, a submitter's lists keep its own records
	// (onlyOwn).
	own []ownParam
	// tickets lets a stream ticket authenticate a GET (the event stream).
	tickets bool
}

// ownParam is a request parameter naming a record of a kind.
type ownParam struct {
	name string
	kind apitype.OwnKind
}

func (a access) public() bool { return len(a.roles) == 0 }

var (
	// public routes need no token: the probes and the OpenAPI document.
	public = access{}
	// anyRole routes show nothing of any tenant's work.
	anyRole = access{roles: runtype.APIRoles}
	// readers read the tenant's work (health and metrics: the whole
	// runtime's to an admin).
	readers = access{roles: []runtype.APIRole{runtype.APIRoleAdmin, runtype.APIRoleOperator, runtype.APIRoleViewer}}
	// allReaders read the tenant's work, and a submitter its own.
	allReaders = access{roles: runtype.APIRoles}
	// submitters submit turns.
	submitters = access{roles: []runtype.APIRole{runtype.APIRoleAdmin, runtype.APIRoleOperator, runtype.APIRoleSubmitter}}
	// operators answer, control and change.
	operators = access{roles: []runtype.APIRole{runtype.APIRoleAdmin, runtype.APIRoleOperator}}
	// admins manage tokens.
	admins = access{roles: []runtype.APIRole{runtype.APIRoleAdmin}}
)

// ownSession, ownTurn and ownTask let a submitter call a route of a for
// its own session, turn or task only; ownSessionOrTurn for its own
// session or turn, named in the query (the event stream).
func ownSession(a access) access { return a.owning(ownParam{"sessionId", apitype.OwnSession}) }
func ownTurn(a access) access    { return a.owning(ownParam{"turnId", apitype.OwnTurn}) }
func ownTask(a access) access    { return a.owning(ownParam{"taskId", apitype.OwnTask}) }

// ownSubagent and ownJob let a submitter call a route for the subagent
// it spawned or the job it created only.
func ownSubagent(a access) access { return a.owning(ownParam{"subagentId", apitype.OwnSubagent}) }
func ownJob(a access) access      { return a.owning(ownParam{"jobId", apitype.OwnJob}) }
func ownSessionOrTurn(a access) access {
	return a.owning(ownParam{"sessionId", apitype.OwnSession}, ownParam{"turnId", apitype.OwnTurn})
}

// streams lets a's GET authenticate with a stream ticket.
func streams(a access) access {
	a.tickets = true
	return a
}

func (a access) owning(ps ...ownParam) access {
	if !slices.Contains(a.roles, runtype.APIRoleSubmitter) {
		panic("httpapi: an own parameter on a route submitters may not call")
	}
	a.own = ps
	return a
}

// credKey keys the request's credential in its context.
type credKey struct{}

// caller is the credential of a request the guard let through.
func caller(r *http.Request) *apitype.Credential {
	return r.Context().Value(credKey{}).(*apitype.Credential)
}

// owner is whose work the request acts on, and as whom.
func owner(r *http.Request) runtype.Owner { return caller(r).Owner }

// onlyOwn reports whether the request may see its principal's own
// records only (a submitter's).
func onlyOwn(r *http.Request) bool { return caller(r).Role == runtype.APIRoleSubmitter }

// guard authenticates a request with its bearer token (or a browser's
// credential: browser.go), then lets it through to next only if the
// token's role may call the route (403 otherwise) and, for a submitter,
// the record it names is its own (404, as for a missing one, otherwise).
func (s *Server) guard(pattern string, a access, next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		h := r.Header.Get("Authorization")
		// The scheme is case-insensitive (RFC 9110 §11.1); the token is not.
		scheme, token, _ := strings.Cut(h, " ")
		var cred *apitype.Credential
		err := apitype.ErrUnauthorized
		browser := h == ""
		if browser {
			ba := s.authenticateBrowser(r, a.tickets)
			if ba.refused != "" {
				writeError(w, apitype.ProblemForbidden, ba.refused)
				return
			}
			cred, err = ba.cred, ba.err
		} else if strings.EqualFold(scheme, "Bearer") {
			cred, err = s.rt.Authenticate(r.Context(), token)
		}
		switch {
		case errors.Is(err, apitype.ErrUnauthorized):
			reason := "wrong bearer token"
			switch {
			case browser && errors.Is(err, apitype.ErrTokenRevoked):
				reason = "the token this console session or stream ticket was made from was revoked"
			case browser && err != apitype.ErrUnauthorized:
				reason = strings.TrimPrefix(err.Error(), apitype.ErrUnauthorized.Error()+": ")
			case browser && sessionCookie(r) != "":
				reason = "unknown console session: sign in again"
			case browser && a.tickets && r.URL.Query().Get("ticket") != "":
				reason = "unknown stream ticket"
			case h == "":
				reason = "missing bearer token"
			case errors.Is(err, apitype.ErrTokenRevoked):
				reason = "revoked bearer token"
			}
			w.Header().Set("WWW-Authenticate", `Bearer realm="agentrt"`)
			writeError(w, apitype.ProblemUnauthorized, reason)
			return
		case errors.Is(err, apitype.ErrStopped):
			s.writeErr(w, r, err)
			return
		case err != nil:
			// Without the store no token can be checked: a revocation
			// might be missed, so nothing is served.
			s.cfg.Logger.ErrorContext(r.Context(), "checking a bearer token", "method", r.Method, "path", r.URL.Path, "err", err)
			writeError(w, apitype.ProblemUnavailable, "the bearer token could not be checked: the store did not answer; see the server log")
			return
		}
		noteCaller(r, cred)
		if !slices.Contains(a.roles, cred.Role) {
			writeError(w, apitype.ProblemForbidden, fmt.Sprintf("role %s may not call %s; it needs %s", cred.Role, pattern, roleList(a.roles)))
			return
		}
		r = r.WithContext(context.WithValue(r.Context(), credKey{}, cred))
		if cred.Role == runtype.APIRoleSubmitter && len(a.own) > 0 && !s.checkOwn(w, r, a.own) {
			return
		}
		next(w, r)
	}
}

// checkOwn lets a submitter through when the first of ps the request has
// names its own record, answering otherwise.
func (s *Server) checkOwn(w http.ResponseWriter, r *http.Request, ps []ownParam) bool {
	for _, p := range ps {
		id := r.PathValue(p.name)
		if id == "" {
			id = r.URL.Query().Get(p.name)
		}
		if id == "" {
			continue
		}
		if err := s.rt.CheckOwn(r.Context(), owner(r), p.kind, id); err != nil {
			s.writeErr(w, r, err)
			return false
		}
		return true
	}
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = p.name
	}
	writeError(w, apitype.ProblemForbidden, fmt.Sprintf("a submitter must name its own %s", strings.Join(names, " or ")))
	return false
}

// roleList is "admin, operator or viewer".
func roleList(roles []runtype.APIRole) string {
	s := make([]string, len(roles))
	for i, r := range roles {
		s[i] = string(r)
	}
	if len(s) == 1 {
		return s[0]
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}

// notFound is the message of a 404. On a route with ids in its path it
// names those ids and nothing else, whatever was missing: a missing
// record, another tenant's and another principal's answer alike.
// Elsewhere it is the error's.
func notFound(r *http.Request, err error) string {
	_, path, _ := strings.Cut(r.Pattern, " ")
	var parts []string
	for seg := range strings.SplitSeq(path, "/") {
		name, ok := strings.CutPrefix(seg, "{")
		if !ok {
			continue
		}
		name = strings.TrimSuffix(name, "}")
		label := strings.TrimSuffix(name, "Id")
		if name == "name" {
			label = "instance" // /v1/instances/{name}
		}
		parts = append(parts, label+" "+r.PathValue(name))
	}
	if len(parts) == 0 {
		return err.Error()
	}
	return "not found: " + strings.Join(parts, ", ")
}
