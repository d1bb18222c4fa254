package httpapi

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/runtype"
)

// The web console: server-rendered pages under /ui for operators (the
// approval queue, the request timeline, sessions, health at a glance),
// each updating live. The pages are html/template files and one CSS and
// one JS file, embedded (ui/); nothing is fetched from elsewhere.
// docs/console.md describes the pages.
//
// Routes (none is a /v1 route, nor in the OpenAPI document):
//
//	GET  /ui/login                      sign-in form (?next=/ui/...)
//	POST /ui/login                      token → session cookie, 303 to next
//	POST /ui/logout                     ends the session (CSRF)
//	GET  /ui/                           overview: health, queue, approvals, attention, sessions
//	GET  /ui/approvals                  pending actions with their forms
//	POST /ui/approvals/{actionId}       approve, approve_for_session, deny, edit (CSRF)
//	GET  /ui/requests                   requests, filtered (status, agent, sessionId, threadId), paged (cursor)
//	GET  /ui/requests/{turnId}          one request's timeline
//	GET  /ui/requests/{turnId}/live     SSE: each new event's card (id = cursor; ?after= or Last-Event-ID)
//	GET  /ui/requests/{turnId}/evidence the evidence bundle, .tar.gz (operators, admins)
//	GET  /ui/sessions                   sessions, filtered (agent), paged (cursor)
//	GET  /ui/sessions/{sessionId}       one session with its threads (?threadId= one thread)
//	GET  /ui/live                       SSE: "changed" when the tenant's log moves (debounced)
//	GET  /ui/static/{file}              console.css, console.js
//
// A GET with the header X-Console-Fragment: 1 answers the page's main
// region only (what the live refresh swaps in).
//
// Stable ids and data attributes, for browser tests:
//
//	every page       nav#nav (a[aria-current=page] is the page's), main#main[data-page=NAME]
//	                 (NAME: overview, approvals, requests, request, sessions, session,
//	                 login, error), form#logout, p#flash (a notice after a change)
//	login            form#login, input#token, input[name=next], p#login-error
//	overview         #health[data-status], #checks li[data-check=NAME][data-status],
//	                 #queue-depth, #pending-approvals, #stuck-runs, #attention tr[data-turn-id],
//	                 #sessions tr[data-session-id] (td.agent: the active agent), #last-activity
//	approvals        #approvals, article.action[data-action-id=ID][data-tool=NAME],
//	                 form#respond-ID, button#approve-ID, #approve-session-ID, #deny-ID,
//	                 input#message-ID, form#edit-ID[data-schema] with one control
//	                 #edit-ID-PROP per property (data-type, required), button#edit-submit-ID,
//	                 p#edit-error-ID (the server's reason, role=alert)
//	requests         form#filters (select#status, input#agent, input#session),
//	                 #requests tr[data-turn-id][data-status], a#next-page
//	request          #request[data-turn-id][data-status], #receipts[data-ok],
//	                 a#evidence (operators, admins), ol#timeline[data-cursor][data-live-url]
//	                 with li.card[data-type=EVENT TYPE][data-cursor][data-hop] (id ev-EVENTID)
//	sessions         #sessions tr[data-session-id], a#next-page
//	session          #session[data-session-id], section.thread[data-thread-id],
//	                 its tr[data-turn-id]
//
// Times are <time datetime=RFC3339 title=absolute> showing "3 min ago".

//go:embed ui
var consoleFS embed.FS

// FragmentHeader asks a console page for its main region only.
const FragmentHeader = "X-Console-Fragment"

// console serves the /ui pages of s.
type console struct {
	s *Server
	// pages are one template set per page, each with the layout and
	// the shared partials.
	pages map[string]*template.Template
	// liveDebounce is the least time between two changed events of
	// /ui/live.
	liveDebounce time.Duration
}

// consolePages are the page templates, by name (ui/NAME.html).
var consolePages = []string{"login", "overview", "approvals", "requests", "request", "sessions", "session", "error"}

