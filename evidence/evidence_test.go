package evidence_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/evidence"
	"github.com/agentrt/agentrt/store"
)

// The sample request: a turn whose tool call was decided and ran. Its
// sealed events have receipts, chained from the session's first.
var (
	sampleEvents = []string{
		`{"type":"turn.started","eventId":"evt_1","timestamp":"2026-05-01T10:00:00Z","sequence":4,"sessionId":"ses_1","turnId":"turn_1","payload":{"status":"running"}}`,
		`{"type":"permission.evaluated","eventId":"evt_2","timestamp":"2026-05-01T10:00:01Z","sequence":5,"sessionId":"ses_1","turnId":"turn_1","permissionDecision":{"decision":"allow"},"payload":{"toolName":"read_file","hop":1}}`,
		`{"type":"tool.result","eventId":"evt_3","timestamp":"2026-05-01T10:00:02Z","sequence":6,"sessionId":"ses_1","turnId":"turn_1","payload":{"name":"read_file","preview":"hello","bytes":5}}`,
	}
	artifact    = []byte("hello, the whole tool output\n")
	artifactRef = ref(artifact)
)

func ref(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// chain returns the receipts sealing the sealed events among lines,
// after a receipt of an earlier turn; bodies are the lines.
func chain(lines []string) []evidence.Receipt {
	var out []evidence.Receipt
	add := func(id, typ string, body []byte) {
		r := evidence.Receipt{SessionID: "ses_1", Seq: int64(len(out) + 1), EventID: id, EventType: typ, Body: body,
			CreatedAt: time.Date(2026, 5, 1, 10, 0, len(out), 0, time.UTC)}
		if len(out) > 0 {
			r.PrevHash = out[len(out)-1].Hash
		}
		r.Hash = store.ReceiptHash(r.PrevHash, r.Body)
		out = append(out, r)
	}
	add("evt_0", "policy.changed", []byte(`{"type":"policy.changed","eventId":"evt_0"}`))
	add("evt_2", "permission.evaluated", []byte(lines[1]))
	add("evt_3", "tool.result", []byte(lines[2]))
	return out
}

type sample struct {
	events   []string
	receipts []evidence.Receipt
	modTime  time.Time
	extra    func(b *evidence.Builder) // more members
}

func newSample() *sample {
	return &sample{events: sampleEvents, receipts: chain(sampleEvents), modTime: time.Date(2026, 5, 1, 10, 0, 3, 5e8, time.UTC)}
}

// build writes the sample bundle.
func (s *sample) build(t testing.TB) ([]byte, *evidence.Manifest) {
	t.Helper()
	b := evidence.NewBuilder(s.modTime)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(b.AddJSON(evidence.RequestName, map[string]any{"turnId": "turn_1", "input": "read hello.txt"}))
	must(b.Add(evidence.EventsName, []byte(strings.Join(s.events, "\n")+"\n")))
	must(b.AddJSON(evidence.SessionName, map[string]any{"sessionId": "ses_1"}))
	must(b.AddJSON(evidence.ThreadName, map[string]any{"sessionId": "ses_1", "threads": []any{}}))
	must(b.Add(evidence.DecisionsName, []byte(s.events[1]+"\n")))
	must(b.Add(evidence.ApprovalsName, nil))
	must(b.Add(evidence.ToolCallsName, []byte(`{"toolCallId":"call_1","outputRef":"`+artifactRef+`"}`+"\n")))
	receipts, err := evidence.MarshalJSONL(s.receipts)
	must(err)
	must(b.Add(evidence.ReceiptsName, receipts))
	must(b.Add(evidence.ProviderResponsesName, []byte(`{"status":"not_recorded"}`+"\n")))
	name, ok := evidence.ArtifactName(artifactRef)
	if !ok {
		t.Fatalf("ArtifactName(%s) refused it", artifactRef)
	}
	must(b.AddReader(name, func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(artifact)), nil }))
	if s.extra != nil {
		s.extra(b)
	}
	m := evidence.Manifest{
		RuntimeID: "rt_1", AgentrtVersion: "v0.0.0-test", SessionID: "ses_1", ThreadID: "thr_1", TurnID: "turn_1",
		Counts:  evidence.Counts{Events: len(s.events), Decisions: 1, ToolCalls: 1, Receipts: len(s.receipts), ProviderResponses: 1, Artifacts: 1},
		Signals: map[string]evidence.Signal{"events": {Status: evidence.SignalExported}},
	}
	if n := len(s.receipts); n > 0 {
		m.ReceiptHead = s.receipts[n-1].Hash
	}
	got, _, err := b.Finish(m)
	must(err)
	var out bytes.Buffer
	if _, err := b.WriteTo(&out); err != nil {
		t.Fatal(err)
	}
	return out.Bytes(), got
}

