package cli

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/agentrt/agentrt/apitype"
)

// countingBackend answers what the overview reads: a health, and a list
// of pending actions capped as the store caps it.
type countingBackend struct {
	backend // the overview calls no other method
	health  *apitype.Health
	pending int
}

func (b *countingBackend) Where() string { return "test" }

func (b *countingBackend) Health(context.Context) (*apitype.Health, error) { return b.health, nil }

func (b *countingBackend) ListActions(_ context.Context, p *apitype.ListActionsParams) ([]apitype.ActionRead, error) {
	out := make([]apitype.ActionRead, min(b.pending, p.Limit))
	for i := range out {
		out[i] = apitype.ActionRead{ActionID: fmt.Sprintf("act_%04d", len(out)-i), Status: "pending"}
	}
	return out, nil
}

func (b *countingBackend) ListRequests(context.Context, *apitype.ListRequestsParams) ([]apitype.RequestSummary, error) {
	return nil, nil
}

func (b *countingBackend) ListSessions(context.Context, *apitype.ListSessionsParams) ([]apitype.SessionSummary, error) {
	return nil, nil
}

func (b *countingBackend) LastCursor(context.Context) (int64, error) { return 0, nil }

func (b *countingBackend) ScheduleOverview(context.Context, *apitype.ScheduleOverviewParams) (*apitype.ScheduleOverview, error) {
	return &apitype.ScheduleOverview{}, nil
}

// TestOverviewPendingCount: the overview's pending count is the health's
// when the health is the listed tenant's view, exact past the 1000 a
// list returns; without one (the approvals check could not read the
// store), or with every tenant's count, it counts the list and says
// when there may be more.
func TestOverviewPendingCount(t *testing.T) {
	t.Parallel()
	checked := &apitype.Health{Status: apitype.HealthOK, TenantID: apitype.DefaultTenant,
		Approvals: apitype.ApprovalsInfo{Pending: 1500, OldestActionID: "act_0001"},
		Checks:    []apitype.HealthCheck{{Name: "approvals", Status: apitype.CheckOK}}}
	none := &apitype.Health{Status: apitype.HealthOK, TenantID: apitype.DefaultTenant, Checks: []apitype.HealthCheck{{Name: "approvals", Status: apitype.CheckOK}}}
	everyTenant := &apitype.Health{Status: apitype.HealthOK,
		Approvals: apitype.ApprovalsInfo{Pending: 1500, OldestActionID: "act_0001"},
		Checks:    []apitype.HealthCheck{{Name: "approvals", Status: apitype.CheckOK}}}
	unchecked := &apitype.Health{Status: apitype.HealthDegraded,
		Checks: []apitype.HealthCheck{{Name: "approvals", Status: apitype.CheckWarn, Reason: "reading the pending approvals: boom"}}}
	for _, tc := range []struct {
		name     string
		health   *apitype.Health
		listed   int
		pending  int
		wantMore bool
	}{
		{"counted by the health", checked, 1500, 1500, false},
		{"every tenant's health", everyTenant, 3, 3, false},
		{"every tenant's health, many", everyTenant, 1500, maxListLimit, true},
		{"none pending", none, 0, 0, false},
		{"not checked", unchecked, 1500, maxListLimit, true},
		{"no check (older server)", &apitype.Health{Status: apitype.HealthOK}, 3, 3, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ov, err := readOverview(t.Context(), &countingBackend{health: tc.health, pending: tc.listed}, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if ov.Approvals.Pending != tc.pending || ov.Approvals.More != tc.wantMore {
				t.Errorf("approvals pending %d, more %v; want %d, %v", ov.Approvals.Pending, ov.Approvals.More, tc.pending, tc.wantMore)
			}
		})
	}
}
