package schedule_test

import (
	"fmt"
	"time"

	"github.com/agentrt/agentrt/schedule"
)

// A nightly schedule in New York on the night clocks spring forward: 02:30
// does not exist, so it fires when the gap ends, at 03:00 EDT.
func ExampleSchedule_Next() {
	s, err := schedule.Parse(schedule.Spec{Kind: schedule.KindCron, Cron: "30 2 * * *", TimeZone: "America/New_York"})
	if err != nil {
		panic(err)
	}
	t := time.Date(2026, 3, 7, 12, 0, 0, 0, time.UTC)
	for range 3 {
		t = s.Next(t)
		fmt.Println(t.Format(time.RFC3339), t.In(s.Location()).Format("15:04 MST"))
	}
	// Output:
	// 2026-03-08T07:00:00Z 03:00 EDT
	// 2026-03-09T06:30:00Z 02:30 EDT
	// 2026-03-10T06:30:00Z 02:30 EDT
}

// An hourly schedule back after three hours down, with a 90-minute catch-up
// window: the fires inside the window run, the older one is recorded as
// missed.
func ExampleSchedule_Due() {
	s, err := schedule.Parse(schedule.Spec{Kind: schedule.KindCron, Cron: "@hourly"})
	if err != nil {
		panic(err)
	}
	next := time.Date(2026, 5, 1, 7, 0, 0, 0, time.UTC) // stored before the outage
	now := time.Date(2026, 5, 1, 9, 20, 0, 0, time.UTC)
	p := s.Due(next, now, 90*time.Minute, 100)
	fmt.Println("missed:", p.Missed)
	fmt.Println("run:", p.Run)
	fmt.Println("next:", p.Next)
	fmt.Println(schedule.Decide(schedule.OverlapBufferOne, 1, 0))
	// Output:
	// missed: [2026-05-01 07:00:00 +0000 UTC]
	// run: [2026-05-01 08:00:00 +0000 UTC 2026-05-01 09:00:00 +0000 UTC]
	// next: 2026-05-01 10:00:00 +0000 UTC
	// buffer
}
