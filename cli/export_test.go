package cli_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/cli"
	"github.com/agentrt/agentrt/evidence"
)

// approvedTurn runs the governed turn, approves its action and returns
// the session and request ids.
func approvedTurn(t *testing.T, b *testBundle) (session, request string) {
	t.Helper()
	id, parked := b.park(t)
	runOK(t, "", "approvals", "approve", id, "--config", b.config)
	m := regexp.MustCompile(`request (turn_[0-9A-Z]{26})  agent \S+  session (ses_[0-9A-Z]{26})`).FindStringSubmatch(parked.stdout)
	if m == nil {
		t.Fatalf("no request and session in:\n%s", parked.stdout)
	}
	return m[2], m[1]
}

// TestExportAndVerify exports a request, verifies the bundle (exit 0),
// then flips a byte of one member: verify exits 1 naming it.
func TestExportAndVerify(t *testing.T) {
	t.Parallel()
	b := setupGoverned(t)
	session, request := approvedTurn(t, b)
	out := filepath.Join(b.dir, "case.tar.gz")
	r := runOK(t, "", "export", "request", "--config", b.config, "--session", session, "--request", request,
		"--artifact-contents", "--health", "-o", out)
	matchLines(t, r.stdout, []string{"exported request " + request + " to " + out + " (evidence {ANY}): {ANY} events, 4 decisions, 1 approvals, 3 tool calls, 7 receipts, {ANY} artifacts"})
	if r.stderr != "" {
		t.Errorf("stderr %q, want no progress off a terminal", r.stderr)
	}
	if left, _ := filepath.Glob(filepath.Join(b.dir, ".case.tar.gz.*")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
	r = runOK(t, "", "verify", out)
	matchLines(t, r.stdout, []string{out + ": ok: evidence {ANY}, {ANY} members, 7 receipts (head {ANY}), unsigned"})
	var rep evidence.Report
	if err := json.Unmarshal([]byte(runOK(t, "", "verify", out, "--json").stdout), &rep); err != nil || !rep.OK || rep.Receipts != 7 {
		t.Errorf("verify --json = %+v, %v", rep, err)
	}

	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(b.dir, "bad.tar.gz")
	if err := os.WriteFile(bad, flip(t, data, evidence.ToolCallsName), 0o600); err != nil {
		t.Fatal(err)
	}
	r = run(t, "", "verify", bad)
	if r.code != cli.ExitFailed || !strings.HasPrefix(r.stdout, bad+": broken: tool-calls.jsonl: sha256 ") {
		t.Errorf("flipped byte: exit %d, stdout %q; want exit 1 naming tool-calls.jsonl", r.code, r.stdout)
	}

	var sum struct {
		EvidenceID string
		Counts     evidence.Counts
		Signed     bool
	}
	r = runOK(t, "", "export", "request", "--config", b.config, "--session", session, "--request", request, "-o", out, "--json")
	if err := json.Unmarshal([]byte(r.stdout), &sum); err != nil || sum.EvidenceID == "" || sum.Counts.ToolCalls != 3 || sum.Counts.Artifacts != 0 || sum.Signed {
		t.Errorf("export --json = %s (%v)", r.stdout, err)
	}
}

// eachMember calls f with every member of a bundle (.tar.gz), in order.
func eachMember(t *testing.T, bundle []byte, f func(hdr *tar.Header, data []byte)) {
	t.Helper()
	gz, err := gzip.NewReader(bytes.NewReader(bundle))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		f(hdr, data)
	}
}

