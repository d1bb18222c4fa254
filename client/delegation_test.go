package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/client"
	"github.com/agentrt/agentrt/runtype"
)

// sent is a request a fake server received.
type sent struct {
	Method, Path, Query string
	Body                string
}

// fakeServer answers every request with answer(its index) and records
// what it received.
type fakeServer struct {
	mu     sync.Mutex
	got    []sent
	answer func(n int) string
}

func (f *fakeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	n := len(f.got)
	f.got = append(f.got, sent{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Body: string(b)})
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, f.answer(n))
}

func (f *fakeServer) requests() []sent {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]sent(nil), f.got...)
}

func newFake(t *testing.T, answer func(n int) string) (*fakeServer, *client.Client) {
	t.Helper()
	f := &fakeServer{answer: answer}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	c, err := client.New(srv.URL, testToken, client.WithHTTPClient(srv.Client()))
	if err != nil {
		t.Fatal(err)
	}
	return f, c
}

// TestClientDelegationRequests: each delegation method sends the route's
// method, path, query and body, from its params (the Owner ignored), and
// decodes the answer.
func TestClientDelegationRequests(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	owner := runtype.Owner{TenantID: "ignored", PrincipalID: "ignored"}
	tests := []struct {
		name   string
		call   func(c *client.Client) (any, error)
		answer string
		want   sent
		result any
	}{
		{"SpawnSubagent", func(c *client.Client) (any, error) {
			return c.SpawnSubagent(ctx, &apitype.SpawnSubagentParams{Owner: owner, SessionID: "ses/1", Agent: "lookup", Name: "l1", Input: "find it", ParentTaskID: "task_p", IdempotencyKey: "k"})
		}, `{"subagentId":"sub_1","status":"queued"}`,
			sent{"POST", "/v1/sessions/ses/1/subagents", "", `{"agent":"lookup","name":"l1","input":"find it","parentTaskId":"task_p","idempotencyKey":"k"}`},
			&apitype.SubagentRead{SubagentID: "sub_1", Status: runtype.StatusQueued}},
		{"ListSubagents", func(c *client.Client) (any, error) { return c.ListSubagents(ctx, "ses_1") },
			`{"subagents":[{"subagentId":"sub_1"},{"subagentId":"sub_2"}]}`,
			sent{"GET", "/v1/sessions/ses_1/subagents", "", ""},
			[]apitype.SubagentRead{{SubagentID: "sub_1"}, {SubagentID: "sub_2"}}},
		{"GetSubagent", func(c *client.Client) (any, error) {
			return c.GetSubagent(ctx, &apitype.SubagentParams{Owner: owner, SubagentID: "sub_1"})
		}, `{"subagentId":"sub_1","depth":1}`,
			sent{"GET", "/v1/subagents/sub_1", "", ""}, &apitype.SubagentRead{SubagentID: "sub_1", Depth: 1}},
		{"SendSubagentInput", func(c *client.Client) (any, error) {
			return c.SendSubagentInput(ctx, &apitype.SendSubagentInputParams{Owner: owner, SubagentID: "sub_1", Input: "more"})
		}, `{"subagentId":"sub_1","inputs":2}`,
			sent{"POST", "/v1/subagents/sub_1/input", "", `{"input":"more"}`}, &apitype.SubagentRead{SubagentID: "sub_1", Inputs: 2}},
		{"CloseSubagent", func(c *client.Client) (any, error) {
			return c.CloseSubagent(ctx, &apitype.SubagentParams{Owner: owner, SubagentID: "sub_1"})
		}, `{"subagentId":"sub_1","closed":true}`,
			sent{"POST", "/v1/subagents/sub_1/close", "", `{}`}, &apitype.SubagentRead{SubagentID: "sub_1", Closed: true}},
		{"WaitSubagents", func(c *client.Client) (any, error) {
			return c.WaitSubagents(ctx, &apitype.WaitSubagentsParams{Owner: owner, SubagentIDs: []string{"sub_1", "sub_2"}, Timeout: time.Minute})
		}, `{"subagents":[{"subagentId":"sub_1"}],"timedOut":false}`,
			sent{"POST", "/v1/subagents/wait", "", `{"subagentIds":["sub_1","sub_2"],"timeoutMs":60000}`},
			&apitype.WaitSubagentsResult{Subagents: []apitype.SubagentRead{{SubagentID: "sub_1"}}}},
		{"DelegationTree", func(c *client.Client) (any, error) { return c.DelegationTree(ctx, "task_1") },
			`{"taskId":"task_1","kind":"request","children":[{"taskId":"task_2","kind":"subagent","depth":1}]}`,
			sent{"GET", "/v1/tasks/task_1/tree", "", ""},
			&apitype.DelegationNode{TaskID: "task_1", Kind: apitype.NodeRequest, Children: []apitype.DelegationNode{{TaskID: "task_2", Kind: apitype.NodeSubagent, Depth: 1}}}},
		{"CreateJob", func(c *client.Client) (any, error) {
			return c.CreateJob(ctx, &apitype.CreateJobParams{Owner: owner, SessionID: "ses_1", Agent: "triage", Instruction: "sort",
				Items: []json.RawMessage{json.RawMessage(`{"id":1}`), json.RawMessage(`"two"`)}, Concurrency: 3, MaxAttempts: 2})
		}, `{"jobId":"job_1","items":2,"status":"pending"}`,
			sent{"POST", "/v1/sessions/ses_1/jobs", "", `{"agent":"triage","instruction":"sort","items":[{"id":1},"two"],"concurrency":3,"maxAttempts":2}`},
			&apitype.JobRead{JobID: "job_1", Items: 2, Status: runtype.JobPending}},
		{"GetJob", func(c *client.Client) (any, error) {
			return c.GetJob(ctx, &apitype.JobParams{Owner: owner, JobID: "job_1"})
		},
			`{"jobId":"job_1","completed":5}`, sent{"GET", "/v1/jobs/job_1", "", ""}, &apitype.JobRead{JobID: "job_1", Completed: 5}},
		{"ListJobItems", func(c *client.Client) (any, error) {
			return c.ListJobItems(ctx, &apitype.ListJobItemsParams{Owner: owner, JobID: "job_1", Status: runtype.ItemFailed, FromIndex: 10, Limit: 5})
		}, `{"items":[{"itemId":"item_1","index":12,"input":1,"status":"failed"}],"nextIndex":13}`,
			sent{"GET", "/v1/jobs/job_1/items", "from=10&limit=5&status=failed", ""},
			&apitype.JobItemsPage{Items: []apitype.JobItemRead{{ItemID: "item_1", Index: 12, Input: json.RawMessage("1"), Status: runtype.ItemFailed}}, NextIndex: 13}},
		{"ListJobItems first page", func(c *client.Client) (any, error) {
			return c.ListJobItems(ctx, &apitype.ListJobItemsParams{JobID: "job_1"})
		}, `{"items":[]}`, sent{"GET", "/v1/jobs/job_1/items", "", ""}, &apitype.JobItemsPage{Items: []apitype.JobItemRead{}}},
		{"RetryJobItems", func(c *client.Client) (any, error) {
			return c.RetryJobItems(ctx, &apitype.RetryJobItemsParams{Owner: owner, JobID: "job_1", ItemIDs: []string{"item_1"}})
		}, `{"job":{"jobId":"job_1"},"retried":["item_1"]}`,
			sent{"POST", "/v1/jobs/job_1/retry", "", `{"itemIds":["item_1"]}`},
			&apitype.RetryJobItemsResult{Job: apitype.JobRead{JobID: "job_1"}, Retried: []string{"item_1"}}},
		{"RetryJobItems every failed", func(c *client.Client) (any, error) {
			return c.RetryJobItems(ctx, &apitype.RetryJobItemsParams{JobID: "job_1"})
		}, `{"job":{"jobId":"job_1"},"retried":[]}`,
			sent{"POST", "/v1/jobs/job_1/retry", "", `{}`},
			&apitype.RetryJobItemsResult{Job: apitype.JobRead{JobID: "job_1"}, Retried: []string{}}},
		{"CancelJob", func(c *client.Client) (any, error) {
			return c.CancelJob(ctx, &apitype.JobParams{Owner: owner, JobID: "job_1"})
		},
			`{"jobId":"job_1","status":"cancelled"}`, sent{"POST", "/v1/jobs/job_1/cancel", "", `{}`},
			&apitype.JobRead{JobID: "job_1", Status: runtype.JobCancelled}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f, c := newFake(t, func(int) string { return tt.answer })
			got, err := tt.call(c)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff([]sent{tt.want}, f.requests()); d != "" {
				t.Errorf("requests (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tt.result, got); d != "" {
				t.Errorf("result (-want +got):\n%s", d)
			}
		})
	}
}

