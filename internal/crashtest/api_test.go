package crashtest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"
)

// api talks to whichever incarnation is up.
type api struct {
	base   string
	token  string
	client *http.Client
}

// submitted is what POST /v1/turns answered.
type submitted struct {
	SessionID string `json:"sessionId"`
	TurnID    string `json:"turnId"`
	TaskID    string `json:"taskId"`
	Status    string `json:"status"`
	Created   bool   `json:"created"`
}

// errRefused is an answer a retry cannot change (4xx but 429).
type errRefused struct {
	code int
	body string
}

func (e *errRefused) Error() string { return fmt.Sprintf("status %d: %s", e.code, e.body) }

// do sends one request; a non-2xx answer is an error (*errRefused when a
// retry would not help).
func (a *api) do(ctx context.Context, method, path string, body any, out any) (int, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, err
		}
		rd = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, a.base+path, rd)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+a.token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := a.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, err
	}
	switch {
	case resp.StatusCode/100 == 2:
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
		return resp.StatusCode, fmt.Errorf("status %d: %s", resp.StatusCode, raw)
	default:
		return resp.StatusCode, &errRefused{code: resp.StatusCode, body: string(raw)}
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return resp.StatusCode, fmt.Errorf("decoding %s: %w", raw, err)
		}
	}
	return resp.StatusCode, nil
}

// submit submits session's turn, retrying through crashes and restarts
// until an incarnation accepts it or ctx ends. The idempotency key makes
// the retries safe: a submission whose answer a kill cut off may have
// committed, and submitting again then returns the same turn.
func (a *api) submit(ctx context.Context, session string) (*submitted, int, error) {
	return a.submitTurn(ctx, agentName, session, "crash harness session "+session, "submit-"+session)
}

// submitTurn submits a turn of agent to session with idempotency key
// key, retrying as submit does.
func (a *api) submitTurn(ctx context.Context, agent, session, input, key string) (*submitted, int, error) {
	body := map[string]string{"agent": agent, "input": input, "sessionId": session, "idempotencyKey": key}
	tries := 0
	for {
		tries++
		var s submitted
		_, err := a.do(ctx, http.MethodPost, "/v1/turns", body, &s)
		if err == nil {
			return &s, tries, nil
		}
		if _, ok := err.(*errRefused); ok {
			return nil, tries, err
		}
		select {
		case <-ctx.Done():
			return nil, tries, fmt.Errorf("submitting %s (%d tries, last: %v): %w", key, tries, err, ctx.Err())
		case <-time.After(50 * time.Millisecond): // the daemon is down or busy: ask again
		}
	}
}

// request is the part of a request (turn) the harness reads.
type request struct {
	TurnID       string `json:"turnId"`
	SessionID    string `json:"sessionId"`
	Agent        string `json:"agent"`
	Status       string `json:"status"`
	StatusReason string `json:"statusReason"`
}

// requests lists every request (with status, only those in it).
func (a *api) requests(ctx context.Context, status string) ([]request, error) {
	var all []request
	before := ""
	for {
		q := url.Values{"limit": {"1000"}}
		if before != "" {
			q.Set("before", before)
		}
		if status != "" {
			q.Set("status", status)
		}
		var page struct {
			Requests []request `json:"requests"`
		}
		if _, err := a.do(ctx, http.MethodGet, "/v1/requests?"+q.Encode(), nil, &page); err != nil {
			return nil, err
		}
		all = append(all, page.Requests...)
		if len(page.Requests) < 1000 {
			return all, nil
		}
		before = page.Requests[len(page.Requests)-1].TurnID
	}
}

// verify asks the runtime to verify a session's receipt chain.
func (a *api) verify(ctx context.Context, session string) (ok bool, problem string, err error) {
	var v struct {
		OK      bool   `json:"ok"`
		Problem string `json:"problem"`
	}
	if _, err := a.do(ctx, http.MethodGet, "/v1/sessions/"+url.PathEscape(session)+"/receipts/verify", nil, &v); err != nil {
		return false, "", err
	}
	return v.OK, v.Problem, nil
}
