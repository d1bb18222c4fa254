package agentrt

import (
	"context"
	"fmt"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

// ScheduleOverview reads what an operator looks at first about the
// tenant's schedules: the active ones that fire soonest and those whose
// last fires failed.
func (rt *Runtime) ScheduleOverview(ctx context.Context, p *apitype.ScheduleOverviewParams) (*apitype.ScheduleOverview, error) {
	ov := &apitype.ScheduleOverview{NextFires: []apitype.ScheduleRead{}, Failing: []apitype.ScheduleRead{}}
	for _, l := range []struct {
		params store.ScheduleListParams
		into   *[]apitype.ScheduleRead
	}{
		{store.ScheduleListParams{TenantID: tenantOf(p.Owner), Soonest: true, Limit: apitype.MaxScheduleOverview}, &ov.NextFires},
		{store.ScheduleListParams{TenantID: tenantOf(p.Owner), Failing: true, Limit: apitype.MaxScheduleOverview}, &ov.Failing},
	} {
		schs, err := rt.store.ScheduleList(ctx, &l.params)
		if err != nil {
			return nil, fmt.Errorf("listing schedules for the overview: %w", err)
		}
		for _, sch := range schs {
			// A schedule deleted since is not failing any more.
			if sch.Status == runtype.ScheduleDeleted {
				continue
			}
			*l.into = append(*l.into, *rt.scheduleRead(sch))
		}
	}
	return ov, nil
}
