package agentrt_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/runtype"
)

// worker is a job's item agent: it answers each item's input, counts
// its calls per input and how many run at once, fails the inputs fail
// says to fail, and, when gate is set, holds every call until the gate
// closes (or the call is cancelled).
type worker struct {
	mu       sync.Mutex
	calls    map[string]int
	inflight int
	peak     int
	fail     func(input string, n int) error // n: the input's call count
	gate     chan struct{}
	started  chan string
}

func newWorker(fail func(string, int) error) *worker {
	return &worker{calls: map[string]int{}, fail: fail}
}

func (w *worker) Info() model.Info { return model.Info{Kind: "replay", Model: "worker"} }

func (w *worker) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	in := lastUser(req)
	w.mu.Lock()
	w.calls[in]++
	n := w.calls[in]
	w.inflight++
	w.peak = max(w.peak, w.inflight)
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		w.inflight--
		w.mu.Unlock()
	}()
	if w.started != nil {
		w.started <- in
	}
	if w.gate != nil {
		select {
		case <-w.gate:
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
	if w.fail != nil {
		if err := w.fail(in, n); err != nil {
			return nil, err
		}
	}
	return &model.Response{Text: "done " + in}, nil
}

func (w *worker) count(in string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.calls[in]
}

func (w *worker) inputs() map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string]int, len(w.calls))
	for k, v := range w.calls {
		out[k] = v
	}
	return out
}

func (w *worker) maxInflight() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.peak
}

var (
	badItem   = &model.Error{Kind: model.ErrInvalidRequest, Message: "this item cannot be done"}
	flakyItem = &model.Error{Kind: model.ErrServer, Message: "the provider hiccuped"}
)

// items are n JSON strings "item-000"…; an item's input is its text.
func items(n int) []json.RawMessage {
	out := make([]json.RawMessage, n)
	for i := range out {
		out[i] = json.RawMessage(fmt.Sprintf("%q", itemName(i)))
	}
	return out
}

func itemName(i int) string { return fmt.Sprintf("item-%03d", i) }

// jobRuntime starts a runtime with agent "hub" (which only opens
// sessions) and agent "worker" played by w, and opens a session.
func jobRuntime(t *testing.T, w *worker, set func(*agentrt.Config)) (*tree, string) {
	t.Helper()
	cfg := agentrt.Config{ModelRetries: -1, Agents: map[string]*agentrt.Agent{
		"hub":    {Provider: echo("hub: ")},
		"worker": {Provider: w},
	}}
	if set != nil {
		set(&cfg)
	}
	tr := startTree(t, cfg)
	return tr, openSession(t, tr.rt)
}