// console registers the /ui routes on mux. New calls it.
func (s *Server) console(mux *http.ServeMux) {
	c, err := newConsole(s)
	if err != nil {
		// The templates are embedded: a parse error is a build defect
		// that every test run shows.
		panic(err)
	}
	all := runtype.APIRoles
	reading := readers.roles
	ops := operators.roles
	mux.HandleFunc("GET /ui", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/ui/", http.StatusMovedPermanently)
	})
	mux.HandleFunc("GET /ui/login", c.loginForm)
	mux.HandleFunc("POST /ui/login", c.login)
	mux.HandleFunc("POST /ui/logout", c.page(all, c.logout))
	mux.HandleFunc("GET /ui/{$}", c.page(all, c.overview))
	mux.HandleFunc("GET /ui/approvals", c.page(reading, c.approvals))
	mux.HandleFunc("POST /ui/approvals/{actionId}", c.page(ops, c.respond))
	mux.HandleFunc("GET /ui/requests", c.page(all, c.requests))
	mux.HandleFunc("GET /ui/requests/{turnId}", c.page(all, c.request))
	mux.HandleFunc("GET /ui/requests/{turnId}/live", c.page(all, c.requestLive))
	mux.HandleFunc("GET /ui/requests/{turnId}/evidence", c.page(ops, c.evidence))
	mux.HandleFunc("GET /ui/sessions", c.page(all, c.sessions))
	mux.HandleFunc("GET /ui/sessions/{sessionId}", c.page(all, c.session))
	mux.HandleFunc("GET /ui/live", c.page(all, c.live))
	static, _ := fs.Sub(consoleFS, "ui/static")
	files := http.StripPrefix("/ui/static/", http.FileServerFS(static))
	mux.Handle("GET /ui/static/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		files.ServeHTTP(w, r)
	}))
}

func newConsole(s *Server) (*console, error) {
	funcs := template.FuncMap{
		"tone": consoleTone, "ago": consoleAgo, "abs": consoleAbs, "iso": consoleISO, "usd": consoleUSD, "join": strings.Join,
		"short": func(s string, n int) string { return consoleShorten(s, n) },
		"tokens": func(u runtype.Usage) string {
			return fmt.Sprintf("%d in / %d out", u.InputTokens, u.OutputTokens)
		},
		"deref": func(t *time.Time) time.Time {
			if t == nil {
				return time.Time{}
			}
			return *t
		},
	}
	base, err := template.New("base").Funcs(funcs).ParseFS(consoleFS, "ui/layout.html", "ui/partials.html")
	if err != nil {
		return nil, fmt.Errorf("parsing the console's layout: %w", err)
	}
	c := &console{s: s, pages: map[string]*template.Template{}, liveDebounce: 500 * time.Millisecond}
	for _, name := range consolePages {
		t, err := template.Must(base.Clone()).ParseFS(consoleFS, "ui/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("parsing the console page %s: %w", name, err)
		}
		c.pages[name] = t
	}
	return c, nil
}

// consoleView is what every page template gets: who is signed in, the CSRF
// token of their forms, what they may do, and the page's own data.
type consoleView struct {
	// Page names the page (main#main[data-page]); Title is its title.
	Page, Title string
	Cred        *apitype.Credential
	CSRF        string
	// CanAct: an operator or admin (answers actions, exports evidence).
	// CanRead: not a submitter (sees health, approvals, outputs).
	CanAct, CanRead bool
	// Live is "tenant" when the page refreshes its main region as the
	// tenant's log moves.
	Live string
	// Flash is a notice after a change; FlashBad marks a failed one.
	Flash    string
	FlashBad bool
	Now      time.Time
	Data     any
}

// consolePageFunc serves one page for a signed-in caller.
type consolePageFunc func(w http.ResponseWriter, r *http.Request, v *consoleView)

// consoleMaxForm bounds a console form's body.
const consoleMaxForm = 256 << 10