// TestClientWaitSubagentsLoops: a wait longer than the server's longest
// is several requests, each at most apitype.MaxWaitTimeout, until one
// answers that every subagent settled; a wait with a timeout never asks
// for more than what is left of it.
func TestClientWaitSubagentsLoops(t *testing.T) {
	t.Parallel()
	t.Run("until settled", func(t *testing.T) {
		t.Parallel()
		f, c := newFake(t, func(n int) string {
			if n < 2 {
				return `{"subagents":[{"subagentId":"sub_1","status":"running"}],"timedOut":true}`
			}
			return `{"subagents":[{"subagentId":"sub_1","status":"completed"}],"timedOut":false}`
		})
		res, err := c.WaitSubagents(t.Context(), &apitype.WaitSubagentsParams{SubagentIDs: []string{"sub_1"}})
		if err != nil {
			t.Fatal(err)
		}
		if res.TimedOut || res.Subagents[0].Status != runtype.StatusCompleted {
			t.Errorf("result %+v, want sub_1 completed", res)
		}
		body := `{"subagentIds":["sub_1"],"timeoutMs":300000}`
		want := []sent{{"POST", "/v1/subagents/wait", "", body}, {"POST", "/v1/subagents/wait", "", body}, {"POST", "/v1/subagents/wait", "", body}}
		if d := cmp.Diff(want, f.requests()); d != "" {
			t.Errorf("requests (-want +got):\n%s", d)
		}
	})
	t.Run("until the timeout", func(t *testing.T) {
		t.Parallel()
		f, c := newFake(t, func(int) string { return `{"subagents":[],"timedOut":true}` })
		res, err := c.WaitSubagents(t.Context(), &apitype.WaitSubagentsParams{SubagentIDs: []string{"sub_1"}, Timeout: time.Millisecond})
		if err != nil || !res.TimedOut {
			t.Fatalf("WaitSubagents = %+v, %v; want timed out", res, err)
		}
		for _, r := range f.requests() {
			var req apitype.WaitSubagentsRequest
			if err := json.Unmarshal([]byte(r.Body), &req); err != nil || req.TimeoutMs != 1 {
				t.Errorf("request %s: want timeoutMs 1 (what is left, at least 1)", r.Body)
			}
		}
	})
	t.Run("until ctx ends", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithCancel(t.Context())
		_, c := newFake(t, func(n int) string {
			if n == 1 {
				cancel()
			}
			return `{"subagents":[],"timedOut":true}`
		})
		if _, err := c.WaitSubagents(ctx, &apitype.WaitSubagentsParams{SubagentIDs: []string{"sub_1"}}); err == nil {
			t.Error("WaitSubagents returned no error once ctx ended")
		}
	})
}

