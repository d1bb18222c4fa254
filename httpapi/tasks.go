package httpapi

import (
	"context"
	"net/http"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/runtype"
)

// This file holds run control by task (cancel, pause, resume, retry, the
// task read model) and a thread's queue of turns (list, promote, remove).
// Every control records its intent in the store and answers at once; the
// worker holding the task acts on it.

func (s *Server) getTask(w http.ResponseWriter, r *http.Request) {
	t, err := s.rt.GetTask(r.Context(), owner(r), r.PathValue("taskId"))
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, t)
}

// taskControl is a runtime method that controls a task.
type taskControl func(context.Context, *apitype.TaskControlParams) (runtype.TaskStatus, error)

// control answers a task control with the status it leaves the task in,
// with code.
func (s *Server) control(w http.ResponseWriter, r *http.Request, do taskControl, code int) {
	id := r.PathValue("taskId")
	status, err := do(r.Context(), &apitype.TaskControlParams{Owner: owner(r), TaskID: id})
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeJSON(w, code, apitype.TaskControlResult{TaskID: id, Status: status})
}

// cancelTask answers 202 whatever the status, as interrupt does: the
// cancel is accepted (cancelling) or the task had already ended (its
// status).
func (s *Server) cancelTask(w http.ResponseWriter, r *http.Request) {
	s.control(w, r, s.rt.CancelTask, http.StatusAccepted)
}

func (s *Server) pauseTask(w http.ResponseWriter, r *http.Request) {
	s.control(w, r, s.rt.PauseTask, http.StatusOK)
}

func (s *Server) resumeTask(w http.ResponseWriter, r *http.Request) {
	s.control(w, r, s.rt.ResumeTask, http.StatusOK)
}

func (s *Server) retryTask(w http.ResponseWriter, r *http.Request) {
	s.control(w, r, s.rt.RetryTask, http.StatusOK)
}

func (s *Server) listQueue(w http.ResponseWriter, r *http.Request) {
	q, err := s.rt.ListQueue(r.Context(), &apitype.QueueParams{
		Owner: owner(r), SessionID: r.PathValue("sessionId"), ThreadID: r.PathValue("threadId"),
	})
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	if q == nil {
		q = []event.QueuedTurn{}
	}
	writeJSON(w, http.StatusOK, apitype.QueueResult{Queued: q})
}

func (s *Server) promoteQueuedTurn(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("turnId")
	if err := s.rt.PromoteQueuedTurn(r.Context(), owner(r), id); err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, apitype.PromoteResult{TurnID: id, Promoted: true})
}

func (s *Server) removeQueuedTurn(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("turnId")
	if err := s.rt.RemoveQueuedTurn(r.Context(), owner(r), id); err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, apitype.RemoveResult{TurnID: id, Removed: true})
}

// The thread commands: rollback and fork rewrite what the thread's
// conversation is (never its facts); compact and reset queue a
// maintenance turn on it.

func threadParams(r *http.Request) apitype.ThreadParams {
	return apitype.ThreadParams{Owner: owner(r), SessionID: r.PathValue("sessionId"), ThreadID: r.PathValue("threadId")}
}

func (s *Server) rollbackThread(w http.ResponseWriter, r *http.Request) {
	var req apitype.RollbackThreadRequest
	if !decodeBody(w, r, &req) {
		return
	}
	res, err := s.rt.RollbackThread(r.Context(), &apitype.RollbackThreadParams{ThreadParams: threadParams(r), ToTurnID: req.ToTurnID})
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

func (s *Server) forkThread(w http.ResponseWriter, r *http.Request) {
	var req apitype.ForkThreadRequest
	if !decodeBody(w, r, &req) {
		return
	}
	res, err := s.rt.ForkThread(r.Context(), &apitype.ForkThreadParams{ThreadParams: threadParams(r), FromTurnID: req.FromTurnID, NewSessionID: req.NewSessionID})
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	w.Header().Set("Location", "/v1/sessions/"+res.SessionID)
	writeJSON(w, http.StatusCreated, res)
}

func (s *Server) compactThread(w http.ResponseWriter, r *http.Request) {
	s.maintain(w, r, s.rt.CompactThread)
}

func (s *Server) resetThread(w http.ResponseWriter, r *http.Request) {
	s.maintain(w, r, s.rt.ResetThread)
}

// maintain answers a request that queues a maintenance turn as a
// submission is answered: 202 with its ids, 200 for an idempotency key
// that named an earlier one.
func (s *Server) maintain(w http.ResponseWriter, r *http.Request, do func(context.Context, *apitype.CompactThreadParams) (*apitype.SubmitTurnResult, error)) {
	var req apitype.CompactThreadRequest
	if !decodeBody(w, r, &req) || !idempotencyKey(w, r, &req.IdempotencyKey) {
		return
	}
	res, err := do(r.Context(), &apitype.CompactThreadParams{ThreadParams: threadParams(r), Strategy: req.Strategy, IdempotencyKey: req.IdempotencyKey})
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
