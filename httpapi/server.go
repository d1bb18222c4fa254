// Package httpapi serves a Runtime over HTTP: the control plane as JSON
// endpoints, the event log as a resumable Server-Sent Events stream, health
// probes, Prometheus metrics and an OpenAPI document. Routes use the
// standard library's ServeMux patterns.
//
// Every /v1 route but the OpenAPI document, and /metrics, needs a bearer
// token. Tokens live in the runtime's store (agentrt.Runtime.CreateToken),
// each bound to a tenant, a principal and a role; the route table
// (routes) says which roles may call each route, and the OpenAPI document
// states the same in x-agentrt-roles. Errors are RFC 9457 problem
// details (Problem), one kind (ProblemKinds) per condition.
//
// Every request is logged once it is answered, in the server's slog
// format: its method, route pattern, status, duration, caller and id
// (accesslog.go; docs/telemetry.md).
package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/runtype"
)

// MaxBodyBytes bounds request bodies; Limits.BodyTimeout bounds reading
// one.
const MaxBodyBytes = 2 << 20

// TokenFile is the name of the API token file in the data directory.
const TokenFile = "api-token"

// Config configures a Server.
type Config struct {
	Logger *slog.Logger
	// Heartbeat is the interval of SSE keep-alive comments. Default 15s.
	Heartbeat time.Duration
	// CORSOrigins are the origins (scheme://host[:port]) whose pages may
	// call the API from a browser; see apitype.ParseOrigin.
	CORSOrigins []string
}

// Server is the HTTP face of a Runtime.
type Server struct {
	rt      *agentrt.Runtime
	cfg     Config
	handler http.Handler
	// process holds the Go runtime's and the process's collectors, which
	// an admin's scrape of /metrics adds.
	process *prometheus.Registry
	ids     *runtype.IDGen // of the requests' ids (the access log's)
	// origins refuses a change made with the console's cookie from
	// another origin.
	origins *http.CrossOriginProtection
}

// New returns a Server for rt. Requests authenticate with the tokens in
// rt's store.
func New(rt *agentrt.Runtime, cfg Config) (*Server, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = 15 * time.Second
	}
	for i, o := range cfg.CORSOrigins {
		origin, err := apitype.ParseOrigin(o)
		if err != nil {
			return nil, fmt.Errorf("cors origin: %w", err)
		}
		cfg.CORSOrigins[i] = origin
	}
	s := &Server{rt: rt, cfg: cfg, process: newProcessRegistry(), ids: runtype.NewIDGen(nil), origins: http.NewCrossOriginProtection()}
	mux := http.NewServeMux()
	var paths []string
	allowed := make(map[string][]string) // path → its methods
	for _, r := range s.routes() {
		h := r.handler
		if r.access.public() {
			mux.Handle(r.pattern, h)
		} else {
			mux.Handle(r.pattern, s.guard(r.pattern, r.access, h))
		}
		method, path, _ := strings.Cut(r.pattern, " ")
		if allowed[path] == nil {
			paths = append(paths, path)
		}
		allowed[path] = append(allowed[path], method)
		if method == http.MethodGet {
			allowed[path] = append(allowed[path], http.MethodHead)
		}
	}
	// A method-less pattern is less specific than the method patterns of
	// the same path, so it catches only the methods they do not serve.
	// Without it the catch-all below would answer those 404.
	for _, path := range paths {
		allow := strings.Join(allowed[path], ", ")
		notAllowed := func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Allow", allow)
			writeError(w, apitype.ProblemMethodNotAllowed, fmt.Sprintf("%s is not allowed on %s; use %s", r.Method, r.URL.Path, allow))
		}
		if !overlapsAny(path, paths) {
			mux.HandleFunc(path, notAllowed)
			continue
		}
		// A method-less pattern of a path another path's wildcard also
		// matches (/v1/subagents/wait, /v1/subagents/{subagentId})
		// conflicts with that path's method patterns: catch each other
		// method by name instead.
		for _, m := range standardMethods {
			if !slices.Contains(allowed[path], m) {
				mux.HandleFunc(m+" "+path, notAllowed)
			}
		}
	}
	s.console(mux)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, apitype.ProblemNotFound, fmt.Sprintf("no route for %s %s", r.Method, r.URL.Path))
	})
	s.handler = s.accessLog(s.cors(mux))
	return s, nil
}

