package cli_test

import (
	"encoding/json"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/cli"
	"github.com/agentrt/agentrt/internal/testenv"
)

// TestMigrateStore copies the example's data directory, after a run,
// into a new PostgreSQL database: the command prints what it copied and
// the URL without its password, and a second copy into the same
// database is refused without naming the password either.
func TestMigrateStore(t *testing.T) {
	t.Parallel()
	to := testenv.Postgres(t)
	u, err := url.Parse(to)
	if err != nil {
		t.Fatal(err)
	}
	// The test server trusts local connections: a password in the URL
	// is not checked, but must not be shown.
	const password = "s3cret-pw"
	u.User = url.UserPassword(u.User.Username(), password)
	to = u.String()
	b := setup(t)
	runOK(t, "", "run", "--config", b.config, "--agent", "support", question)
	dir := filepath.Join(b.dir, ".agentrt")

	var outputs []string
	r := runOK(t, "", "migrate-store", "--from", dir, "--to", to)
	outputs = append(outputs, r.stdout, r.stderr)
	t.Logf("agentrt migrate-store:\n%s", r.stdout)
	for _, want := range []string{"\nevents ", "\nreceipts ", "\nblobs ", "copied ", "to " + u.Redacted() + "\n", ":xxxxx@"} {
		if !strings.Contains("\n"+r.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "\nreceipts               0\n") || strings.Contains(r.stdout, "\nevents                 0\n") {
		t.Errorf("no events or receipts copied:\n%s", r.stdout)
	}

	// agentrt verify passes on the copy: the receipts chain came intact.
	r = runOK(t, "", "requests", "list", "--config", b.config, "--store", to, "--json")
	var req struct {
		SessionID string `json:"sessionId"`
	}
	if first, _, _ := strings.Cut(r.stdout, "\n"); json.Unmarshal([]byte(first), &req) != nil || req.SessionID == "" {
		t.Fatalf("requests list on the copy:\n%s", r.stdout)
	}
	r = runOK(t, "", "verify", "--config", b.config, "--store", to, "--session", req.SessionID)
	outputs = append(outputs, r.stdout, r.stderr)
	t.Logf("agentrt verify on the copy:\n%s", r.stdout)
	if !strings.Contains(r.stdout, "receipts, chain ok") {
		t.Errorf("agentrt verify on the copy:\n%s", r.stdout)
	}

	r = run(t, "", "migrate-store", "--from", dir, "--to", to)
	outputs = append(outputs, r.stdout, r.stderr)
	if r.code != cli.ExitFailed || !strings.Contains(r.stderr, "holds data") {
		t.Errorf("second copy: exit %d, stderr %q; want 1, the target holds data", r.code, r.stderr)
	}
	// A server that does not answer: the error names the URL redacted.
	bad := *u
	bad.Host = "127.0.0.1:1"
	r = run(t, "", "migrate-store", "--from", dir, "--to", bad.String())
	outputs = append(outputs, r.stdout, r.stderr)
	if r.code != cli.ExitFailed || !strings.Contains(r.stderr, "127.0.0.1:1") {
		t.Errorf("unreachable server: exit %d, stderr %q; want 1 naming the server", r.code, r.stderr)
	}
	for _, out := range outputs {
		if strings.Contains(out, password) {
			t.Errorf("the output shows the password: %q", out)
		}
	}

	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"migrate-store", "--to", to}, "--from is required"},
		{[]string{"migrate-store", "--from", dir}, "--to is required"},
		{[]string{"migrate-store", "--server", "http://127.0.0.1:1", "--from", dir, "--to", to}, "cannot use --server"},
	} {
		r := run(t, "", tt.args...)
		if r.code != cli.ExitUsage || !strings.Contains(r.stderr, tt.want) {
			t.Errorf("agentrt %s: exit %d, stderr %q; want 2 and %q", strings.Join(tt.args[:2], " "), r.code, r.stderr, tt.want)
		}
	}
	r = run(t, "", "migrate-store", "--from", t.TempDir(), "--to", to)
	if r.code != cli.ExitFailed || !strings.Contains(r.stderr, "no agentrt store") {
		t.Errorf("no store: exit %d, stderr %q; want 1, no agentrt store", r.code, r.stderr)
	}
}
