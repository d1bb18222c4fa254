package cli_test

import (
	"database/sql"
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/cli"
)

// TestInspectContext: inspect context prints the exact context of hop 1
// and hop 2 of the example's request, verified, the same from the data
// directory and from a daemon; after a message is changed in the store it
// exits 1 saying why.
func TestInspectContext(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := runOK(t, "", "run", "--config", b.config, question)
	turn := regexp.MustCompile(`request (turn_[0-9A-Z]{26})`).FindStringSubmatch(r.stdout)[1]

	hop1 := runOK(t, "", "inspect", "context", "--request", turn, "--hop", "1", "--config", b.config)
	matchLines(t, hop1.stdout, []string{
		"request " + turn + "  hop 1 of 1, 2, 3, 4  attempt 1",
		"  session ses_{ID}  thread thr_{ID}  model replay/support-triage-v1  at {ANY} UTC",
		"  1 messages (seqs 1), about {ANY} tokens",
		"  fingerprint sha256:{ANY}",
		"  ✔ verified: the log holds exactly what the model was sent",
		"",
		"system prompt (sha256:{ANY})",
		"  You triage customer support requests. Look the order up, check the",
		"  support policy in policy.md, open a ticket when the policy says so,",
		"  and finish with complete_task, giving the customer-facing answer.",
		"",
		"tools (sha256:{ANY})",
		"  lookup_order — {ANY}",
		"  open_ticket — {ANY}",
		"  read_file — {ANY}",
		"  complete_task — {ANY}",
		"",
		"messages",
		"#1 user",
		"    " + question,
	})
	hop2 := runOK(t, "", "inspect", "context", "--request", turn, "--hop", "2", "--config", b.config)
	tail := hop2.stdout[strings.Index(hop2.stdout, "messages\n"):]
	matchLines(t, tail, []string{
		"messages",
		"#1 user",
		"    " + question,
		"#2 assistant",
		"    Let me look up order 1042.",
		`    → lookup_order call_{ID} {"order_id":"1042"}`,
		"#3 tool (call_{ID})",
		`    {"order_id":"1042",{ANY}`,
	})
	if !strings.Contains(hop2.stdout, "3 messages (seqs 1–3)") {
		t.Errorf("hop 2 does not say it sent seqs 1–3:\n%s", hop2.stdout)
	}

	d := b.serve(t)
	remote := runOK(t, "", "inspect", "context", "--request", turn, "--hop", "2", "--server", d.url, "--token", d.token)
	if diff := cmp.Diff(hop2.stdout, remote.stdout); diff != "" {
		t.Errorf("--server differs from the data directory (-local +server):\n%s", diff)
	}
	last := runOK(t, "", "inspect", "context", "--request", turn, "--server", d.url, "--token", d.token, "--json")
	var v apitype.ContextView
	if err := json.Unmarshal([]byte(last.stdout), &v); err != nil {
		t.Fatal(err)
	}
	if v.Hop != 4 || !v.Verified || len(v.Messages) != v.Fingerprint.MessageCount || len(v.Messages) != 7 {
		t.Errorf("--json of the last hop: hop %d, verified %v, %d messages (fingerprint %d), want hop 4, verified, 7", v.Hop, v.Verified, len(v.Messages), v.Fingerprint.MessageCount)
	}

	for _, tt := range []struct {
		args    []string
		code    int
		wantErr string
	}{
		{[]string{"--request", "turn_01M8EQ00000000000000000000", "--config", b.config}, cli.ExitFailed, "no request turn_01M8EQ00000000000000000000"},
		{[]string{"--request", turn, "--hop", "9", "--config", b.config}, cli.ExitUsage, "hops 1, 2, 3, 4; 9 is not one of them"},
		{[]string{"--request", turn, "--hop", "9", "--server", d.url, "--token", d.token}, cli.ExitUsage, "9 is not one of them"},
		{[]string{"--request", turn, "--hop", "-1", "--config", b.config}, cli.ExitUsage, "--hop must be a hop number"},
		{[]string{"--config", b.config}, cli.ExitUsage, "--request is required"},
	} {
		r := run(t, "", append([]string{"inspect", "context"}, tt.args...)...)
		if r.code != tt.code || !strings.Contains(r.stderr, tt.wantErr) {
			t.Errorf("inspect context %v: exit %d, stderr %q; want exit %d with %q", tt.args, r.code, r.stderr, tt.code, tt.wantErr)
		}
	}

	db, err := sql.Open("sqlite", filepath.Join(b.dir, ".agentrt", "agentrt.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`UPDATE messages SET content = 'Where is order 9999?' WHERE seq = 1`); err != nil {
		t.Fatal(err)
	}
	bad := run(t, "", "inspect", "context", "--request", turn, "--hop", "2", "--config", b.config)
	if bad.code != cli.ExitFailed || !strings.Contains(bad.stdout, "✘ NOT verified") ||
		!strings.Contains(bad.stderr, "the context of request "+turn+" at hop 2 does not verify: the messages in the log hash to") {
		t.Errorf("tampered: exit %d\nstdout:\n%s\nstderr:\n%s", bad.code, bad.stdout, bad.stderr)
	}
}
