package process_test

import (
	"bufio"
	"os"
	"runtime/metrics"
	"strconv"
	"strings"
	"testing"
	"time"
)

// procStatus returns a memory field of /proc/self/status (VmRSS, VmHWM)
// in bytes.
func procStatus(t *testing.T, field string) int64 {
	t.Helper()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc/self/status to measure memory: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok || name != field {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		if err != nil {
			t.Fatalf("parsing %s %q: %v", field, rest, err)
		}
		return kb << 10
	}
	t.Skipf("no %s in /proc/self/status", field)
	return 0
}

// sampleHeap samples the heap's object bytes until the returned function
// is called, which returns the largest sample.
func sampleHeap() (stop func() uint64) {
	const name = "/memory/classes/heap/objects:bytes"
	done := make(chan struct{})
	peak := make(chan uint64)
	go func() {
		s := []metrics.Sample{{Name: name}}
		var most uint64
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			metrics.Read(s)
			most = max(most, s[0].Value.Uint64())
			select {
			case <-done:
				peak <- most
				return
			case <-tick.C:
			}
		}
	}()
	return func() uint64 {
		close(done)
		return <-peak
	}
}
