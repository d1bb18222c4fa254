package sandbox

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain runs Main first: the sandbox re-executes the test binary as
// its helper.
func TestMain(m *testing.M) {
	Main()
	goleak.VerifyTestMain(m)
}