// page is the console's guard. Without a valid session cookie a GET of
// a page is sent to the sign-in form (303) with the page as next; other
// requests get 401. A change (POST) must come from the console's own
// origin and carry the session's CSRF token (403 otherwise). A role that
// may not use the route gets 403, as on the API.
func (c *console) page(roles []runtype.APIRole, h consolePageFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		consoleHeaders(w)
		session := sessionCookie(r)
		cred, err := (*apitype.Credential)(nil), error(apitype.ErrUnauthorized)
		if session != "" {
			cred, err = c.s.rt.AuthenticateSession(r.Context(), session)
		}
		switch {
		case errors.Is(err, apitype.ErrUnauthorized):
			if session != "" {
				clearSessionCookie(w, r)
			}
			if r.Method == http.MethodGet && r.Header.Get(FragmentHeader) == "" && !strings.HasSuffix(r.URL.Path, "/live") {
				http.Redirect(w, r, "/ui/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
				return
			}
			c.fail(w, r, nil, http.StatusUnauthorized, "sign in again: "+consoleUnauthorized(err))
			return
		case err != nil:
			c.fail(w, r, nil, http.StatusServiceUnavailable, "the session could not be checked: "+err.Error())
			return
		}
		noteCaller(r, cred)
		v := &consoleView{Cred: cred, CSRF: csrfToken(session), Now: time.Now(),
			CanAct: slices.Contains(operators.roles, cred.Role), CanRead: cred.Role != runtype.APIRoleSubmitter}
		if !safeMethod(r.Method) {
			r.Body = http.MaxBytesReader(w, r.Body, consoleMaxForm)
			if why := c.s.refuseChange(r, session, true); why != "" {
				c.fail(w, r, v, http.StatusForbidden, why)
				return
			}
		}
		if !slices.Contains(roles, cred.Role) {
			c.fail(w, r, v, http.StatusForbidden, fmt.Sprintf("role %s may not use %s; it needs %s", cred.Role, r.URL.Path, roleList(roles)))
			return
		}
		r = r.WithContext(context.WithValue(r.Context(), credKey{}, cred))
		h(w, r, v)
	}
}

// consoleUnauthorized says why a token or session was refused.
func consoleUnauthorized(err error) string {
	switch {
	case errors.Is(err, apitype.ErrTokenRevoked):
		return "the token was revoked"
	case err == apitype.ErrUnauthorized:
		return "unknown or ended session"
	}
	return strings.TrimPrefix(err.Error(), apitype.ErrUnauthorized.Error()+": ")
}

// consoleHeaders are the headers of every console answer: no caching, no
// framing, and scripts, styles and connections from the console's own
// origin only, so that hostile text in a page can run nothing.
func consoleHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
}