// standardMethods are the methods of RFC 9110 and PATCH.
var standardMethods = []string{
	http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
	http.MethodDelete, http.MethodConnect, http.MethodOptions, http.MethodTrace,
}

// overlapsAny reports whether a request path could match both path and
// another of paths: as many segments, each pair equal or one a wildcard.
func overlapsAny(path string, paths []string) bool {
	a := strings.Split(path, "/")
	for _, other := range paths {
		b := strings.Split(other, "/")
		if other == path || len(a) != len(b) {
			continue
		}
		match := true
		for i := range a {
			if a[i] != b[i] && !strings.HasPrefix(a[i], "{") && !strings.HasPrefix(b[i], "{") {
				match = false
				break
			}
		}
		if match {
			return true
		}
	}
	return false
}

// Handler returns the server's root handler.
func (s *Server) Handler() http.Handler { return s.handler }

type route struct {
	pattern string // "METHOD /path"
	access  access
	handler http.HandlerFunc
}

// routes lists every endpoint with who may call it; the OpenAPI document
// describes exactly these, with the same roles (a test holds them
// together). The access values are defined in access.go.
func (s *Server) routes() []route {
	return []route{
		{"GET /healthz", public, s.healthz},
		{"GET /readyz", public, s.readyz},
		{"GET /metrics", readers, s.metrics},
		{"GET /v1/health", readers, s.health},
		{"GET /v1/openapi.json", public, s.openapi},
		{"POST /v1/turns", submitters, s.submitTurn},
		{"POST /v1/turns/{turnId}/interrupt", ownTurn(submitters), s.interruptTurn},
		{"POST /v1/turns/{turnId}/promote", operators, s.promoteQueuedTurn},
		{"DELETE /v1/turns/{turnId}/queue", operators, s.removeQueuedTurn},
		{"GET /v1/tasks/{taskId}", ownTask(allReaders), s.getTask},
		{"POST /v1/tasks/{taskId}/cancel", operators, s.cancelTask},
		{"POST /v1/tasks/{taskId}/pause", operators, s.pauseTask},
		{"POST /v1/tasks/{taskId}/resume", operators, s.resumeTask},
		{"POST /v1/tasks/{taskId}/retry", operators, s.retryTask},
		{"GET /v1/requests", allReaders, s.listRequests},
		{"GET /v1/requests/{turnId}", ownTurn(allReaders), s.getRequest},
		{"GET /v1/requests/{turnId}/context", ownTurn(allReaders), s.getRequestContext},
		{"GET /v1/sessions", allReaders, s.listSessions},
		{"GET /v1/sessions/{sessionId}", ownSession(allReaders), s.getSession},
		{"GET /v1/sessions/{sessionId}/threads/{threadId}", ownSession(allReaders), s.getThreadRead},
		{"GET /v1/sessions/{sessionId}/threads/{threadId}/queue", ownSession(allReaders), s.listQueue},
		{"GET /v1/sessions/{sessionId}/threads/{threadId}/history", ownSession(allReaders), s.listHistory},
		{"POST /v1/sessions/{sessionId}/threads/{threadId}/rollback", operators, s.rollbackThread},
		{"POST /v1/sessions/{sessionId}/threads/{threadId}/fork", operators, s.forkThread},
		{"POST /v1/sessions/{sessionId}/threads/{threadId}/compact", operators, s.compactThread},
		{"POST /v1/sessions/{sessionId}/threads/{threadId}/reset", operators, s.resetThread},
		{"GET /v1/tasks/{taskId}/tree", ownTask(allReaders), s.getDelegationTree},
		{"GET /v1/tasks", allReaders, s.listTasks},
		{"GET /v1/tools", anyRole, s.listTools},
		{"GET /v1/events", streams(ownSessionOrTurn(allReaders)), s.events},
		{"POST /v1/agui", submitters, s.runAGUI},
		{"POST /v1/stream-tickets", anyRole, s.createStreamTicket},
		{"PUT /v1/limits", operators, s.setLimit},
		{"GET /v1/actions", readers, s.listActions},
		{"GET /v1/actions/{actionId}", readers, s.getAction},
		{"POST /v1/actions/{actionId}", operators, s.respondAction},
		{"PUT /v1/sessions/{sessionId}/policy", operators, s.setPolicyMode},
		{"GET /v1/sessions/{sessionId}/receipts/verify", ownSession(allReaders), s.verifySession},
		{"POST /v1/sessions/{sessionId}/requests/{turnId}/export", operators, s.exportEvidence},
		{"GET /v1/outputs/{ref}", readers, s.getOutput},
		{"GET /v1/sessions/{sessionId}/processes", ownSession(allReaders), s.listProcesses},
		{"POST /v1/sessions/{sessionId}/processes/{processId}/stdin", operators, s.writeProcessStdin},
		{"POST /v1/sessions/{sessionId}/processes/{processId}/terminate", operators, s.terminateProcess},
		{"POST /v1/sessions/{sessionId}/subagents", ownSession(submitters), s.spawnSubagent},
		{"GET /v1/sessions/{sessionId}/subagents", ownSession(allReaders), s.listSubagents},
		{"POST /v1/subagents/wait", allReaders, s.waitSubagents},
		{"GET /v1/subagents/{subagentId}", ownSubagent(allReaders), s.getSubagent},
		{"POST /v1/subagents/{subagentId}/input", ownSubagent(submitters), s.sendSubagentInput},
		{"POST /v1/subagents/{subagentId}/close", ownSubagent(submitters), s.closeSubagent},
		{"POST /v1/sessions/{sessionId}/jobs", ownSession(submitters), s.createJob},
		{"GET /v1/jobs/{jobId}", ownJob(allReaders), s.getJob},
		{"GET /v1/jobs/{jobId}/items", ownJob(allReaders), s.listJobItems},
		{"POST /v1/jobs/{jobId}/retry", operators, s.retryJobItems},
		{"POST /v1/jobs/{jobId}/cancel", ownJob(submitters), s.cancelJob},
		{"POST /v1/schedules", operators, s.createSchedule},
		{"GET /v1/schedules", readers, s.listSchedules},
		{"GET /v1/schedules/overview", readers, s.scheduleOverview},
		{"GET /v1/schedules/{scheduleId}", readers, s.getSchedule},
		{"PUT /v1/schedules/{scheduleId}", operators, s.updateSchedule},
		{"DELETE /v1/schedules/{scheduleId}", operators, s.deleteSchedule},
		{"POST /v1/schedules/{scheduleId}/pause", operators, s.pauseSchedule},
		{"POST /v1/schedules/{scheduleId}/resume", operators, s.resumeSchedule},
		{"POST /v1/schedules/{scheduleId}/trigger", operators, s.triggerSchedule},
		{"GET /v1/schedules/{scheduleId}/fires", readers, s.listFires},
		{"POST /v1/fires/{fireId}/retry-delivery", operators, s.retryDelivery},
		{"GET /v1/instances", readers, s.listInstances},
		{"GET /v1/instances/{name}", readers, s.getInstance},
		{"GET /v1/instances/{name}/state", readers, s.getInstanceState},
		{"PUT /v1/instances/{name}/state", operators, s.setInstanceState},
		{"POST /v1/instances/{name}/events", operators, s.sendInstanceEvent},
		{"POST /v1/workflows", operators, s.startWorkflow},
		{"GET /v1/workflows", readers, s.listWorkflows},
		{"GET /v1/workflows/{runId}", readers, s.getWorkflow},
		{"POST /v1/workflows/{runId}/cancel", operators, s.cancelWorkflow},
		{"POST /v1/workflows/{runId}/resume", operators, s.resumeWorkflow},
		{"GET /v1/tokens", admins, s.listTokens},
		{"POST /v1/tokens", admins, s.createToken},
		{"POST /v1/tokens/{tokenId}/rotate", admins, s.rotateToken},
		{"POST /v1/tokens/{tokenId}/revoke", admins, s.revokeToken},
	}
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, apitype.ProbeStatus{Status: "ok"})
}

