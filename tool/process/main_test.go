package process_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/agentrt/agentrt/sandbox"
)

// daemonEnv is set in the test process's environment, as a daemon would
// have it. Only allowedVar is named in Options.EnvAllow.
var daemonEnv = map[string]string{
	secretVar:  "daemon-secret-must-not-leak",
	allowedVar: "allowed-value",
}

const (
	secretVar  = "PROCESS_TEST_DAEMON_SECRET"
	allowedVar = "PROCESS_TEST_ALLOWED"
)

func TestMain(m *testing.M) {
	// The sandbox re-executes the test binary as its helper; Main runs
	// the helper and exits when this process is one.
	sandbox.Main()
	// t.Setenv cannot be used in parallel tests; the variables are set
	// once, before any test runs.
	for k, v := range daemonEnv {
		if err := os.Setenv(k, v); err != nil {
			panic(err)
		}
	}
	goleak.VerifyTestMain(m)
}