// flip returns bundle with one byte of member name changed.
func flip(t *testing.T, bundle []byte, name string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	eachMember(t, bundle, func(hdr *tar.Header, data []byte) {
		if hdr.Name == name {
			data[len(data)/2] ^= 1
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		tw.Write(data)
	})
	tw.Close()
	zw.Close()
	return buf.Bytes()
}

func writeKeys(t *testing.T, dir string) (priv, pub string) {
	t.Helper()
	pk, sk, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(sk)
	if err != nil {
		t.Fatal(err)
	}
	priv = filepath.Join(dir, "key.pem")
	if err := os.WriteFile(priv, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	pubPEM, err := evidence.MarshalPublicKeyPEM(pk)
	if err != nil {
		t.Fatal(err)
	}
	pub = filepath.Join(dir, "key.pub")
	if err := os.WriteFile(pub, pubPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	return priv, pub
}

func TestExportSigned(t *testing.T) {
	t.Parallel()
	b := setupGoverned(t)
	session, request := approvedTurn(t, b)
	priv, pub := writeKeys(t, b.dir)
	_, otherPub := writeKeys(t, t.TempDir())
	out := filepath.Join(b.dir, "signed.tar.gz")
	r := runOK(t, "", "export", "request", "--config", b.config, "--session", session, "--request", request, "--sign-key", priv, "-o", out)
	matchLines(t, r.stdout, []string{"exported request {ANY}", "signed with key sha256:{ANY}"})
	r = runOK(t, "", "verify", out, "--public-key", pub)
	if !strings.Contains(r.stdout, ": ok: ") || !strings.Contains(r.stdout, "signature valid (key sha256:") {
		t.Errorf("verify with the key: %q", r.stdout)
	}
	r = runOK(t, "", "verify", out)
	if !strings.Contains(r.stdout, "not checked against a trusted key") {
		t.Errorf("verify without a key: %q", r.stdout)
	}
	r = run(t, "", "verify", out, "--public-key", otherPub)
	if r.code != cli.ExitFailed || !strings.Contains(r.stdout, "broken: signature.json: the signature over manifest.json does not verify with the given public key") {
		t.Errorf("verify with another key: exit %d, %q", r.code, r.stdout)
	}
}

func TestExportErrors(t *testing.T) {
	t.Parallel()
	b := setupGoverned(t)
	session, request := approvedTurn(t, b)
	out := filepath.Join(b.dir, "x.tar.gz")
	for _, tt := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"export", "request", "--config", b.config, "--request", request, "-o", out}, cli.ExitUsage, "--session is required"},
		{[]string{"export", "request", "--config", b.config, "--session", session, "-o", out}, cli.ExitUsage, "--request is required"},
		{[]string{"export", "request", "--config", b.config, "--session", session, "--request", request}, cli.ExitUsage, "-o FILE is required"},
		{[]string{"export", "request", "--config", b.config, "--session", session, "--request", request, "-o", out, "--sign-key", b.config}, cli.ExitUsage, "want a PEM"},
		{[]string{"export", "request", "--config", b.config, "--session", session, "--request", "turn_nope", "-o", out}, cli.ExitFailed, "no request turn_nope in session " + session},
		{[]string{"export", "request", "--config", b.config, "--session", "ses_nope", "--request", request, "-o", out}, cli.ExitFailed, "no request"},
		{[]string{"verify", out, "--session", session}, cli.ExitUsage, "not both"},
		{[]string{"verify", "--session", session, "--public-key", b.config}, cli.ExitUsage, "give the bundle file"},
		{[]string{"verify", filepath.Join(b.dir, "missing.tar.gz")}, cli.ExitUsage, "opening the bundle"},
		{[]string{"verify", b.config}, cli.ExitFailed, ""},
		{[]string{"verify", "a", "b"}, cli.ExitUsage, "accepts at most 1 arg"},
	} {
		r := run(t, "", tt.args...)
		if r.code != tt.code || !strings.Contains(r.stderr, tt.stderr) {
			t.Errorf("agentrt %s: exit %d, stderr %q; want %d, %q", strings.Join(tt.args, " "), r.code, r.stderr, tt.code, tt.stderr)
		}
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a failed export left %s: %v", out, err)
	}
}