// readyz answers 200 while the runtime runs and its store answers, even
// when a health check warns or fails: a load balancer should keep sending
// work to a runtime with a stuck run or an old approval. It needs no
// token, so its body is the status alone.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	status, ready := s.rt.Ready(r.Context())
	code := http.StatusOK
	if !ready {
		code = http.StatusServiceUnavailable
	}
	writeJSON(w, code, apitype.ProbeStatus{Status: status})
}

// health answers the health projection: 200 when ok or degraded, 503
// when unhealthy or stopped.
//
// An admin sees the whole runtime; every other role its tenant's view.
func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	h := s.rt.Health(r.Context())
	if c := caller(r); c.Role != runtype.APIRoleAdmin {
		h = s.rt.TenantHealth(r.Context(), c.TenantID)
	}
	code := http.StatusOK
	if h.Status == apitype.HealthUnhealthy || h.Status == apitype.HealthStopped {
		code = http.StatusServiceUnavailable
	}
	writeJSON(w, code, h)
}

func (s *Server) openapi(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Write(openapiJSON)
}

func (s *Server) submitTurn(w http.ResponseWriter, r *http.Request) {
	var req apitype.SubmitTurnRequest
	if !decodeBody(w, r, &req) || !idempotencyKey(w, r, &req.IdempotencyKey) {
		return
	}
	res, err := s.rt.SubmitTurn(r.Context(), &apitype.SubmitTurnParams{
		Owner: owner(r), Agent: req.Agent, Input: req.Input, SessionID: req.SessionID,
		ThreadID: req.ThreadID, IdempotencyKey: req.IdempotencyKey, Source: "api",
		Multitask: apitype.Multitask(req.Multitask), OnlyOwn: onlyOwn(r),
	})
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	code := http.StatusAccepted
	if !res.Created {
		code = http.StatusOK
	}
	w.Header().Set("Location", "/v1/requests/"+res.TurnID)
	writeJSON(w, code, res)
}

