//go:build race

package bench

// raceEnabled: the race detector drops sync.Pool items at random and
// instruments allocations, so allocation counts under it are not the
// program's (TestStepAllocs skips; .ci/run runs it without -race).
const raceEnabled = true
