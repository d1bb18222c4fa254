package cli_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/cli"
	"github.com/agentrt/agentrt/internal/dbtest"
)

// TestRunRefusesADamagedStore: agentrt run on a data directory whose
// database has a damaged page exits 1 with a message that names the file
// and says what to do, and runs nothing.
func TestRunRefusesADamagedStore(t *testing.T) {
	t.Parallel()
	b := setup(t)
	runOK(t, "", "run", "--config", b.config, "Where is order 1043?")
	db := filepath.Join(b.dir, ".agentrt", "agentrt.db")
	dbtest.DamageTable(t, db, "messages")

	r := run(t, "", "run", "--config", b.config, "Where is order 1043?")
	if r.code != cli.ExitFailed {
		t.Fatalf("agentrt run on a damaged store: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, cli.ExitFailed, r.stdout, r.stderr)
	}
	for _, want := range []string{"refusing the damaged store " + db, "restore it from a backup", "corrupt"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr %q does not mention %q", r.stderr, want)
		}
	}
	if r.stdout != "" {
		t.Errorf("stdout = %q, want nothing: no turn ran", r.stdout)
	}
}
