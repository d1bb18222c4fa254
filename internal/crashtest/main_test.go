package crashtest_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if the harness leaves goroutines behind: its
// submitters, process waiters and HTTP connections must all be gone.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
