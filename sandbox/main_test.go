package sandbox

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain runs Main first: the sandbox re-executes the test binary as
// its helper. A sandboxed command may run it as a probe, too, and
// TestCommandDiesWithDaemon re-executes it as testDaemon.
func TestMain(m *testing.M) {
	runProbe()
	Main()
	if enf := os.Getenv(envTestDaemon); enf != "" {
		testDaemon(enf)
		return
	}
	goleak.VerifyTestMain(m)
}