// TestClientMirrorsDelegation: over a real server, each delegation read
// of the client returns what the Runtime's own method does, and the
// commands act: a spawned subagent completes and is waited for, a job
// whose item fails ends failed, its failed item is retried, and closing
// and cancelling answer as the runtime leaves them.
func TestClientMirrorsDelegation(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := t.Context()
	// The parked turn has used the session's first scripted reply; the
	// subagent gets the second ("done"); the job's item finds none left
	// and fails.
	res := b.park(t)
	owner := runtype.Owner{TenantID: apitype.DefaultTenant, PrincipalID: apitype.APIPrincipal}
	same := func(name string, got, want any, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("%s over HTTP differs from the runtime's (-runtime +client):\n%s", name, d)
		}
	}

	sub, err := b.c.SpawnSubagent(ctx, &apitype.SpawnSubagentParams{SessionID: res.SessionID, Agent: "support", Input: "look it up", ParentTaskID: res.TaskID})
	if err != nil {
		t.Fatal(err)
	}
	w, err := b.c.WaitSubagents(ctx, &apitype.WaitSubagentsParams{SubagentIDs: []string{sub.SubagentID}, Timeout: time.Minute})
	if err != nil || w.TimedOut || w.Subagents[0].Status != runtype.StatusCompleted {
		t.Fatalf("WaitSubagents = %+v, %v; want the subagent completed", w, err)
	}
	wantSub, _ := b.rt.GetSubagent(ctx, &apitype.SubagentParams{Owner: owner, SubagentID: sub.SubagentID})
	gotSub, err := b.c.GetSubagent(ctx, &apitype.SubagentParams{SubagentID: sub.SubagentID})
	same("GetSubagent", gotSub, roundTrip(t, wantSub), err)
	wantSubs, _ := b.rt.ListSubagents(ctx, owner, res.SessionID)
	gotSubs, err := b.c.ListSubagents(ctx, res.SessionID)
	same("ListSubagents", gotSubs, *roundTrip(t, &wantSubs), err)

	job, err := b.c.CreateJob(ctx, &apitype.CreateJobParams{SessionID: res.SessionID, Agent: "support", Items: []json.RawMessage{json.RawMessage(`{"ticket":1}`)}})
	if err != nil {
		t.Fatal(err)
	}
	jobTask, err := b.c.GetTask(ctx, job.TaskID)
	if err != nil {
		t.Fatal(err)
	}
	events, err := b.c.Events(ctx, client.EventFilter{SessionID: res.SessionID}, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer events.Close()
	for {
		e, err := events.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if e.TurnID == jobTask.TurnID && (e.Type == "turn.completed" || e.Type == "turn.failed") {
			break
		}
	}
	wantJob, _ := b.rt.GetJob(ctx, &apitype.JobParams{Owner: owner, JobID: job.JobID})
	gotJob, err := b.c.GetJob(ctx, &apitype.JobParams{JobID: job.JobID})
	same("GetJob", gotJob, roundTrip(t, wantJob), err)
	if gotJob.Status != runtype.JobFailed || gotJob.Failed != 1 {
		t.Errorf("job %+v, want failed with its one item", gotJob)
	}
	items := &apitype.ListJobItemsParams{Owner: owner, JobID: job.JobID, Status: runtype.ItemFailed}
	wantItems, _ := b.rt.ListJobItems(ctx, items)
	gotItems, err := b.c.ListJobItems(ctx, items)
	same("ListJobItems", gotItems, roundTrip(t, wantItems), err)
	wantTree, _ := b.rt.DelegationTree(ctx, owner, res.TaskID)
	gotTree, err := b.c.DelegationTree(ctx, res.TaskID)
	same("DelegationTree", gotTree, roundTrip(t, wantTree), err)
	if len(gotTree.Children) != 1 || gotTree.Children[0].SubagentID != sub.SubagentID {
		t.Errorf("tree %+v, want the subagent under the parked turn's task", gotTree)
	}

	retry, err := b.c.RetryJobItems(ctx, &apitype.RetryJobItemsParams{JobID: job.JobID})
	if err != nil || len(retry.Retried) != 1 || retry.Retried[0] != gotItems.Items[0].ItemID {
		t.Errorf("RetryJobItems = %+v, %v; want the failed item retried", retry, err)
	}
	cancelled, err := b.c.CancelJob(ctx, &apitype.JobParams{JobID: job.JobID})
	if err != nil || cancelled.JobID != job.JobID {
		t.Errorf("CancelJob = %+v, %v", cancelled, err)
	}
	closed, err := b.c.CloseSubagent(ctx, &apitype.SubagentParams{SubagentID: sub.SubagentID})
	if err != nil || !closed.Closed {
		t.Errorf("CloseSubagent = %+v, %v", closed, err)
	}
	if _, err := b.c.SendSubagentInput(ctx, &apitype.SendSubagentInputParams{SubagentID: sub.SubagentID, Input: "more"}); !errors.Is(err, apitype.ErrConflict) {
		t.Errorf("input to a closed subagent: %v, want a conflict", err)
	}
	if _, err := b.c.GetJob(ctx, &apitype.JobParams{JobID: "job_missing"}); !errors.Is(err, apitype.ErrNotFound) {
		t.Errorf("a missing job: %v, want ErrNotFound", err)
	}
}
