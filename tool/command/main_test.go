package command_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/agentrt/agentrt/sandbox"
)

// daemonSecrets are set in the test process's environment, as a daemon
// would have them; no command may see them.
var daemonSecrets = map[string]string{
	"OPENAI_API_KEY":           "sk-test-must-not-leak",
	"AGENTRT_TEST_DAEMON_ONLY": "daemon-only",
}

func TestMain(m *testing.M) {
	// t.Setenv cannot be used in parallel tests; the variables are set
	// once, before any test runs.
	for k, v := range daemonSecrets {
		if err := os.Setenv(k, v); err != nil {
			panic(err)
		}
	}
	sandbox.Main() // sandboxed commands run through this binary
	goleak.VerifyTestMain(m)
}
