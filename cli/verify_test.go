package cli_test

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/cli"
)

// TestVerify checks the evidence chain of an approved turn's session,
// then alters a receipt in the SQLite file and checks that verify names
// it.
func TestVerify(t *testing.T) {
	t.Parallel()
	b := setupGoverned(t)
	id, parked := b.park(t)
	runOK(t, "", "approvals", "approve", id, "--config", b.config)
	session := regexp.MustCompile(`session (ses_[0-9A-Z]{26})`).FindStringSubmatch(parked.stdout)[1]

	r := runOK(t, "", "verify", "--config", b.config, "--session", session)
	matchLines(t, r.stdout, []string{"session " + session + ": 7 receipts, chain ok (head {ANY})"})
	var res apitype.VerifyResult
	if err := json.Unmarshal([]byte(runOK(t, "", "verify", "--config", b.config, "--session", session, "--json").stdout), &res); err != nil {
		t.Fatal(err)
	}
	if !res.OK || res.Receipts != 7 || len(res.Head) != 64 {
		t.Errorf("verify --json = %+v, want 7 receipts, ok, with a head hash", res)
	}

	// Alter the event receipt 3 seals (the ask for open_ticket), leaving
	// the receipt's hash as it was: the receipt's body is the event's.
	db, err := sql.Open("sqlite", filepath.Join(b.dir, ".agentrt", "agentrt.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var cursor int64
	var body []byte
	if err := db.QueryRow(`SELECT e.cursor, e.body FROM receipts r JOIN events e ON e.cursor = r.cursor
		WHERE r.session_id = ? AND r.seq = 3`, session).Scan(&cursor, &body); err != nil {
		t.Fatal(err)
	}
	eventID := regexp.MustCompile(`"eventId":"(evt_[0-9A-Z]+)"`).FindSubmatch(body)
	tampered := bytes.Replace(body, []byte(`"ask"`), []byte(`"allow"`), 1)
	if bytes.Equal(tampered, body) || eventID == nil {
		t.Fatalf("receipt 3 does not seal the ask: %q", body)
	}
	if _, err := db.Exec(`UPDATE events SET body = ? WHERE cursor = ?`, tampered, cursor); err != nil {
		t.Fatal(err)
	}

	r = run(t, "", "verify", "--config", b.config, "--session", session)
	want := "session " + session + ": receipt 3 (event " + string(eventID[1]) + "): hash does not match its body\n"
	if r.code != cli.ExitFailed || r.stdout != want {
		t.Errorf("after tampering: exit %d, stdout %q; want exit 1, %q", r.code, r.stdout, want)
	}
}

func TestVerifyErrors(t *testing.T) {
	t.Parallel()
	b := setupGoverned(t)
	b.makeStore(t)
	r := run(t, "", "verify", "--config", b.config)
	if r.code != cli.ExitUsage || !strings.Contains(r.stderr, "--session is required") {
		t.Errorf("no --session: exit %d, stderr %q", r.code, r.stderr)
	}
	r = run(t, "", "verify", "--config", b.config, "--session", "ses-nope")
	if r.code != cli.ExitFailed || r.stderr != "agentrt: no session ses-nope\n" {
		t.Errorf("unknown session: exit %d, stderr %q", r.code, r.stderr)
	}
}
