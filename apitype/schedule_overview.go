package apitype

import "github.com/agentrt/agentrt/runtype"

// MaxScheduleOverview is how many schedules each list of a
// ScheduleOverview holds at most.
const MaxScheduleOverview = 5

// ScheduleOverviewParams asks for the overview of the caller's tenant's
// schedules.
type ScheduleOverviewParams struct {
	runtype.Owner
}

// ScheduleOverview is what an operator looks at first about schedules
// (GET /v1/schedules/overview, agentrt overview).
type ScheduleOverview struct {
	// NextFires are the active schedules that fire soonest, soonest
	// first, at most MaxScheduleOverview.
	NextFires []ScheduleRead `json:"nextFires"`
	// Failing are schedules whose last fires failed (consecutiveFailures
	// above zero; those paused for it among them), oldest first, at most
	// MaxScheduleOverview.
	Failing []ScheduleRead `json:"failing"`
}