func (s *Server) interruptTurn(w http.ResponseWriter, r *http.Request) {
	status, err := s.rt.InterruptTurn(r.Context(), owner(r), r.PathValue("turnId"))
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, apitype.InterruptResult{TurnID: r.PathValue("turnId"), Status: status})
}

func (s *Server) setLimit(w http.ResponseWriter, r *http.Request) {
	var req apitype.SetLimitRequest
	if !decodeBody(w, r, &req) {
		return
	}
	res, err := s.rt.SetLimit(r.Context(), &apitype.SetLimitParams{
		Owner: owner(r), Scope: runtype.LimitScope(req.Scope), SessionID: req.SessionID,
		MaxTokens: req.MaxTokens, MaxCostUSD: req.MaxCostUSD,
	})
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

func (s *Server) getAction(w http.ResponseWriter, r *http.Request) {
	a, err := s.rt.GetAction(r.Context(), owner(r), r.PathValue("actionId"))
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, a)
}

func (s *Server) respondAction(w http.ResponseWriter, r *http.Request) {
	var req apitype.RespondActionRequest
	if !decodeBody(w, r, &req) {
		return
	}
	res, err := s.rt.RespondAction(r.Context(), &apitype.RespondActionParams{
		Owner: owner(r), Role: caller(r).Role, ActionID: r.PathValue("actionId"), Decision: req.Decision,
		Message: req.Message, UpdatedInput: req.UpdatedInput, Content: req.Content,
	})
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

func (s *Server) setPolicyMode(w http.ResponseWriter, r *http.Request) {
	var req apitype.SetPolicyModeRequest
	if !decodeBody(w, r, &req) {
		return
	}
	sid := r.PathValue("sessionId")
	if err := s.rt.SetPolicyMode(r.Context(), &apitype.SetPolicyModeParams{
		Owner: owner(r), Role: caller(r).Role, SessionID: sid, Mode: req.Mode,
	}); err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, apitype.PolicyModeResult{SessionID: sid, Mode: req.Mode})
}

func (s *Server) listProcesses(w http.ResponseWriter, r *http.Request) {
	procs, err := s.rt.ListProcesses(r.Context(), owner(r), r.PathValue("sessionId"))
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, apitype.ProcessList{Processes: procs})
}

func (s *Server) writeProcessStdin(w http.ResponseWriter, r *http.Request) {
	var req apitype.ProcessStdinRequest
	if !decodeBody(w, r, &req) {
		return
	}
	if req.Data == "" && !req.Close {
		writeError(w, apitype.ProblemInvalidRequest, "data is empty and close is false: nothing to do")
		return
	}
	sid, pid := r.PathValue("sessionId"), r.PathValue("processId")
	if err := s.rt.WriteProcessStdin(r.Context(), owner(r), sid, pid, req.Data, req.Close); err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, apitype.ProcessStdinResult{ProcessID: pid, Bytes: len(req.Data), Closed: req.Close})
}