// entry is one member of an archive, for tests that rewrite archives.
type entry struct {
	hdr  tar.Header
	data []byte
}

func unpack(t testing.TB, bundle []byte) []entry {
	t.Helper()
	gz, err := gzip.NewReader(bytes.NewReader(bundle))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	var out []entry
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, entry{*hdr, data})
	}
}

func pack(t testing.TB, es []entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, e := range es {
		hdr := e.hdr
		hdr.Size = int64(len(e.data))
		if hdr.Typeflag != tar.TypeReg {
			hdr.Size = 0
		}
		if err := tw.WriteHeader(&hdr); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(e.data); err != nil && hdr.Typeflag == tar.TypeReg {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func rewrite(t testing.TB, bundle []byte, fn func([]entry) []entry) []byte {
	t.Helper()
	return pack(t, fn(unpack(t, bundle)))
}

func verify(bundle []byte, pub ed25519.PublicKey) *evidence.Report {
	return evidence.Verify(bytes.NewReader(bundle), &evidence.VerifyOptions{PublicKey: pub})
}

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	bundle, m := newSample().build(t)
	rep := verify(bundle, nil)
	if !rep.OK || rep.Broken != "" || rep.Reason != "" {
		t.Fatalf("Verify = ok %v, broken %q: %s", rep.OK, rep.Broken, rep.Reason)
	}
	if !strings.HasPrefix(m.BundleID, "evd_") || len(m.BundleID) != 36 || rep.BundleID != m.BundleID {
		t.Errorf("bundle id %q, report's %q; want evd_ and 32 hex digits, the same", m.BundleID, rep.BundleID)
	}
	if rep.Receipts != 3 || rep.ReceiptHead != m.ReceiptHead || rep.Signature != evidence.SignatureAbsent {
		t.Errorf("report: %d receipts, head %q, signature %s; want 3, %q, absent", rep.Receipts, rep.ReceiptHead, rep.Signature, m.ReceiptHead)
	}
	artifactMember, _ := evidence.ArtifactName(artifactRef)
	wantNames := []string{evidence.ManifestName, evidence.RequestName, evidence.EventsName, evidence.SessionName, evidence.ThreadName,
		evidence.DecisionsName, evidence.ApprovalsName, evidence.ToolCallsName, evidence.ReceiptsName, evidence.ProviderResponsesName, artifactMember}
	var names []string
	for _, r := range rep.Members {
		names = append(names, r.Name)
		if r.Status != evidence.MemberOK {
			t.Errorf("member %s: %s %s", r.Name, r.Status, r.Reason)
		}
	}
	if diff := cmp.Diff(wantNames, names); diff != "" {
		t.Errorf("members in archive order (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(m, rep.Manifest); diff != "" {
		t.Errorf("the manifest read back differs from the one written (-written +read):\n%s", diff)
	}
	for _, e := range unpack(t, bundle) {
		if want := time.Date(2026, 5, 1, 10, 0, 3, 0, time.UTC); !e.hdr.ModTime.Equal(want) || e.hdr.Mode != 0o644 || e.hdr.Uname != "" {
			t.Errorf("%s: header time %v, mode %o, owner %q; want %v, 0644, none", e.hdr.Name, e.hdr.ModTime, e.hdr.Mode, e.hdr.Uname, want)
		}
	}
}

func TestDeterministic(t *testing.T) {
	t.Parallel()
	a, ma := newSample().build(t)
	b, mb := newSample().build(t)
	if !bytes.Equal(a, b) || ma.BundleID != mb.BundleID {
		t.Errorf("two builds of the same inputs differ (ids %s, %s)", ma.BundleID, mb.BundleID)
	}
	s := newSample()
	s.events = append([]string(nil), sampleEvents...)
	s.events[0] = strings.Replace(s.events[0], "10:00:00Z", "10:00:00.5Z", 1)
	if _, mc := s.build(t); mc.BundleID == ma.BundleID {
		t.Errorf("a different event kept the bundle id %s", mc.BundleID)
	}
}

// TestVerifyTamperedMember flips one byte of each member in turn: Verify
// names exactly that member.
func TestVerifyTamperedMember(t *testing.T) {
	t.Parallel()
	bundle, _ := newSample().build(t)
	for i, e := range unpack(t, bundle) {
		if e.hdr.Name == evidence.ManifestName || len(e.data) == 0 {
			continue
		}
		t.Run(e.hdr.Name, func(t *testing.T) {
			t.Parallel()
			bad := rewrite(t, bundle, func(es []entry) []entry {
				es[i].data = bytes.Clone(es[i].data)
				es[i].data[len(es[i].data)/2] ^= 0x20
				return es
			})
			rep := verify(bad, nil)
			if rep.OK || rep.Broken != e.hdr.Name || !strings.Contains(rep.Reason, "the manifest says") {
				t.Fatalf("Verify = ok %v, broken %q (%s); want %s broken, its hash not the manifest's", rep.OK, rep.Broken, rep.Reason, e.hdr.Name)
			}
			if got := status(rep, e.hdr.Name); got != evidence.MemberMismatch {
				t.Errorf("%s: status %s, want mismatch", e.hdr.Name, got)
			}
		})
	}
}

func status(rep *evidence.Report, name string) evidence.MemberStatus {
	for _, r := range rep.Members {
		if r.Name == name {
			return r.Status
		}
	}
	return ""
}

func TestVerifyStructure(t *testing.T) {
	t.Parallel()
	bundle, _ := newSample().build(t)
	reg := func(name string, data string) entry {
		return entry{hdr: tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644}, data: []byte(data)}
	}
	tests := []struct {
		name       string
		fn         func([]entry) []entry
		wantBroken string
		wantStatus evidence.MemberStatus
		wantReason string
	}{
		{"members reordered after the manifest", func(es []entry) []entry {
			es[1], es[len(es)-1] = es[len(es)-1], es[1]
			return es
		}, "", "", ""},
		{"manifest not first", func(es []entry) []entry {
			es[0], es[1] = es[1], es[0]
			return es
		}, evidence.ManifestName, evidence.MemberMissing, "the first member is request.json"},
		{"manifest missing", func(es []entry) []entry { return es[1:] }, evidence.ManifestName, evidence.MemberMissing, "not manifest.json"},
		{"empty archive", func([]entry) []entry { return nil }, evidence.ManifestName, evidence.MemberMissing, "no members"},
		{"member missing", func(es []entry) []entry { return append(es[:2], es[3:]...) }, evidence.EventsName, evidence.MemberMissing, "absent from the archive"},
		{"extra member", func(es []entry) []entry { return append(es, reg("notes.txt", "trust me")) }, "notes.txt", evidence.MemberUnlisted, "not listed"},
		{"duplicate member", func(es []entry) []entry { return append(es, es[2]) }, evidence.EventsName, evidence.MemberDuplicate, "second member"},
		{"duplicate manifest", func(es []entry) []entry { return append(es, es[0]) }, evidence.ManifestName, evidence.MemberDuplicate, "second member"},
		{"path traversal", func(es []entry) []entry { return append(es, reg("artifacts/../../etc/cron.d/x", "x")) }, "artifacts/../../etc/cron.d/x", evidence.MemberUnsafe, "not a clean path"},
		{"dot-dot", func(es []entry) []entry { return append(es, reg("../x", "x")) }, "../x", evidence.MemberUnsafe, "leaves the bundle"},
		{"absolute name", func(es []entry) []entry { return append(es, reg("/etc/passwd", "x")) }, "/etc/passwd", evidence.MemberUnsafe, "absolute"},
		{"symlink", func(es []entry) []entry {
			return append(es, entry{hdr: tar.Header{Typeflag: tar.TypeSymlink, Name: "link", Linkname: "/etc/passwd"}})
		}, "link", evidence.MemberUnsafe, "not a regular file"},
		{"directory", func(es []entry) []entry {
			return append(es, entry{hdr: tar.Header{Typeflag: tar.TypeDir, Name: "artifacts", Mode: 0o755}})
		}, "artifacts", evidence.MemberUnsafe, "not a regular file"},
		{"manifest not JSON", func(es []entry) []entry {
			es[0].data = []byte("{")
			return es
		}, evidence.ManifestName, evidence.MemberInvalid, "decoding"},
		{"manifest of another format", func(es []entry) []entry {
			es[0].data = bytes.Replace(es[0].data, []byte(evidence.FormatVersion), []byte("agentrt-evidence/9"), 1)
			return es
		}, evidence.ManifestName, evidence.MemberInvalid, "format version"},
		{"manifest listing a traversal", func(es []entry) []entry {
			es[0].data = bytes.Replace(es[0].data, []byte(`"name": "request.json"`), []byte(`"name": "../request.json"`), 1)
			return es
		}, evidence.ManifestName, evidence.MemberInvalid, "unsafe member"},
		{"events miscounted", func(es []entry) []entry {
			es[0].data = bytes.Replace(es[0].data, []byte(`"events": 3`), []byte(`"events": 4`), 1)
			return es
		}, evidence.EventsName, evidence.MemberInvalid, "holds 3 events, the manifest counts 4"},
		{"tool calls miscounted", func(es []entry) []entry {
			es[0].data = bytes.Replace(es[0].data, []byte(`"toolCalls": 1`), []byte(`"toolCalls": 2`), 1)
			return es
		}, evidence.ToolCallsName, evidence.MemberInvalid, "holds 1 lines, the manifest counts 2"},
		{"artifacts miscounted", func(es []entry) []entry {
			es[0].data = bytes.Replace(es[0].data, []byte(`"artifacts": 1`), []byte(`"artifacts": 0`), 1)
			return es
		}, evidence.ManifestName, evidence.MemberInvalid, "lists 1 artifacts, and counts 0"},
		{"receipt head not the manifest's", func(es []entry) []entry {
			es[0].data = bytes.Replace(es[0].data, []byte(`"receiptHead": "`), []byte(`"receiptHead": "0`), 1)
			return es
		}, evidence.ReceiptsName, evidence.MemberInvalid, "the chain's head"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rep := verify(rewrite(t, bundle, tt.fn), nil)
			if tt.wantBroken == "" {
				if !rep.OK {
					t.Fatalf("Verify: broken %q: %s; want ok", rep.Broken, rep.Reason)
				}
				return
			}
			if rep.OK || rep.Broken != tt.wantBroken || !strings.Contains(rep.Reason, tt.wantReason) {
				t.Fatalf("Verify = ok %v, broken %q (%s); want %s broken, %q", rep.OK, rep.Broken, rep.Reason, tt.wantBroken, tt.wantReason)
			}
			var got []evidence.MemberStatus
			for _, r := range rep.Members {
				if r.Name == tt.wantBroken && r.Status != evidence.MemberOK {
					got = append(got, r.Status)
				}
			}
			if len(got) == 0 || got[0] != tt.wantStatus {
				t.Errorf("%s: statuses %v, want %s", tt.wantBroken, got, tt.wantStatus)
			}
		})
	}
}

func TestVerifyNotABundle(t *testing.T) {
	t.Parallel()
	for name, data := range map[string][]byte{
		"empty":     nil,
		"not gzip":  []byte("PK\x03\x04 a zip file"),
		"truncated": func() []byte { b, _ := newSample().build(t); return b[:len(b)/2] }(),
	} {
		rep := verify(data, nil)
		if rep.OK || rep.Broken != "" || rep.Reason == "" {
			t.Errorf("%s: Verify = ok %v, broken %q (%s); want the archive broken with a reason", name, rep.OK, rep.Broken, rep.Reason)
		}
	}
}

// TestVerifyBrokenChain builds a bundle whose hashes are all right but
// whose receipt chain is not: receipts.jsonl is named.
func TestVerifyBrokenChain(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		break_ func([]evidence.Receipt)
		want   string
	}{
		{"body altered", func(rs []evidence.Receipt) {
			rs[1].Body = []byte(strings.Replace(string(rs[1].Body), "allow", "deny", 1))
		}, "receipt 2 (event evt_2): hash does not match its body"},
		{"link cut", func(rs []evidence.Receipt) {
			rs[2].PrevHash = rs[0].Hash
			rs[2].Hash = store.ReceiptHash(rs[2].PrevHash, rs[2].Body)
		}, "receipt 3 (event evt_3): prev hash does not match receipt 2"},
		{"receipt removed", func(rs []evidence.Receipt) { rs[1] = rs[2] }, "sequence gap"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := newSample()
			tt.break_(s.receipts)
			bundle, _ := s.build(t)
			rep := verify(bundle, nil)
			if rep.OK || rep.Broken != evidence.ReceiptsName || !strings.Contains(rep.Reason, tt.want) {
				t.Fatalf("Verify = ok %v, broken %q (%s); want receipts.jsonl, %q", rep.OK, rep.Broken, rep.Reason, tt.want)
			}
			if got := status(rep, evidence.ReceiptsName); got != evidence.MemberInvalid {
				t.Errorf("receipts.jsonl: %s, want invalid", got)
			}
		})
	}
}

