package cli

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves goroutines behind: every
// `agentrt run` starts a runtime, command tools and a signal watcher, and
// all of them must be gone when Main returns.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
