package agentrt

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

// TestJobSummaryBounded: a job tool's answer shows the first items
// only, each one's result or error cut short, whatever the job's size.
func TestJobSummaryBounded(t *testing.T) {
	t.Parallel()
	rt := startIdle(t)
	const n = jobSummaryItems + 30
	now := time.Now().UTC()
	owner := runtype.Owner{TenantID: "default"}
	job := &runtype.Job{ID: "job_sum", Owner: owner, SessionID: "s", ThreadID: "thr_s", TaskID: "task_s", Agent: "a",
		Concurrency: 1, MaxAttempts: 1, Status: runtype.JobFailed, Items: n, Completed: n - 1, Failed: 1, CreatedAt: now, UpdatedAt: now, EndedAt: now}
	b := &store.Batch{Jobs: []*runtype.Job{job}}
	long := strings.Repeat("é", 4*jobSummaryPreview)
	for i := range n {
		it := &runtype.JobItem{ID: "item_" + string(rune('a'+i/26)) + string(rune('a'+i%26)), JobID: job.ID, TenantID: owner.TenantID, Index: i,
			Input: `"x"`, Status: runtype.ItemCompleted, Attempts: 1, Result: long, UpdatedAt: now}
		if i == 1 {
			it.Status, it.Result, it.LastError = runtype.ItemFailed, "", &runtype.Failure{Kind: runtype.FailureModel, Message: long}
		}
		b.JobItems = append(b.JobItems, it)
	}
	if err := rt.writer.Write(t.Context(), b); err != nil {
		t.Fatal(err)
	}
	res, err := rt.jobResult(t.Context(), job)
	if err != nil {
		t.Fatal(err)
	}
	var s jobSummary
	if err := json.Unmarshal([]byte(res.Content), &s); err != nil {
		t.Fatal(err)
	}
	if res.IsError || res.Waiting || s.Total != n || len(s.Items) != jobSummaryItems || s.NotShown != n-jobSummaryItems {
		t.Errorf("summary of %d items: error %v, waiting %v, total %d, %d shown, %d not; want the first %d shown",
			n, res.IsError, res.Waiting, s.Total, len(s.Items), s.NotShown, jobSummaryItems)
	}
	if got := s.Items[0].Result; len(got) > jobSummaryPreview+len("…") || !strings.HasSuffix(got, "…") {
		t.Errorf("item 0's result is %d bytes, want at most %d, marked cut", len(got), jobSummaryPreview)
	}
	if got := s.Items[1]; got.Status != runtype.ItemFailed || len(got.Error) > jobSummaryPreview+len("…") || got.Result != "" {
		t.Errorf("item 1 = %+v, want failed with its error cut short", got)
	}
	if max := jobSummaryItems * (jobSummaryPreview + 100); len(res.Content) > max {
		t.Errorf("the summary is %d bytes, want at most %d", len(res.Content), max)
	}
}