// TestVerifySealedEventDiffers: an event in events.jsonl that is not what
// its receipt sealed names events.jsonl.
func TestVerifySealedEventDiffers(t *testing.T) {
	t.Parallel()
	s := newSample()
	s.events = append([]string(nil), sampleEvents...)
	s.events[1] = strings.Replace(s.events[1], `"allow"`, `"deny"`, 1) // the receipts keep the allow
	bundle, _ := s.build(t)
	rep := verify(bundle, nil)
	if rep.OK || rep.Broken != evidence.EventsName || !strings.Contains(rep.Reason, "line 2: the permission.evaluated event evt_2 differs from what receipt 2 sealed") {
		t.Fatalf("Verify = ok %v, broken %q (%s); want events.jsonl, line 2", rep.OK, rep.Broken, rep.Reason)
	}
}

func opensslKeys(t *testing.T) (ed25519.PrivateKey, ed25519.PublicKey) {
	t.Helper()
	privPEM, err := os.ReadFile("testdata/openssl-ed25519.pem")
	if err != nil {
		t.Fatal(err)
	}
	pubPEM, err := os.ReadFile("testdata/openssl-ed25519.pub")
	if err != nil {
		t.Fatal(err)
	}
	priv, err := evidence.ParsePrivateKeyPEM(privPEM)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := evidence.ParsePublicKeyPEM(pubPEM)
	if err != nil {
		t.Fatal(err)
	}
	return priv, pub
}

