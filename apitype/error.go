package apitype

import (
	"errors"
	"fmt"
	"time"

	"github.com/agentrt/agentrt/runtype"
)

// Errors callers branch on. The runtime returns errors that wrap them;
// the HTTP API maps each to a status and an error code, and package
// client maps the answer back, so that errors.Is works on a daemon's
// errors as on an embedded runtime's.
var (
	// ErrNotFound: no session, thread, turn, task, action or process with
	// that id for the tenant (404). It is runtype.ErrNotFound, the store's
	// sentinel too.
	ErrNotFound = runtype.ErrNotFound
	// ErrConflict: an idempotency key was reused for a different request,
	// or an id belongs to something else (409). It is
	// runtype.ErrConflict, the store's sentinel too.
	ErrConflict = runtype.ErrConflict
	// ErrStopped: the runtime is stopping or was not started (503).
	ErrStopped = errors.New("runtime is not running")
	// ErrForbidden: the principal lacks the role the request needs (403).
	ErrForbidden = errors.New("forbidden")
	// ErrNoPolicy: the runtime has no policy (Config.Policy is unset, or
	// agentrt.yaml has no policy section), so there is no permission mode
	// to switch. It is an ErrConflict, with the runtime's configuration;
	// the API maps it to 409 with the code no_policy (CodeNoPolicy).
	ErrNoPolicy = fmt.Errorf("%w: no policy is configured, so sessions have no permission mode (add a policy section to the configuration)", ErrConflict)
	// ErrBusy: the thread has an open turn and the submission's multitask
	// policy is reject. It is a conflict (409, code busy).
	ErrBusy = fmt.Errorf("%w: the thread is busy", ErrConflict)
	// ErrOverloaded is what an OverloadedError matches with errors.Is
	// (429).
	ErrOverloaded = errors.New("overloaded")
	// ErrUnknownProcess: no live process has that id in the session. The
	// runtime's errors that wrap it wrap ErrNotFound too. It is
	// runtype.ErrUnknownProcess, the process manager's sentinel too.
	ErrUnknownProcess = runtype.ErrUnknownProcess
	// ErrUnknownAgent: a replay case names an agent the configuration
	// does not have.
	ErrUnknownAgent = errors.New("unknown agent")
)

// Errors of authentication (401). ErrTokenRevoked wraps ErrUnauthorized.
var (
	ErrUnauthorized = errors.New("unauthorized")
	ErrTokenRevoked = fmt.Errorf("%w: the token was revoked", ErrUnauthorized)
)

// InvalidError reports a request that cannot be accepted as given. The API
// maps it to 400.
type InvalidError struct {
	Field  string
	Reason string
}

func (e *InvalidError) Error() string { return fmt.Sprintf("invalid %s: %s", e.Field, e.Reason) }

// SelfApprovalError refuses an answer to an action by the principal who
// submitted the action's turn, when the runtime forbids self-approval
// (agentrt's Config.ForbidSelfApproval). It is ErrForbidden to
// errors.Is.
type SelfApprovalError struct {
	ActionID  string
	TurnID    string
	Principal string
	Decision  string
}

func (e *SelfApprovalError) Error() string {
	return fmt.Sprintf("%v: %s submitted turn %s, so it may not %s action %s: the policy forbids self-approval (policy.self_approval: forbid); another principal must answer, or deny it",
		ErrForbidden, e.Principal, e.TurnID, e.Decision, e.ActionID)
}

func (e *SelfApprovalError) Unwrap() error { return ErrForbidden }

// OverloadedError refuses a submission above an admission limit. Nothing
// was recorded; submit again after RetryAfter. The API maps it to 429
// with a Retry-After header.
type OverloadedError struct {
	Reason     string
	RetryAfter time.Duration
}

func (e *OverloadedError) Error() string {
	return fmt.Sprintf("overloaded: %s; retry after %s", e.Reason, e.RetryAfter)
}

// Is makes errors.Is(err, ErrOverloaded) match.
func (e *OverloadedError) Is(target error) bool { return target == ErrOverloaded }