// render answers page name with v: the whole page, or its main region
// when the request asks for the fragment. It renders into a buffer, so a
// template error is a 500, never half a page.
func (c *console) render(w http.ResponseWriter, r *http.Request, name string, code int, v *consoleView) {
	v.Page = name
	var buf bytes.Buffer
	tmpl := "layout"
	if r.Header.Get(FragmentHeader) != "" {
		tmpl = "main"
	}
	if err := c.pages[name].ExecuteTemplate(&buf, tmpl, v); err != nil {
		c.s.cfg.Logger.Error("rendering a console page", "page", name, "err", err)
		http.Error(w, "internal error rendering the page; see the server log", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Add("Vary", FragmentHeader)
	w.WriteHeader(code)
	w.Write(buf.Bytes())
}

// fail answers an error page; v is nil when nobody is signed in.
func (c *console) fail(w http.ResponseWriter, r *http.Request, v *consoleView, code int, msg string) {
	if v == nil {
		v = &consoleView{Now: time.Now()}
	}
	v.Title, v.Data, v.Live = http.StatusText(code), msg, ""
	c.render(w, r, "error", code, v)
}

// failErr answers an error page for a runtime error, with the status the
// API would answer.
func (c *console) failErr(w http.ResponseWriter, r *http.Request, v *consoleView, err error) {
	var inv *apitype.InvalidError
	switch {
	case errors.As(err, &inv):
		c.fail(w, r, v, http.StatusBadRequest, err.Error())
	case errors.Is(err, apitype.ErrNotFound):
		c.fail(w, r, v, http.StatusNotFound, notFound(r, err))
	case errors.Is(err, apitype.ErrForbidden):
		c.fail(w, r, v, http.StatusForbidden, err.Error())
	case errors.Is(err, apitype.ErrConflict):
		c.fail(w, r, v, http.StatusConflict, err.Error())
	case errors.Is(err, apitype.ErrStopped):
		c.fail(w, r, v, http.StatusServiceUnavailable, err.Error())
	case errors.Is(err, context.Canceled) && r.Context().Err() != nil:
	default:
		c.s.cfg.Logger.Error("serving a console page", "path", r.URL.Path, "err", err)
		c.fail(w, r, v, http.StatusInternalServerError, "internal error; see the server log")
	}
}

// consoleLoginData is the sign-in form's data.
type consoleLoginData struct {
	Next, Error string
}

func (c *console) loginForm(w http.ResponseWriter, r *http.Request) {
	consoleHeaders(w)
	c.render(w, r, "login", http.StatusOK, &consoleView{Title: "Sign in", Now: time.Now(), Data: consoleLoginData{Next: consoleNext(r.URL.Query().Get("next"))}})
}

// login makes a console session from the token in the form: 303 to next
// with the cookie set, or the form again with the reason (401).
func (c *console) login(w http.ResponseWriter, r *http.Request) {
	consoleHeaders(w)
	r.Body = http.MaxBytesReader(w, r.Body, consoleMaxForm)
	if c.s.origins.Check(r) != nil {
		// Signing someone in to another's session from another site
		// (login CSRF) is refused as any other cross-origin change.
		c.fail(w, r, nil, http.StatusForbidden, "refused: sign in from the console's own page (cross-origin request)")
		return
	}
	next := consoleNext(r.PostFormValue("next"))
	token := strings.TrimSpace(r.PostFormValue("token"))
	page := &consoleView{Title: "Sign in", Now: time.Now(), Data: consoleLoginData{Next: next}}
	if token == "" {
		page.Data = consoleLoginData{Next: next, Error: "enter a token: the admin token is in DATA_DIR/api-token"}
		c.render(w, r, "login", http.StatusUnauthorized, page)
		return
	}
	bc, err := c.s.rt.SignIn(r.Context(), token)
	switch {
	case errors.Is(err, apitype.ErrUnauthorized):
		reason := "wrong token"
		if errors.Is(err, apitype.ErrTokenRevoked) {
			reason = "the token was revoked"
		}
		page.Data = consoleLoginData{Next: next, Error: "sign-in refused: " + reason}
		c.render(w, r, "login", http.StatusUnauthorized, page)
		return
	case err != nil:
		c.failErr(w, r, nil, err)
		return
	}
	noteCaller(r, &bc.Credential)
	setSessionCookie(w, r, bc)
	http.Redirect(w, r, next, http.StatusSeeOther)
}

func (c *console) logout(w http.ResponseWriter, r *http.Request, v *consoleView) {
	if err := c.s.rt.SignOut(r.Context(), sessionCookie(r)); err != nil {
		c.failErr(w, r, v, err)
		return
	}
	clearSessionCookie(w, r)
	http.Redirect(w, r, "/ui/login", http.StatusSeeOther)
}

// consoleNext is where to go after signing in: next when it is a path of
// the console on this server, else the overview. It never leads off
// the site: no scheme, no host, no "//" or "/\" (which browsers take as
// another host).
func consoleNext(next string) string {
	u, err := url.Parse(next)
	switch {
	case next == "" || err != nil || u.Scheme != "" || u.Host != "" || u.User != nil:
		return "/ui/"
	case strings.HasPrefix(next, "//") || strings.Contains(next, `\`) || strings.ContainsAny(next, "\r\n\t"):
		return "/ui/"
	case u.Path != "/ui" && !strings.HasPrefix(u.Path, "/ui/"):
		return "/ui/"
	case strings.Contains(u.Path, ".."):
		return "/ui/"
	}
	return u.RequestURI()
}

// consoleAgo is a time relative to now: "just now", "3 min ago", "in 2 h".
func consoleAgo(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	d := time.Since(t)
	future := d < 0
	if future {
		d = -d
	}
	var s string
	switch {
	case d < 10*time.Second:
		return "just now"
	case d < time.Minute:
		s = fmt.Sprintf("%d s", int(d/time.Second))
	case d < time.Hour:
		s = fmt.Sprintf("%d min", int(d/time.Minute))
	case d < 48*time.Hour:
		s = fmt.Sprintf("%d h", int(d/time.Hour))
	default:
		s = fmt.Sprintf("%d days", int(d/(24*time.Hour)))
	}
	if future {
		return "in " + s
	}
	return s + " ago"
}

func consoleAbs(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04:05 MST")
}

func consoleISO(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// consoleUSD formats dollars: four decimals, or as many as a small amount takes.
func consoleUSD(v float64) string {
	if v != 0 && v < 0.0001 {
		return fmt.Sprintf("$%g", v)
	}
	return fmt.Sprintf("$%.4f", v)
}

// consoleShorten cuts s to n runes, marking the cut.
func consoleShorten(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