func sign(t *testing.T, bundle []byte, key ed25519.PrivateKey) []byte {
	t.Helper()
	var out bytes.Buffer
	if err := evidence.Sign(bytes.NewReader(bundle), &out, key); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

func TestSign(t *testing.T) {
	t.Parallel()
	priv, pub := opensslKeys(t)
	// openssl pkey -pubin -in testdata/openssl-ed25519.pub -outform DER | sha256sum
	const wantKeyID = "sha256:2d438aa41ade4e26263eb4097e74260518ca936e2ebb622cd19f46167b4084df"
	if id, err := evidence.KeyID(pub); err != nil || id != wantKeyID {
		t.Fatalf("KeyID = %q, %v; want openssl's %s", id, err, wantKeyID)
	}
	if !priv.Public().(ed25519.PublicKey).Equal(pub) {
		t.Fatal("the public key is not the private key's")
	}
	bundle, _ := newSample().build(t)
	signed := sign(t, bundle, priv)

	es := unpack(t, signed)
	orig := unpack(t, bundle)
	if last := es[len(es)-1].hdr.Name; last != evidence.SignatureName || len(es) != len(orig)+1 {
		t.Fatalf("signed bundle ends with %s and has %d members; want signature.json added to %d", last, len(es), len(orig))
	}
	for i := range orig {
		if es[i].hdr.Name != orig[i].hdr.Name || !bytes.Equal(es[i].data, orig[i].data) {
			t.Errorf("member %d (%s) changed by signing", i, orig[i].hdr.Name)
		}
	}
	if again := sign(t, signed, priv); !bytes.Equal(again, signed) {
		t.Error("signing a signed bundle again is not the same bundle (one signature, deterministic)")
	}

	rep := verify(signed, nil)
	if !rep.OK || rep.Signature != evidence.SignatureUnchecked || rep.KeyID != wantKeyID {
		t.Errorf("without a key: ok %v (%s %s), signature %s, key %s; want ok, unchecked, %s", rep.OK, rep.Broken, rep.Reason, rep.Signature, rep.KeyID, wantKeyID)
	}
	rep = verify(signed, pub)
	if !rep.OK || rep.Signature != evidence.SignatureValid {
		t.Errorf("with the key: ok %v (%s %s), signature %s; want ok, valid", rep.OK, rep.Broken, rep.Reason, rep.Signature)
	}

	otherPub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	rep = verify(signed, otherPub)
	if rep.OK || rep.Broken != evidence.SignatureName || rep.Signature != evidence.SignatureInvalid || !strings.Contains(rep.Reason, "given public key") {
		t.Errorf("another key: ok %v, broken %q (%s), signature %s; want signature.json invalid", rep.OK, rep.Broken, rep.Reason, rep.Signature)
	}
	rep = verify(bundle, pub)
	if rep.OK || rep.Broken != evidence.SignatureName || !strings.Contains(rep.Reason, "not signed") {
		t.Errorf("unsigned with a key: ok %v, broken %q (%s); want signature.json missing", rep.OK, rep.Broken, rep.Reason)
	}

	// A manifest altered after signing (its member hashes still right).
	tampered := rewrite(t, signed, func(es []entry) []entry {
		es[0].data = bytes.Replace(es[0].data, []byte(`"runtimeId": "rt_1"`), []byte(`"runtimeId": "rt_2"`), 1)
		return es
	})
	for _, key := range []ed25519.PublicKey{nil, pub} {
		rep := verify(tampered, key)
		if rep.OK || rep.Broken != evidence.SignatureName || rep.Signature != evidence.SignatureInvalid {
			t.Errorf("tampered manifest, key %v: ok %v, broken %q (%s); want signature.json invalid", key != nil, rep.OK, rep.Broken, rep.Reason)
		}
	}

	// Signing refuses a broken bundle.
	broken := rewrite(t, bundle, func(es []entry) []entry { return append(es[:2], es[3:]...) })
	err = evidence.Sign(bytes.NewReader(broken), io.Discard, priv)
	var be *evidence.BrokenError
	if !errors.As(err, &be) || !errors.Is(err, evidence.ErrBroken) || be.Member != evidence.EventsName {
		t.Errorf("Sign(broken) = %v; want a BrokenError naming events.jsonl", err)
	}
}

func TestParseKeys(t *testing.T) {
	t.Parallel()
	pubPEM, _ := os.ReadFile("testdata/openssl-ed25519.pub")
	privPEM, _ := os.ReadFile("testdata/openssl-ed25519.pem")
	if _, err := evidence.ParsePrivateKeyPEM(pubPEM); err == nil {
		t.Error("ParsePrivateKeyPEM took a public key")
	}
	if _, err := evidence.ParsePublicKeyPEM(privPEM); err == nil {
		t.Error("ParsePublicKeyPEM took a private key")
	}
	if _, err := evidence.ParsePrivateKeyPEM([]byte("not pem")); err == nil {
		t.Error("ParsePrivateKeyPEM took garbage")
	}
	_, pub := opensslKeys(t)
	round, err := evidence.MarshalPublicKeyPEM(pub)
	if err != nil || string(round) != string(pubPEM) {
		t.Errorf("MarshalPublicKeyPEM = %q, %v; want openssl's %q", round, err, pubPEM)
	}
}

func TestVerifyLimits(t *testing.T) {
	t.Parallel()
	bundle, _ := newSample().build(t)
	rep := evidence.Verify(bytes.NewReader(bundle), &evidence.VerifyOptions{Limits: evidence.Limits{MaxMembers: 3}})
	if rep.OK || !strings.Contains(rep.Reason, "more than 3 members") {
		t.Errorf("MaxMembers 3: ok %v, %q", rep.OK, rep.Reason)
	}
	rep = evidence.Verify(bytes.NewReader(bundle), &evidence.VerifyOptions{Limits: evidence.Limits{MaxMemberBytes: 100}})
	if rep.OK || rep.Broken != evidence.ManifestName || status(rep, evidence.ManifestName) != evidence.MemberTooLarge {
		t.Errorf("MaxMemberBytes 100: ok %v, broken %q (%s); want the manifest too large", rep.OK, rep.Broken, rep.Reason)
	}
	rep = evidence.Verify(bytes.NewReader(bundle), &evidence.VerifyOptions{Limits: evidence.Limits{MaxTotalBytes: 2000}})
	if rep.OK || !strings.Contains(rep.Reason, "in all") {
		t.Errorf("MaxTotalBytes 2000: ok %v, %q", rep.OK, rep.Reason)
	}
}

func TestBuilderRefuses(t *testing.T) {
	t.Parallel()
	b := evidence.NewBuilder(time.Time{})
	for _, name := range []string{"", "../x", "/abs", "a/./b", "a\\b", evidence.ManifestName, evidence.SignatureName, "sha256:x"} {
		if err := b.Add(name, nil); err == nil {
			t.Errorf("Add(%q) took it", name)
		}
	}
	if err := b.Add(evidence.RequestName, nil); err != nil {
		t.Fatal(err)
	}
	if err := b.Add(evidence.RequestName, nil); err == nil {
		t.Error("Add took a duplicate")
	}
	if _, ok := evidence.ArtifactName("sha256:ABC"); ok {
		t.Error("ArtifactName took a short ref")
	}
}

// TestWriteToChanged: a member read through an opener that changes
// between Finish and WriteTo fails the write.
func TestWriteToChanged(t *testing.T) {
	t.Parallel()
	content := []byte("first")
	b := evidence.NewBuilder(time.Time{})
	if err := b.AddReader("artifacts/x", func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(content)), nil }); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.Finish(evidence.Manifest{}); err != nil {
		t.Fatal(err)
	}
	content = []byte("other")
	if _, err := b.WriteTo(io.Discard); !errors.Is(err, evidence.ErrChanged) {
		t.Errorf("WriteTo = %v, want ErrChanged", err)
	}
}

