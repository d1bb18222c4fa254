// Package schedule owns when a schedule fires and what happens to a fire:
// the fire times of a cron, interval or once schedule, which due fires run
// after downtime and which are recorded as missed, what an overlap policy
// does with a fire while an earlier one still runs, when consecutive
// failures pause a schedule, and the backoff between retries.
//
// It is pure logic over time values: no store, no clock, no goroutines. The
// runtime keeps a schedule's next fire time in its store, asks [Schedule.Due]
// what to do when the clock passes it, and asks [Decide] for each fire it
// wants to start. A [Schedule] is immutable and safe for concurrent use.
//
// # Kinds
//
// A cron schedule fires at the times its 5-field expression (minute, hour,
// day of month, month, day of week; descriptors such as @daily and @hourly
// too) names in its time zone, an IANA name, UTC by default. An interval
// schedule fires every Every after its Start (Start + k*Every, k >= 1; the
// Unix epoch when Start is zero, so "every 1h" fires on the hour). A once
// schedule fires at At. No schedule fires before its Start.
//
// # Daylight saving time
//
// Cron schedules follow Vixie cron. A schedule that names fixed hours (its
// hour field is not every hour) fires by the wall clock:
//
//   - In the spring-forward gap, a local time that does not exist fires once,
//     at the first instant after the gap: "30 2 * * *" in America/New_York
//     fires on 2026-03-08 at 03:00 EDT (07:00Z); several times inside the gap
//     fire once together.
//   - In the fall-back repeated hour, a wall-clock time fires once, at its
//     first occurrence: "30 1 * * *" in America/New_York fires on 2026-11-01
//     at 01:30 EDT (05:30Z) only, not again at 01:30 EST (06:30Z).
//
// A schedule whose hour field is every hour ("*/15 * * * *", "@hourly")
// fires by elapsed real time through both transitions: every 15 minutes of
// real time, no gap and no duplicate.
//
// robfig/cron v3.0.1, which parses the expressions, does neither on its own:
// it skips a time in the gap (the fire moves to the next day) and fires a
// time in the repeated hour twice. This package computes fixed-hour
// schedules on the wall clock and maps each wall time to its instant itself.
//
// # Catch-up
//
// [Schedule.Due] splits the fires from the stored next fire time up to now:
// a fire at most the catch-up window old runs, an older one is missed. It
// lists at most max fires, the newest; older ones are only counted, so a
// year of downtime costs no more than a minute of it.
//
// # Overlap
//
// [Decide] applies Temporal's overlap policies to a fire that comes while
// earlier fires run or wait: skip, buffer_one, buffer_all, cancel_other and
// allow_all. See docs/schedules.md.
package schedule