func (s *Server) terminateProcess(w http.ResponseWriter, r *http.Request) {
	sid, pid := r.PathValue("sessionId"), r.PathValue("processId")
	if err := s.rt.TerminateProcess(r.Context(), owner(r), sid, pid); err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, apitype.ProcessTerminateResult{ProcessID: pid, Status: "terminated"})
}

func (s *Server) verifySession(w http.ResponseWriter, r *http.Request) {
	res, err := s.rt.VerifySession(r.Context(), owner(r), r.PathValue("sessionId"))
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

func (s *Server) getRequest(w http.ResponseWriter, r *http.Request) {
	req, err := s.rt.GetRequest(r.Context(), owner(r), r.PathValue("turnId"))
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, req)
}

// getRequestContext answers the context a model call of the request
// sent, rebuilt and checked (agentrt inspect context).
func (s *Server) getRequestContext(w http.ResponseWriter, r *http.Request) {
	hop, ok := intParam(w, r.URL.Query().Get("hop"), "hop")
	if !ok {
		return
	}
	v, err := s.rt.GetContext(r.Context(), owner(r), r.PathValue("turnId"), hop)
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

func (s *Server) getSession(w http.ResponseWriter, r *http.Request) {
	snap, err := s.rt.GetSession(r.Context(), owner(r), r.PathValue("sessionId"))
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, snap)
}

func (s *Server) getThreadRead(w http.ResponseWriter, r *http.Request) {
	snap, err := s.rt.GetThreadRead(r.Context(), owner(r), r.PathValue("sessionId"), r.PathValue("threadId"))
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, snap)
}

// decodeBody decodes a JSON object body strictly, answering 4xx itself
// when it cannot.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) bool {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			writeError(w, apitype.ProblemUnsupportedMediaType, "the body must be application/json, not "+ct)
			return false
		}
	}
	return decodeBodyLimit(w, r, v, MaxBodyBytes)
}

// decodeBodyLimit is decodeBody with a bound of limit bytes.
func decodeBodyLimit(w http.ResponseWriter, r *http.Request, v any, limit int64) bool {
	// The server bounds the time the body takes (Limits.BodyTimeout).
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, limit))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var tooBig *http.MaxBytesError
		switch {
		case errors.As(err, &tooBig):
			writeError(w, apitype.ProblemBodyTooLarge, fmt.Sprintf("the body exceeds %d bytes", limit))
		case errors.Is(err, io.EOF):
			writeError(w, apitype.ProblemInvalidJSON, "the body is empty; want a JSON object")
		default:
			writeError(w, apitype.ProblemInvalidJSON, decodeProblem(err))
		}
		return false
	}
	// More is no test for trailing data: it reports false before a stray
	// '}' or ']'. Only the end of the body may follow the object.
	switch _, err := dec.Token(); {
	case errors.Is(err, io.EOF):
		return true
	case err == nil:
		writeError(w, apitype.ProblemInvalidJSON, "the body holds more than one JSON value")
	case errors.As(err, new(*http.MaxBytesError)):
		writeError(w, apitype.ProblemBodyTooLarge, fmt.Sprintf("the body exceeds %d bytes", limit))
	default:
		writeError(w, apitype.ProblemInvalidJSON, "the body holds data after the JSON object")
	}
	return false
}

// idempotencyKey takes the Idempotency-Key header into the body's key,
// answering 400 when the two differ.
func idempotencyKey(w http.ResponseWriter, r *http.Request, key *string) bool {
	h := r.Header.Get("Idempotency-Key")
	if h == "" {
		return true
	}
	if *key != "" && *key != h {
		writeError(w, apitype.ProblemInvalidRequest, "the Idempotency-Key header and the idempotencyKey field differ")
		return false
	}
	*key = h
	return true
}

func intParam(w http.ResponseWriter, v, name string) (int, bool) {
	if v == "" {
		return 0, true
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		writeError(w, apitype.ProblemInvalidParameter, fmt.Sprintf("%s must be a non-negative integer, not %q", name, v))
		return 0, false
	}
	return n, true
}

