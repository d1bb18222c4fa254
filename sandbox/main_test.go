package sandbox

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain runs Main first: the sandbox re-executes the test binary as
// its helper. TestCommandDiesWithDaemon re-executes it as testDaemon.
func TestMain(m *testing.M) {
	Main()
	if enf := os.Getenv(envTestDaemon); enf != "" {
		testDaemon(enf)
		return
	}
	goleak.VerifyTestMain(m)
}