// TestExportOverServer exports through a daemon's HTTP API and signs on
// this side: the bundle verifies with the key and holds what a data
// directory export holds; an unknown request is the same error.
func TestExportOverServer(t *testing.T) {
	t.Parallel()
	b := setupGoverned(t)
	session, request := approvedTurn(t, b)
	d := b.serve(t)
	priv, pub := writeKeys(t, b.dir)
	local, remote := filepath.Join(b.dir, "local.tar.gz"), filepath.Join(b.dir, "remote.tar.gz")
	runOK(t, "", "export", "request", "--config", b.config, "--session", session, "--request", request, "-o", local)
	r := runOK(t, "", "export", "request", "--server", d.url, "--token", d.token, "--session", session, "--request", request,
		"--sign-key", priv, "-o", remote, "--json")
	var sum struct {
		TurnID string          `json:"turnId"`
		Counts evidence.Counts `json:"counts"`
		Signed bool            `json:"signed"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &sum); err != nil {
		t.Fatalf("decoding %q: %v", r.stdout, err)
	}
	if sum.TurnID != request || !sum.Signed || sum.Counts.Decisions != 4 || sum.Counts.ToolCalls != 3 {
		t.Errorf("export over --server: %+v; want turn %s, signed, 4 decisions, 3 tool calls", sum, request)
	}
	r = runOK(t, "", "verify", remote, "--public-key", pub)
	if !strings.Contains(r.stdout, "signature valid") {
		t.Errorf("verify of the daemon's bundle: %q", r.stdout)
	}
	r = run(t, "", "export", "request", "--server", d.url, "--token", d.token, "--session", session, "--request", "turn_nope", "-o", remote)
	if r.code != cli.ExitFailed || !strings.Contains(r.stderr, "no request turn_nope") {
		t.Errorf("unknown request over --server: exit %d, stderr %q", r.code, r.stderr)
	}
	if _, err := os.Stat(remote); err != nil {
		t.Errorf("the good bundle was lost after a failed export over it: %v", err)
	}
}

// TestReplayFromExportedBundle replays an exported bundle's
// replay-case.json under the same config: nothing differs.
func TestReplayFromExportedBundle(t *testing.T) {
	t.Parallel()
	b := setupGoverned(t)
	session, request := approvedTurn(t, b)
	out := filepath.Join(b.dir, "case.tar.gz")
	runOK(t, "", "export", "request", "--config", b.config, "--session", session, "--request", request, "--artifact-contents", "-o", out)
	var rep evidence.Report
	if err := json.Unmarshal([]byte(runOK(t, "", "verify", out, "--json").stdout), &rep); err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(rep.Members, func(m evidence.MemberResult) bool {
		return m.Name == evidence.ReplayCaseName && m.Status == evidence.MemberOK
	}) {
		t.Fatalf("the bundle's members %+v lack a verified %s", rep.Members, evidence.ReplayCaseName)
	}
	r := run(t, "", "replay", out, "--config", b.config, "--no-tools", "--trust-case", "--json")
	if r.code != cli.ExitOK {
		t.Fatalf("replay of the exported bundle: exit %d, stdout %s, stderr %s", r.code, r.stdout, r.stderr)
	}
	var diff struct {
		Steps   []json.RawMessage `json:"steps"`
		Summary struct {
			Differs bool `json:"differs"`
		} `json:"summary"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &diff); err != nil || diff.Summary.Differs || len(diff.Steps) == 0 {
		t.Errorf("replay --json = %s (%v); want steps and nothing differing", r.stdout, err)
	}
}

// TestExportSignedErrors: a signed export that fails reports why the
// export failed, not that the stream it signed broke.
func TestExportSignedErrors(t *testing.T) {
	t.Parallel()
	b := setupGoverned(t)
	session, _ := approvedTurn(t, b)
	priv, _ := writeKeys(t, b.dir)
	out := filepath.Join(b.dir, "x.tar.gz")
	r := run(t, "", "export", "request", "--config", b.config, "--session", session, "--request", "turn_nope", "--sign-key", priv, "-o", out)
	if r.code != cli.ExitFailed || !strings.Contains(r.stderr, "no request turn_nope") {
		t.Errorf("signed export of an unknown request: exit %d, stderr %q; want 1 naming the request", r.code, r.stderr)
	}
	d := b.serve(t)
	r = run(t, "", "export", "request", "--server", d.url, "--token", "wrong-0123456789abcdef", "--session", session, "--request", "turn_nope",
		"--sign-key", priv, "-o", out)
	if r.code != cli.ExitFailed || !strings.Contains(r.stderr, "the server refused the token") {
		t.Errorf("signed export with a wrong token: exit %d, stderr %q; want the token hint", r.code, r.stderr)
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a failed export left %s: %v", out, err)
	}
}