// writeErr maps runtime errors to statuses.
func (s *Server) writeErr(w http.ResponseWriter, r *http.Request, err error) {
	var inv *apitype.InvalidError
	var over *apitype.OverloadedError
	switch {
	case errors.As(err, &inv):
		writeError(w, apitype.ProblemInvalidRequest, err.Error())
	case errors.As(err, &over):
		w.Header().Set("Retry-After", strconv.Itoa(retryAfterSeconds(over.RetryAfter)))
		writeError(w, apitype.ProblemOverloaded, err.Error())
	case errors.Is(err, apitype.ErrNotFound):
		writeError(w, apitype.ProblemNotFound, notFound(r, err))
	case errors.As(err, new(*apitype.SelfApprovalError)):
		writeError(w, apitype.ProblemSelfApproval, err.Error())
	case errors.Is(err, apitype.ErrForbidden):
		writeError(w, apitype.ProblemForbidden, err.Error())
	case errors.Is(err, apitype.ErrNoPolicy):
		writeError(w, apitype.ProblemNoPolicy, err.Error())
	case errors.Is(err, apitype.ErrBusy):
		writeError(w, apitype.ProblemBusy, err.Error())
	case errors.Is(err, apitype.ErrConflict):
		writeError(w, apitype.ProblemConflict, err.Error())
	case errors.Is(err, apitype.ErrStopped):
		writeError(w, apitype.ProblemUnavailable, err.Error())
	case errors.Is(err, context.Canceled) && r.Context().Err() != nil:
		// The client went away; nobody reads the answer.
	default:
		s.cfg.Logger.Error("serving request", "method", r.Method, "path", r.URL.Path, "err", err)
		writeError(w, apitype.ProblemInternal, "internal error; see the server log")
	}
}

// retryAfterSeconds is a Retry-After value: whole seconds, rounded up,
// at least one (a zero would invite an immediate retry storm).
func retryAfterSeconds(d time.Duration) int {
	secs := (d + time.Second - 1) / time.Second
	return max(int(secs), 1)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
}

// RegisterFileToken makes the token of the api-token file (see
// LoadOrCreateToken) an admin token of the default tenant, principal
// apitype.APIPrincipal, unless rt's store knows it already: a data
// directory made before tokens were kept in the store keeps its token,
// and one revoked since stays revoked. agentrt serve calls it on every
// start.
func RegisterFileToken(ctx context.Context, rt *agentrt.Runtime, token string) error {
	_, _, err := rt.ImportToken(ctx, token, &apitype.CreateTokenParams{
		Owner: runtype.Owner{TenantID: apitype.DefaultTenant, PrincipalID: apitype.APIPrincipal},
		Role:  runtype.APIRoleAdmin, Name: TokenFile + " file",
	})
	if err != nil {
		return fmt.Errorf("registering the token of %s: %w", TokenFile, err)
	}
	return nil
}

// LoadOrCreateToken reads the API token from dataDir, creating a random one
// (file mode 0600) on first use. created reports whether it was new. An
// existing token file open to other users is made private (0600). The
// token authenticates once registered (RegisterFileToken).
func LoadOrCreateToken(dataDir string) (token string, created bool, err error) {
	path := filepath.Join(dataDir, TokenFile)
	b, err := os.ReadFile(path)
	if err == nil {
		t := strings.TrimSpace(string(b))
		if len(t) < 16 {
			return "", false, fmt.Errorf("reading API token: %s holds fewer than 16 characters", path)
		}
		if err := privateFile(path); err != nil {
			return "", false, fmt.Errorf("making the API token private: %w", err)
		}
		return t, false, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return "", false, fmt.Errorf("reading API token: %w", err)
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return "", false, fmt.Errorf("creating data dir: %w", err)
	}
	token = agentrt.GenerateToken()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", false, fmt.Errorf("creating API token: %w", err)
	}
	if _, err := f.WriteString(token + "\n"); err != nil {
		f.Close()
		return "", false, fmt.Errorf("writing API token: %w", err)
	}
	if err := f.Close(); err != nil {
		return "", false, fmt.Errorf("writing API token: %w", err)
	}
	return token, true, nil
}

// privateFile takes away what other users may do with the file at path.
func privateFile(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if mode := fi.Mode().Perm(); mode&0o077 != 0 {
		return os.Chmod(path, mode&0o700)
	}
	return nil
}