func FuzzVerify(f *testing.F) {
	bundle, _ := newSample().build(f)
	f.Add(bundle)
	f.Add([]byte{})
	f.Add(pack(f, []entry{{hdr: tar.Header{Typeflag: tar.TypeReg, Name: "manifest.json"}, data: []byte(`{"formatVersion":"agentrt-evidence/1","members":[{"name":"a"}]}`)}}))
	// Each input is tried as it is and gzipped, so that the fuzzer
	// reaches the tar reader through the gzip layer it cannot forge.
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, in := range [][]byte{data, gzipped(data)} {
			rep := evidence.Verify(bytes.NewReader(in), &evidence.VerifyOptions{Limits: evidence.Limits{MaxMemberBytes: 1 << 20, MaxTotalBytes: 4 << 20}})
			if rep.OK == (rep.Reason != "") {
				t.Fatalf("ok %v with reason %q", rep.OK, rep.Reason)
			}
		}
	})
}

func gzipped(data []byte) []byte {
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	gz.Write(data)
	gz.Close()
	return buf.Bytes()
}

func Example() {
	b := evidence.NewBuilder(time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC))
	b.Add(evidence.EventsName, []byte(`{"type":"turn.started","eventId":"evt_1"}`+"\n"))
	b.Add(evidence.ReceiptsName, nil)
	m, _, err := b.Finish(evidence.Manifest{SessionID: "ses_1", TurnID: "turn_1", Counts: evidence.Counts{Events: 1}})
	if err != nil {
		panic(err)
	}
	var bundle bytes.Buffer
	b.WriteTo(&bundle)
	rep := evidence.Verify(&bundle, nil)
	fmt.Println(m.Members[0].Name, m.Members[0].Bytes, rep.OK)
	// Output: events.jsonl 42 true
}
