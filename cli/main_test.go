package cli

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/agentrt/agentrt/sandbox"
)

// TestMain fails the package if a test leaves goroutines behind: every
// `agentrt run` starts a runtime, command tools and a signal watcher, and
// all of them must be gone when Main returns.
func TestMain(m *testing.M) {
	sandbox.Main() // a sandboxed process this binary starts runs through it
	goleak.VerifyTestMain(m)
}