func openSession(t *testing.T, rt *agentrt.Runtime) string {
	t.Helper()
	res, err := rt.SubmitTurn(context.Background(), &apitype.SubmitTurnParams{Agent: "hub", Input: "open"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// WaitTurn, which also sees another process's commits.
	if _, err := rt.WaitTurn(ctx, runtype.Owner{}, res.TurnID); err != nil {
		t.Fatal(err)
	}
	return res.SessionID
}

// waitJob waits for the job's n-th end (job.completed, job.failed or
// job.cancelled) in its session's log, whichever process wrote it, and
// returns the job as read then.
func waitJob(t *testing.T, rt *agentrt.Runtime, sessionID, jobID string, n int) *apitype.JobRead {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sub, err := rt.Subscribe(ctx, &apitype.SubscribeParams{SessionID: sessionID})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	// Another process's commits reach no bus of this runtime: read the
	// log again every poll interval, as WaitTurn does.
	poll := time.NewTicker(20 * time.Millisecond)
	defer poll.Stop()
	for seen := 0; seen < n; {
		e, err := sub.TryNext(ctx)
		if err == nil && e == nil {
			select {
			case <-poll.C:
				continue
			case <-ctx.Done():
				err = ctx.Err()
			}
		}
		if err != nil {
			j, _ := rt.GetJob(context.Background(), &apitype.JobParams{JobID: jobID})
			t.Fatalf("waiting for job %s to end (%d times): %v; job %+v", jobID, n, err, j)
		}
		if e.JobID == jobID && (e.Type == event.JobCompleted || e.Type == event.JobFailed || e.Type == event.JobCancelled) {
			seen++
		}
	}
	j, err := rt.GetJob(ctx, &apitype.JobParams{JobID: jobID})
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// allItems lists every item of a job.
func allItems(t *testing.T, rt *agentrt.Runtime, jobID string) []apitype.JobItemRead {
	t.Helper()
	var out []apitype.JobItemRead
	from := 0
	for {
		page, err := rt.ListJobItems(context.Background(), &apitype.ListJobItemsParams{JobID: jobID, FromIndex: from, Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, page.Items...)
		if page.NextIndex == 0 {
			return out
		}
		from = page.NextIndex
	}
}

// counts checks a job's counts.
func wantCounts(t *testing.T, j *apitype.JobRead, status runtype.JobStatus, completed, failed, cancelled int) {
	t.Helper()
	if j.Status != status || j.Completed != completed || j.Failed != failed || j.Cancelled != cancelled || j.Running != 0 || j.Pending != 0 ||
		j.Completed+j.Failed+j.Cancelled != j.Items {
		t.Errorf("job %s: %s, %d items: %d completed, %d failed, %d cancelled, %d running, %d pending; want %s, %d/%d/%d, none open",
			j.JobID, j.Status, j.Items, j.Completed, j.Failed, j.Cancelled, j.Running, j.Pending, status, completed, failed, cancelled)
	}
}

// TestJobItemRetry: the standard's "job item retry" scenario. A job of
// 200 items, 3 of which the provider cannot do, ends failed with 197
// completed; once the provider is fixed, retrying the failed items
// completes the job, and no other item runs again.
func TestJobItemRetry(t *testing.T) {
	t.Parallel()
	failing := map[string]bool{itemName(7): true, itemName(99): true, itemName(180): true}
	var fixed sync.Mutex
	broken := true
	w := newWorker(func(in string, _ int) error {
		fixed.Lock()
		defer fixed.Unlock()
		if broken && failing[in] {
			return badItem
		}
		return nil
	})
	tr, sid := jobRuntime(t, w, nil)
	ctx := context.Background()
	const n, concurrency = 200, 4
	created, err := tr.rt.CreateJob(ctx, &apitype.CreateJobParams{SessionID: sid, Agent: "worker", Items: items(n), Concurrency: concurrency})
	if err != nil {
		t.Fatal(err)
	}
	j := waitJob(t, tr.rt, sid, created.JobID, 1)
	wantCounts(t, j, runtype.JobFailed, n-3, 3, 0)
	first := allItems(t, tr.rt, j.JobID)
	if len(first) != n {
		t.Fatalf("%d items listed, want %d", len(first), n)
	}
	failedTask := map[string]string{}
	for _, it := range first {
		name := itemName(it.Index)
		switch {
		case failing[name]:
			if it.Status != runtype.ItemFailed || it.Attempts != 1 || it.LastError == nil || !strings.Contains(it.LastError.Message, "cannot be done") {
				t.Errorf("item %d = %s, %d attempts, error %+v; want failed once with the provider's error", it.Index, it.Status, it.Attempts, it.LastError)
			}
			failedTask[it.ItemID] = it.TaskID
		case it.Status != runtype.ItemCompleted || it.Attempts != 1 || it.Result != "done "+name:
			t.Errorf("item %d = %s, %d attempts, result %q; want completed once", it.Index, it.Status, it.Attempts, it.Result)
		}
	}
	if len(failedTask) != 3 {
		t.Fatalf("failed items %v, want 3", failedTask)
	}

	fixed.Lock()
	broken = false
	fixed.Unlock()
	res, err := tr.rt.RetryJobItems(ctx, &apitype.RetryJobItemsParams{JobID: j.JobID})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Retried) != 3 {
		t.Errorf("retried %v, want the 3 failed items", res.Retried)
	}
	j = waitJob(t, tr.rt, sid, j.JobID, 2)
	wantCounts(t, j, runtype.JobCompleted, n, 0, 0)
	for _, it := range allItems(t, tr.rt, j.JobID) {
		name := itemName(it.Index)
		wantAttempts, wantCalls := 1, 1
		if failing[name] {
			wantAttempts, wantCalls = 2, 2
			if it.TaskID != failedTask[it.ItemID] {
				t.Errorf("retried item %d runs as task %s, want its task %s again", it.Index, it.TaskID, failedTask[it.ItemID])
			}
			task, err := tr.rt.GetTask(ctx, runtype.Owner{}, it.TaskID)
			if err != nil {
				t.Fatal(err)
			}
			if task.Status != runtype.StatusCompleted || len(task.Attempts) != 2 {
				t.Errorf("retried item %d's task: %s with %d attempts, want completed on its second", it.Index, task.Status, len(task.Attempts))
			}
		}
		if it.Status != runtype.ItemCompleted || it.Attempts != wantAttempts || it.Result != "done "+name {
			t.Errorf("item %d = %s, %d attempts, result %q; want completed after %d", it.Index, it.Status, it.Attempts, it.Result, wantAttempts)
		}
		if got := w.count(name); got != wantCalls {
			t.Errorf("item %d: the model was asked %d times, want %d", it.Index, got, wantCalls)
		}
	}
	if got := len(w.inputs()); got != n {
		t.Errorf("the model saw %d distinct inputs, want %d", got, n)
	}
	if peak := w.maxInflight(); peak > concurrency || peak == 0 {
		t.Errorf("%d items ran at once, want 1 to the job's concurrency %d", peak, concurrency)
	}

	got := map[event.Type]int{}
	for _, e := range tr.tb.sessionEvents(t, runtype.Owner{}, sid) {
		if e.JobID == j.JobID {
			got[e.Type]++
		}
	}
	want := map[event.Type]int{
		event.JobCreated: 1, event.JobStarted: 1, event.JobFailed: 1, event.JobCompleted: 1,
		event.JobItemStarted: n + 3, event.JobItemCompleted: n, event.JobItemFailed: 3,
	}
	for typ, k := range want {
		if got[typ] != k {
			t.Errorf("%d %s events, want %d (all: %v)", got[typ], typ, k, got)
		}
	}
	if got[event.JobProgress] == 0 {
		t.Errorf("no job.progress events: %v", got)
	}
}

// TestJobBadInput: jobs the runtime refuses, with the error a caller can
// act on.
func TestJobBadInput(t *testing.T) {
	t.Parallel()
	w := newWorker(func(in string, _ int) error {
		if in == "bad" {
			return badItem
		}
		return nil
	})
	tr, sid := jobRuntime(t, w, nil)
	ctx := context.Background()
	huge := json.RawMessage(`"` + strings.Repeat("x", apitype.MaxJobItemBytes) + `"`)
	for _, tt := range []struct {
		name  string
		p     apitype.CreateJobParams
		field string
	}{
		{"no items", apitype.CreateJobParams{}, "items"},
		{"too many items", apitype.CreateJobParams{Items: items(apitype.MaxJobItems + 1)}, "items"},
		{"an item is not JSON", apitype.CreateJobParams{Items: []json.RawMessage{json.RawMessage(`"a"`), json.RawMessage(`{nope`)}}, "items"},
		{"an item is too big", apitype.CreateJobParams{Items: []json.RawMessage{huge}}, "items"},
		{"negative concurrency", apitype.CreateJobParams{Items: items(1), Concurrency: -1}, "concurrency"},
		{"concurrency past the limit", apitype.CreateJobParams{Items: items(1), Concurrency: apitype.MaxJobConcurrency + 1}, "concurrency"},
		{"unknown agent", apitype.CreateJobParams{Items: items(1), Agent: "nobody"}, "agent"},
	} {
		p := tt.p
		p.SessionID = sid
		if p.Agent == "" {
			p.Agent = "worker"
		}
		_, err := tr.rt.CreateJob(ctx, &p)
		var inv *apitype.InvalidError
		if !errors.As(err, &inv) || inv.Field != tt.field {
			t.Errorf("%s: CreateJob = %v, want invalid %s", tt.name, err, tt.field)
		}
	}
	if _, err := tr.rt.CreateJob(ctx, &apitype.CreateJobParams{SessionID: "no-such-session", Agent: "worker", Items: items(1)}); !errors.Is(err, apitype.ErrNotFound) {
		t.Errorf("CreateJob in an unknown session = %v, want not found", err)
	}

	j, err := tr.rt.CreateJob(ctx, &apitype.CreateJobParams{SessionID: sid, Agent: "worker",
		Items: []json.RawMessage{json.RawMessage(`"good"`), json.RawMessage(`"bad"`)}})
	if err != nil {
		t.Fatal(err)
	}
	j = waitJob(t, tr.rt, sid, j.JobID, 1)
	wantCounts(t, j, runtype.JobFailed, 1, 1, 0)
	other := runtype.Owner{TenantID: "other"}
	if _, err := tr.rt.GetJob(ctx, &apitype.JobParams{Owner: other, JobID: j.JobID}); !errors.Is(err, apitype.ErrNotFound) {
		t.Errorf("another tenant's GetJob = %v, want not found", err)
	}
	if _, err := tr.rt.RetryJobItems(ctx, &apitype.RetryJobItemsParams{Owner: other, JobID: j.JobID}); !errors.Is(err, apitype.ErrNotFound) {
		t.Errorf("another tenant's RetryJobItems = %v, want not found", err)
	}
	if _, err := tr.rt.CancelJob(ctx, &apitype.JobParams{Owner: other, JobID: j.JobID}); !errors.Is(err, apitype.ErrNotFound) {
		t.Errorf("another tenant's CancelJob = %v, want not found", err)
	}
	if _, err := tr.rt.ListJobItems(ctx, &apitype.ListJobItemsParams{Owner: other, JobID: j.JobID}); !errors.Is(err, apitype.ErrNotFound) {
		t.Errorf("another tenant's ListJobItems = %v, want not found", err)
	}
	its := allItems(t, tr.rt, j.JobID)
	if _, err := tr.rt.RetryJobItems(ctx, &apitype.RetryJobItemsParams{JobID: j.JobID, ItemIDs: []string{its[0].ItemID}}); !errors.Is(err, apitype.ErrConflict) {
		t.Errorf("retrying a completed item = %v, want a conflict", err)
	}
	if _, err := tr.rt.RetryJobItems(ctx, &apitype.RetryJobItemsParams{JobID: j.JobID, ItemIDs: []string{"item_nope"}}); !errors.Is(err, apitype.ErrConflict) {
		t.Errorf("retrying an unknown item = %v, want a conflict", err)
	}
	_, err = tr.rt.CancelJob(ctx, &apitype.JobParams{JobID: j.JobID})
	if err != nil {
		t.Fatal(err)
	}
	j = waitJob(t, tr.rt, sid, j.JobID, 2)
	wantCounts(t, j, runtype.JobCancelled, 1, 1, 0)
	if _, err := tr.rt.RetryJobItems(ctx, &apitype.RetryJobItemsParams{JobID: j.JobID}); !errors.Is(err, apitype.ErrConflict) {
		t.Errorf("retrying a cancelled job = %v, want a conflict", err)
	}
	if got := w.count("good") + w.count("bad"); got != 2 {
		t.Errorf("the model was asked %d times, want twice (nothing reran)", got)
	}
}

// TestJobCancel: cancelling a job cancels its running items, and its
// pending ones never start.
func TestJobCancel(t *testing.T) {
	t.Parallel()
	w := newWorker(nil)
	w.gate, w.started = make(chan struct{}), make(chan string, 16)
	tr, sid := jobRuntime(t, w, nil)
	ctx := context.Background()
	const n, concurrency = 8, 3
	j, err := tr.rt.CreateJob(ctx, &apitype.CreateJobParams{SessionID: sid, Agent: "worker", Items: items(n), Concurrency: concurrency})
	if err != nil {
		t.Fatal(err)
	}
	for range concurrency {
		<-w.started
	}
	if _, err := tr.rt.CancelJob(ctx, &apitype.JobParams{JobID: j.JobID}); err != nil {
		t.Fatal(err)
	}
	j = waitJob(t, tr.rt, sid, j.JobID, 1)
	close(w.gate)
	wantCounts(t, j, runtype.JobCancelled, 0, 0, n)
	if got := len(w.inputs()); got != concurrency {
		t.Errorf("the model saw %d items, want only the %d running when the job was cancelled: %v", got, concurrency, w.inputs())
	}
	started := 0
	for _, it := range allItems(t, tr.rt, j.JobID) {
		if it.Status != runtype.ItemCancelled {
			t.Errorf("item %d = %s, want cancelled", it.Index, it.Status)
		}
		if it.TaskID == "" {
			continue
		}
		started++
		task, err := tr.rt.GetTask(ctx, runtype.Owner{}, it.TaskID)
		if err != nil {
			t.Fatal(err)
		}
		if task.Status != runtype.StatusCancelled {
			t.Errorf("item %d's task is %s, want cancelled", it.Index, task.Status)
		}
	}
	if started != concurrency {
		t.Errorf("%d items have a task, want the %d that ran", started, concurrency)
	}
	dispatcher, err := tr.rt.GetTask(ctx, runtype.Owner{}, j.TaskID)
	if err != nil || dispatcher.Status != runtype.StatusCancelled {
		t.Errorf("the job's task = %+v, %v; want cancelled", dispatcher, err)
	}
	if _, err := tr.rt.RetryJobItems(ctx, &apitype.RetryJobItemsParams{JobID: j.JobID}); !errors.Is(err, apitype.ErrConflict) {
		t.Errorf("retrying a cancelled job = %v, want a conflict", err)
	}
	got := map[event.Type]int{}
	for _, e := range tr.tb.sessionEvents(t, runtype.Owner{}, sid) { // schema-checked
		if e.JobID == j.JobID {
			got[e.Type]++
		}
	}
	if got[event.JobCancelled] != 1 || got[event.JobItemStarted] != concurrency || got[event.JobItemFailed] != concurrency ||
		got[event.JobCompleted]+got[event.JobFailed] != 0 {
		t.Errorf("job events %v, want one job.cancelled, and a start and an end of each item that ran", got)
	}
}

// TestJobAutomaticRetry: a job with MaxAttempts 2 gives an item whose
// attempt failed retryably a second attempt of its own; when the runtime
// retries failed tasks itself (Config.Retry), the job counts those
// attempts and does not retry on top of them.
func TestJobAutomaticRetry(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name  string
		retry agentrt.RetryPolicy
	}{
		{"by the job", agentrt.RetryPolicy{}},
		{"by the runtime", agentrt.RetryPolicy{MaxAttempts: 2}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			// item-000 fails its first call, item-001 every call; the rest
			// answer.
			w := newWorker(func(in string, n int) error {
				if in == itemName(0) && n == 1 || in == itemName(1) {
					return flakyItem
				}
				return nil
			})
			tr, sid := jobRuntime(t, w, func(c *agentrt.Config) { c.Retry = tt.retry })
			ctx := context.Background()
			j, err := tr.rt.CreateJob(ctx, &apitype.CreateJobParams{SessionID: sid, Agent: "worker", Items: items(3), MaxAttempts: 2})
			if err != nil {
				t.Fatal(err)
			}
			j = waitJob(t, tr.rt, sid, j.JobID, 1)
			wantCounts(t, j, runtype.JobFailed, 2, 1, 0)
			its := allItems(t, tr.rt, j.JobID)
			for i, want := range []struct {
				status         runtype.JobItemStatus
				attempts, runs int
			}{{runtype.ItemCompleted, 2, 2}, {runtype.ItemFailed, 2, 2}, {runtype.ItemCompleted, 1, 1}} {
				it := its[i]
				if it.Status != want.status || it.Attempts != want.attempts {
					t.Errorf("item %d = %s after %d attempts, want %s after %d", i, it.Status, it.Attempts, want.status, want.attempts)
				}
				if got := w.count(itemName(i)); got != want.runs {
					t.Errorf("item %d: the model was asked %d times, want %d", i, got, want.runs)
				}
				task, err := tr.rt.GetTask(ctx, runtype.Owner{}, it.TaskID)
				if err != nil {
					t.Fatal(err)
				}
				if len(task.Attempts) != want.attempts {
					t.Errorf("item %d's task has %d attempts, want %d", i, len(task.Attempts), want.attempts)
				}
			}
			if its[1].LastError == nil || its[1].LastError.Kind != runtype.FailureModel {
				t.Errorf("item 1's last error = %+v, want the model's", its[1].LastError)
			}
			tr.tb.sessionEvents(t, runtype.Owner{}, sid) // schema-checked
		})
	}
}

// TestJobTwoRuntimes: two runtimes on one SQLite file. A job created
// through one is retried through the other; its items run on either
// runtime's workers, and both read the same counts.
func TestJobTwoRuntimes(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	broken := true
	fail := func(in string, _ int) error {
		mu.Lock()
		defer mu.Unlock()
		if broken && (in == itemName(3) || in == itemName(11)) {
			return badItem
		}
		return nil
	}
	w1, w2 := newWorker(fail), newWorker(fail)
	dir := t.TempDir()
	set := func(w *worker) func(*agentrt.Config) {
		return func(c *agentrt.Config) {
			c.DataDir, c.PollInterval = dir, 20*time.Millisecond
			c.LeaseTTL = 10 * time.Second
			c.Agents["worker"].Provider = w
		}
	}
	a, sid := jobRuntime(t, w1, set(w1))
	b, _ := jobRuntime(t, w2, set(w2))
	ctx := context.Background()
	const n = 16
	j, err := a.rt.CreateJob(ctx, &apitype.CreateJobParams{SessionID: sid, Agent: "worker", Items: items(n), Concurrency: 4})
	if err != nil {
		t.Fatal(err)
	}
	j = waitJob(t, b.rt, sid, j.JobID, 1)
	wantCounts(t, j, runtype.JobFailed, n-2, 2, 0)
	mu.Lock()
	broken = false
	mu.Unlock()
	res, err := b.rt.RetryJobItems(ctx, &apitype.RetryJobItemsParams{JobID: j.JobID})
	if err != nil || len(res.Retried) != 2 {
		t.Fatalf("RetryJobItems = %+v, %v; want the 2 failed items", res, err)
	}
	waitJob(t, a.rt, sid, j.JobID, 2)
	for name, rt := range map[string]*agentrt.Runtime{"first": a.rt, "second": b.rt} {
		got, err := rt.GetJob(ctx, &apitype.JobParams{JobID: j.JobID})
		if err != nil {
			t.Fatal(err)
		}
		t.Run(name, func(t *testing.T) { wantCounts(t, got, runtype.JobCompleted, n, 0, 0) })
	}
	for i := range n {
		name := itemName(i)
		want := 1
		if i == 3 || i == 11 {
			want = 2
		}
		if got := w1.count(name) + w2.count(name); got != want {
			t.Errorf("item %d: the models were asked %d times, want %d", i, got, want)
		}
	}
}

// TestJobFromModel: a parent's model hands a batch of items to a job
// tool (a declaration with AsJob); its run parks while the job works,
// resumes once the job ended, and its model sees the job's summary. The
// delegation tree shows the request, the job and its items.
func TestJobFromModel(t *testing.T) {
	t.Parallel()
	const n = 5
	var batch []string
	for i := range n {
		batch = append(batch, itemName(i))
	}
	parent := &mind{fn: func(req *model.Request, _ int) *model.Response {
		res := toolResults(req)
		if len(res) == 0 {
			in, _ := json.Marshal(map[string]any{"items": batch, "instruction": "check"})
			return &model.Response{ToolCalls: []runtype.MessageToolCall{{ID: "j1", Name: "check_all", Arguments: string(in)}}}
		}
		return &model.Response{Text: res["j1"]}
	}}
	w := newWorker(func(in string, _ int) error {
		if strings.HasSuffix(in, itemName(3)) {
			return badItem
		}
		return nil
	})
	tr := startTree(t, agentrt.Config{ModelRetries: -1, Agents: map[string]*agentrt.Agent{
		"triage": {Provider: parent, Subagents: []agentrt.SubagentUse{{Agent: "worker", AsTool: "check_all", AsJob: true, MaxParallel: 2}}},
		"worker": {Provider: w},
	}})
	ctx := context.Background()
	res, err := tr.rt.SubmitTurn(ctx, &apitype.SubmitTurnParams{Agent: "triage", Input: "check these"})
	if err != nil {
		t.Fatal(err)
	}
	turn := waitEnd(t, tr.rt, res.SessionID, res.TurnID)
	if turn.Status != runtype.StatusCompleted {
		t.Fatalf("parent turn %s (%s) %+v, want completed", turn.Status, turn.StatusReason, turn.Failure)
	}
	var sum struct {
		JobID     string `json:"jobId"`
		Status    string `json:"status"`
		Total     int    `json:"total"`
		Completed int    `json:"completed"`
		Failed    int    `json:"failed"`
		Items     []struct {
			Index  int    `json:"index"`
			Status string `json:"status"`
			Result string `json:"result"`
			Error  string `json:"error"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(turn.Result), &sum); err != nil {
		t.Fatalf("the parent's model saw %q, not a job summary: %v", turn.Result, err)
	}
	if sum.JobID == "" || sum.Status != "failed" || sum.Total != n || sum.Completed != n-1 || sum.Failed != 1 || len(sum.Items) != n {
		t.Errorf("summary %+v, want the job failed with %d of %d items completed, each listed", sum, n-1, n)
	}
	for i, it := range sum.Items {
		switch {
		case it.Index != i:
			t.Errorf("summary item %d has index %d", i, it.Index)
		case i == 3 && (it.Status != "failed" || !strings.Contains(it.Error, "cannot be done")):
			t.Errorf("summary item 3 = %+v, want failed with the provider's error", it)
		case i != 3 && (it.Status != "completed" || it.Result != "done check\n\n"+itemName(i)):
			t.Errorf("summary item %d = %+v, want completed with its answer", i, it)
		}
	}
	if parent.count() != 2 {
		t.Errorf("the parent's model was asked %d times, want twice (the call, then its summary)", parent.count())
	}
	if peak := w.maxInflight(); peak > 2 {
		t.Errorf("%d items ran at once, want at most max_parallel 2", peak)
	}
	j, err := tr.rt.GetJob(ctx, &apitype.JobParams{JobID: sum.JobID})
	if err != nil || j.ParentTaskID != res.TaskID || j.Concurrency != 2 {
		t.Errorf("GetJob = %+v, %v; want a job of the parent's task with concurrency 2", j, err)
	}
	var waiting, resumed, delegated bool
	for _, e := range tr.tb.sessionEvents(t, runtype.Owner{}, res.SessionID) {
		switch {
		case e.TaskID != res.TaskID:
		case e.Type == event.TaskWaiting:
			waiting = waiting || e.StatusReason == runtype.ReasonWaitingChildren
		case e.Type == event.TaskResumed:
			resumed = resumed || e.StatusReason == runtype.ReasonChildrenSettled
		case e.Type == event.TaskDelegated:
			delegated = delegated || e.Payload.(*event.DependencyPayload).JobID == sum.JobID
		}
	}
	if !waiting || !resumed || !delegated {
		t.Errorf("parent: delegated %v, waiting for children %v, resumed %v; want all", delegated, waiting, resumed)
	}
	tree, err := tr.rt.DelegationTree(ctx, runtype.Owner{}, res.TaskID)
	if err != nil {
		t.Fatal(err)
	}
	if tree.Kind != apitype.NodeRequest || len(tree.Children) != 1 {
		t.Fatalf("tree %+v, want the request with one child", tree)
	}
	jn := tree.Children[0]
	if jn.Kind != apitype.NodeJob || jn.JobID != sum.JobID || jn.Depth != 1 || len(jn.Children) != n {
		t.Fatalf("job node %+v, want the job at depth 1 with %d items", jn, n)
	}
	for _, c := range jn.Children {
		if c.Kind != apitype.NodeItem || c.Agent != "worker" || c.Depth != 2 {
			t.Errorf("item node %+v, want a worker item at depth 2", c)
		}
	}
	// The parent's resumed call found its job again and started none.
	if got := w.inputs(); len(got) != n {
		t.Errorf("the items' model saw %v, want each of the %d items once", got, n)
	}
	for in, k := range w.inputs() {
		if k != 1 {
			t.Errorf("the items' model was asked %q %d times, want once", in, k)
		}
	}
}

// TestJobToolConfig: a job tool cannot work on its parent's workspace.
func TestJobToolConfig(t *testing.T) {
	t.Parallel()
	_, err := agentrt.New(agentrt.Config{DataDir: t.TempDir(), Agents: map[string]*agentrt.Agent{
		"triage": {Provider: echo(""), Subagents: []agentrt.SubagentUse{{Agent: "worker", AsJob: true, Workspace: runtype.WorkspaceParentReadOnly}}},
		"worker": {Provider: echo("")},
	}})
	if err == nil || !strings.Contains(err.Error(), "parent_readonly cannot be combined with AsJob") {
		t.Errorf("New = %v, want the combination refused", err)
	}
}
