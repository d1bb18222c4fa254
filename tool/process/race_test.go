//go:build race

package process_test

// raceEnabled: the race detector's shadow memory inflates resident
// memory, so memory tests check only the heap.
const raceEnabled = true
