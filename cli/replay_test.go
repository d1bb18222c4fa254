package cli_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/cli"
	"github.com/agentrt/agentrt/replaycase"
)

// recordGoverned runs the governed turn, approves its ask and returns the
// request's id.
func recordGoverned(t *testing.T, b *testBundle) string {
	t.Helper()
	id, parked := b.park(t)
	runOK(t, "", "approvals", "approve", id, "--config", b.config)
	m := regexp.MustCompile(`request (turn_[0-9A-Z]{26})`).FindStringSubmatch(parked.stdout)
	if m == nil {
		t.Fatalf("run printed no request id:\n%s", parked.stdout)
	}
	return m[1]
}

// TestReplayCommand: replaying a stored request under the same policy
// prints a table without changes and exits 0; after one rule changes
// from ask to allow, the stored request, the case file it wrote and a
// bundle holding that case all show exactly that step and exit 1.
func TestReplayCommand(t *testing.T) {
	t.Parallel()
	b := setupGoverned(t)
	turn := recordGoverned(t, b)
	caseFile := filepath.Join(b.dir, "case.json")

	r := runOK(t, "", "replay", "--config", b.config, "--request", turn, "--write-case", caseFile)
	matchLines(t, r.stdout, []string{
		"replay of request " + turn + " (session ses_{ID}, agent support)",
		"   #  TOOL           DECISION (recorded → replayed)            RESULT (recorded → replayed)  CHANGED",
		"   1  lookup_order   allow (allow-rest)                        completed {ANY}",
		"   2  open_ticket    ask (review-tickets,allow-rest): approve  completed {ANY}",
		"      note: tool_permission answered with the recorded decision: approve",
		"   3  complete_task  allow (allow-rest)                        completed {ANY}",
		"3 steps compared; 2/2 model outputs used; no differences",
	})
	if r.stderr != "" {
		t.Errorf("stderr: %s", r.stderr)
	}

	b.write(t, "rules.yaml", strings.Replace(ticketRules, "decision: ask", "decision: allow", 1))
	r = run(t, "", "replay", "--config", b.config, "--request", turn)
	if r.code != cli.ExitFailed {
		t.Fatalf("replay after a rule change: exit %d, want 1\n%s%s", r.code, r.stdout, r.stderr)
	}
	matchLines(t, r.stdout, []string{
		"replay of request " + turn + " (session ses_{ID}, agent support)",
		"{ANY}DECISION (recorded → replayed){ANY}",
		"   1  lookup_order{ANY}",
		"*  2  open_ticket    ask (review-tickets,allow-rest): approve → allow (review-tickets,allow-rest)  completed {ANY}  decision",
		"   3  complete_task{ANY}",
		"3 steps compared; 2/2 model outputs used; 1 step changed",
	})
	if strings.Contains(r.stdout, "\x1b[") {
		t.Error("colour in output that is not a terminal")
	}

	// The case file, and a bundle holding it, replay the same; --json
	// prints the diff.
	data, err := os.ReadFile(caseFile)
	if err != nil {
		t.Fatal(err)
	}
	var rc replaycase.Case
	if err := json.Unmarshal(data, &rc); err != nil {
		t.Fatal(err)
	}
	bundle := filepath.Join(b.dir, "case.tar.gz")
	runOK(t, "", "export", "request", "--config", b.config, "--session", rc.SessionID, "--request", turn, "--artifact-contents", "-o", bundle)
	for _, src := range []string{caseFile, bundle} {
		r := run(t, "", "replay", "--config", b.config, src, "--json")
		if r.code != cli.ExitFailed {
			t.Fatalf("replay %s: exit %d, want 1\n%s%s", src, r.code, r.stdout, r.stderr)
		}
		var d replaycase.Diff
		if err := json.Unmarshal([]byte(r.stdout), &d); err != nil {
			t.Fatalf("replay %s --json: %v\n%s", src, err, r.stdout)
		}
		changed := d.ChangedSteps()
		if d.TurnID != turn || len(changed) != 1 || changed[0].Index != 2 || changed[0].Recorded.Decision != "ask" ||
			changed[0].Replayed.Decision != "allow" || len(d.Differences) != 0 {
			t.Errorf("replay %s: diff %s", src, r.stdout)
		}
	}

	r = run(t, "", "replay", "--config", b.config, caseFile, "--no-tools")
	if r.code != cli.ExitFailed || !strings.Contains(r.stdout, "3 steps compared (decisions only: --no-tools); 2/2 model outputs used; 1 step changed") ||
		!strings.Contains(r.stdout, "not compared") {
		t.Errorf("--no-tools: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestReplayUsageErrors: what cannot be replayed exits 2 with a message;
// an unknown request exits 1.
func TestReplayUsageErrors(t *testing.T) {
	t.Parallel()
	b := setupGoverned(t)
	turn := recordGoverned(t, b)
	caseFile := filepath.Join(b.dir, "case.json")
	runOK(t, "", "replay", "--config", b.config, "--request", turn, "--write-case", caseFile)
	data, err := os.ReadFile(caseFile)
	if err != nil {
		t.Fatal(err)
	}
	gone := b.write(t, "gone.json", strings.Replace(string(data), `"agent": "support"`, `"agent": "retired"`, 1))
	var rc replaycase.Case
	if err := json.Unmarshal(data, &rc); err != nil {
		t.Fatal(err)
	}
	noCase := filepath.Join(b.dir, "other.tar.gz")
	runOK(t, "", "export", "request", "--config", b.config, "--session", rc.SessionID, "--request", turn, "-o", noCase)
	_, pub := writeKeys(t, b.dir)
	crafted := filepath.Join(b.dir, "crafted.tar.gz")
	writeBundle(t, crafted, map[string][]byte{"evidence/manifest.json": []byte("{}"), "replay-case.json": data})
	notGzip := b.write(t, "broken.tar.gz", "\x1f\x8bnot really")

	tests := []struct {
		name string
		args []string
		want string
	}{
		{"nothing to replay", []string{"replay", "--config", b.config}, "give a bundle or case file to replay, or --request"},
		{"both", []string{"replay", "--config", b.config, caseFile, "--request", turn}, "give a bundle or case file, or --request, not both"},
		{"missing file", []string{"replay", "--config", b.config, filepath.Join(b.dir, "nope.json")}, "reading " + filepath.Join(b.dir, "nope.json")},
		{"not a case", []string{"replay", "--config", b.config, b.config}, "invalid replay case: decoding JSON"},
		{"bundle without a case", []string{"replay", "--config", b.config, noCase}, "bundle " + noCase + " has no replay-case.json (export it with --artifact-contents"},
		{"broken bundle", []string{"replay", "--config", b.config, notGzip}, "bundle " + notGzip + " does not verify: not a gzip stream"},
		{"unverified bundle", []string{"replay", "--config", b.config, crafted}, "bundle " + crafted + " does not verify: manifest.json: the first member is"},
		{"key for a case file", []string{"replay", "--config", b.config, caseFile, "--public-key", pub}, "is a case file, not a bundle"},
		{"key without a file", []string{"replay", "--config", b.config, "--request", turn, "--public-key", pub}, "--public-key checks a bundle"},
		{"agent gone", []string{"replay", "--config", b.config, gone}, `the case's agent "retired" is not in the configuration`},
		{"missing config", []string{"replay", "--config", filepath.Join(b.dir, "none.yaml"), caseFile}, "invalid configuration"},
	}
	for _, tt := range tests {
		r := run(t, "", tt.args...)
		if r.code != cli.ExitUsage || !strings.Contains(r.stderr, tt.want) {
			t.Errorf("%s: exit %d, stderr %q; want exit 2 saying %q", tt.name, r.code, r.stderr, tt.want)
		}
	}

	// An unknown request fails (exit 1), as in export request.
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown request", []string{"replay", "--config", b.config, "--request", "turn_01M7Z5ME399Y0NDSXSN8VEWD18"}, "no request turn_01M7Z5ME399Y0NDSXSN8VEWD18"},
		{"other session", []string{"replay", "--config", b.config, "--request", turn, "--session", "ses_01M7Z5ME399Y0NDSXSN8VEWD18"}, "session ses_01M7Z5ME399Y0NDSXSN8VEWD18 has no request " + turn},
	} {
		r := run(t, "", tt.args...)
		if r.code != cli.ExitFailed || !strings.Contains(r.stderr, tt.want) {
			t.Errorf("%s: exit %d, stderr %q; want exit 1 saying %q", tt.name, r.code, r.stderr, tt.want)
		}
	}
}

// writeBundle writes a gzipped tar with the given members.
func writeBundle(t *testing.T, name string, members map[string][]byte) {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, n := range []string{"evidence/manifest.json", "evidence/replay-case.json"} {
		body, ok := members[n]
		if !ok {
			continue
		}
		if err := tw.WriteHeader(&tar.Header{Name: n, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(body); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestReplayTrustsOnlyVerifiedAnswers: the recorded answers of a case
// from a file approve nothing unless the bundle's signature verifies with
// the given key (or the operator says to trust them): a crafted file
// cannot approve the calls it replays.
func TestReplayTrustsOnlyVerifiedAnswers(t *testing.T) {
	t.Parallel()
	b := setupGoverned(t)
	turn := recordGoverned(t, b)
	caseFile := filepath.Join(b.dir, "case.json")
	runOK(t, "", "replay", "--config", b.config, "--request", turn, "--write-case", caseFile, "--no-tools")
	data, err := os.ReadFile(caseFile)
	if err != nil {
		t.Fatal(err)
	}
	var rc replaycase.Case
	if err := json.Unmarshal(data, &rc); err != nil {
		t.Fatal(err)
	}
	priv, pub := writeKeys(t, b.dir)
	_, otherPub := writeKeys(t, t.TempDir())
	signed := filepath.Join(b.dir, "signed.tar.gz")
	runOK(t, "", "export", "request", "--config", b.config, "--session", rc.SessionID, "--request", turn, "--artifact-contents",
		"--sign-key", priv, "-o", signed)

	// Untrusted: the ask the person approved is denied, so its result differs.
	for _, src := range []string{caseFile, signed} {
		r := run(t, "", "replay", "--config", b.config, src)
		if r.code != cli.ExitFailed || !strings.Contains(r.stdout, "denied (recorded answers are not applied to an untrusted case)") {
			t.Errorf("replay of untrusted %s: exit %d\n%s%s", src, r.code, r.stdout, r.stderr)
		}
	}
	// Trusted: the signature verifies with the key, or the operator says so.
	for _, args := range [][]string{{signed, "--public-key", pub}, {caseFile, "--trust-case"}} {
		r := run(t, "", append([]string{"replay", "--config", b.config}, args...)...)
		if r.code != cli.ExitOK || !strings.Contains(r.stdout, "answered with the recorded decision: approve") {
			t.Errorf("replay %v: exit %d\n%s%s", args, r.code, r.stdout, r.stderr)
		}
	}
	// A crafted case cannot widen the replay: its bypass mode and its
	// principal are ignored, so the ask stays an ask, and is denied.
	var crafted map[string]any
	if err := json.Unmarshal(data, &crafted); err != nil {
		t.Fatal(err)
	}
	crafted["policyMode"], crafted["principalId"] = "bypass", "root"
	for _, st := range crafted["steps"].([]any) {
		delete(st.(map[string]any), "human")
		delete(st.(map[string]any), "humanBy")
	}
	craftedData, err := json.Marshal(crafted)
	if err != nil {
		t.Fatal(err)
	}
	craftedFile := b.write(t, "crafted.json", string(craftedData))
	r := run(t, "", "replay", "--config", b.config, craftedFile, "--json")
	var d replaycase.Diff
	if err := json.Unmarshal([]byte(r.stdout), &d); err != nil {
		t.Fatalf("replay of a crafted case: %v\n%s%s", err, r.stdout, r.stderr)
	}
	for _, st := range d.Steps {
		if st.Tool == "open_ticket" && (st.Replayed.Decision != "ask" || st.Replayed.ResultStatus == "completed") {
			t.Errorf("a crafted bypass case replayed open_ticket as %+v; want an ask that is denied", st.Replayed)
		}
	}
	r = run(t, "", "replay", "--config", b.config, signed, "--public-key", otherPub)
	if r.code != cli.ExitUsage || !strings.Contains(r.stderr, "does not verify: signature.json") {
		t.Errorf("replay with another key: exit %d, stderr %q", r.code, r.stderr)
	}
}

// TestReplayOverServer replays a request the daemon stores: the same
// diff as from the data directory, answers applied.
func TestReplayOverServer(t *testing.T) {
	t.Parallel()
	b := setupGoverned(t)
	turn := recordGoverned(t, b)
	caseFile := filepath.Join(b.dir, "case.json")
	local := runOK(t, "", "replay", "--config", b.config, "--request", turn, "--write-case", caseFile, "--no-tools", "--json")
	data, err := os.ReadFile(caseFile)
	if err != nil {
		t.Fatal(err)
	}
	var rc replaycase.Case
	if err := json.Unmarshal(data, &rc); err != nil {
		t.Fatal(err)
	}
	d := b.serve(t)
	remote := runOK(t, "", "replay", "--config", b.config, "--server", d.url, "--token", d.token, "--session", rc.SessionID,
		"--request", turn, "--no-tools", "--json")
	if diff := cmp.Diff(local.stdout, remote.stdout); diff != "" {
		t.Errorf("replay over --server differs from the data directory's (-local +server):\n%s", diff)
	}
	r := run(t, "", "replay", "--config", b.config, "--server", d.url, "--token", d.token, "--request", turn)
	if r.code != cli.ExitUsage || !strings.Contains(r.stderr, "--session is required with --server") {
		t.Errorf("replay --server without --session: exit %d, stderr %q", r.code, r.stderr)
	}
}
