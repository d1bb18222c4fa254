// Package crashtest holds the crash harness: TestCrashHarness builds the
// agentrt binary, serves a workspace with `agentrt serve`, submits many
// sessions over HTTP and kills the daemon with SIGKILL at random moments,
// restarting it each time on the same data directory. Once every session
// has settled it checks the durability rules of DESIGN.md §5 against what
// the store and the tools recorded: no model response consumed twice, no
// idempotency key applied twice, no non-idempotent call run twice or
// silently, gap-free event sequences, sound receipt chains, events valid
// against the standard's schema, and lost work taken up again within the
// lease's time. TestCrashHarnessDelegation does the same with a
// delegation workload: parents delegating to two children a turn, killed
// in the spawn, the children's steps and the join, then checked for
// children lost or duplicated, recorded steps redone and parents resumed
// more than once (AGENTRT_CRASH_DELEGATION_SESSIONS and _KILLS tune it).
// TestCrashHarnessSchedules declares schedules firing every second in
// agentrt.yaml, kills the daemon (half the kills just after a fire
// time), leaves it dead a moment so that fires come due meanwhile, and
// checks that every due fire ran once: no fire time missing or recorded
// twice, one task per fire, each fire due by the end completed with its
// turn completed once (AGENTRT_CRASH_SCHEDULES and
// AGENTRT_CRASH_SCHEDULE_KILLS tune it). TestCrashHarnessNodes runs
// three daemons on one PostgreSQL database (testenv.Postgres), kills one
// of them again and again while the others run, and checks the same
// rules plus that the live nodes take over each lost task within the
// lease's TTL + 1 s of the kill (AGENTRT_CRASH_NODES_SESSIONS and
// AGENTRT_CRASH_NODES_KILLS tune it; it runs only with AGENTRT_CRASH_NODES=1
// for now: see its comment).
//
// The harness is slow and kills processes, so it runs only when asked:
//
//	AGENTRT_CRASH_HARNESS=1 go test -count=1 -run TestCrashHarness -v ./internal/crashtest
//
// (or pass -crash). -crash.sessions, -crash.kills and -crash.seed, or
// AGENTRT_CRASH_SESSIONS, AGENTRT_CRASH_KILLS and AGENTRT_CRASH_SEED, tune
// it; a failure names its seed, and running again with that seed replays
// the same kill delays and submission times (the moments the kills land
// in the work still vary with the machine's speed). The workspace (data
// directory, daemon logs, tool logs) is kept when the harness fails, or
// always in AGENTRT_CRASH_DIR when that is set.
//
// The package has no code outside its tests.
package crashtest
