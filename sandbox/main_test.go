package sandbox

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain runs Main first: the sandbox re-executes the test binary as
// its helper. A sandboxed command may run it as a probe, too.
func TestMain(m *testing.M) {
	runProbe()
	Main()
	goleak.VerifyTestMain(m)
}
