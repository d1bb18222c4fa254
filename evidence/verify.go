package evidence

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

// Limits bound what Verify and Sign read from an archive, which may come
// from anyone. Zero fields take the defaults.
type Limits struct {
	// MaxMembers bounds the number of members (default 100 000).
	MaxMembers int
	// MaxMemberBytes bounds one member's size (default 1 GiB).
	MaxMemberBytes int64
	// MaxTotalBytes bounds the sum of the members' sizes, so that a small
	// archive cannot unpack into an unbounded stream (default 16 GiB).
	MaxTotalBytes int64
	// MaxParsedBytes bounds the members read into memory to be parsed:
	// manifest.json, events.jsonl, receipts.jsonl (default 256 MiB) and
	// signature.json (64 KiB regardless).
	MaxParsedBytes int64
}

func (l Limits) withDefaults() Limits {
	if l.MaxMembers <= 0 {
		l.MaxMembers = 100_000
	}
	if l.MaxMemberBytes <= 0 {
		l.MaxMemberBytes = 1 << 30
	}
	if l.MaxTotalBytes <= 0 {
		l.MaxTotalBytes = 16 << 30
	}
	if l.MaxParsedBytes <= 0 {
		l.MaxParsedBytes = 256 << 20
	}
	return l
}

const maxSignatureBytes = 64 << 10

// VerifyOptions are Verify's options; the zero value checks hashes and
// the receipt chain, and a signature against its own key only.
type VerifyOptions struct {
	// PublicKey, when set, is the key the bundle must be signed with.
	PublicKey ed25519.PublicKey
	Limits    Limits
}

// MemberStatus is what Verify found of one member.
type MemberStatus string

// The member statuses of a Report.
const (
	MemberOK        MemberStatus = "ok"
	MemberMismatch  MemberStatus = "mismatch"  // its size or hash is not the manifest's
	MemberMissing   MemberStatus = "missing"   // listed in the manifest, absent from the archive
	MemberUnlisted  MemberStatus = "unlisted"  // in the archive, not in the manifest
	MemberDuplicate MemberStatus = "duplicate" // a second member of the same name
	MemberUnsafe    MemberStatus = "unsafe"    // a name leaving the bundle, or not a regular file
	MemberTooLarge  MemberStatus = "too_large" // past a Limit
	MemberInvalid   MemberStatus = "invalid"   // its hash matches, its content is wrong (a broken receipt chain, a bad signature)
)

// MemberResult is one member's line in a Report.
type MemberResult struct {
	Name   string       `json:"name"`
	Status MemberStatus `json:"status"`
	Bytes  int64        `json:"bytes"`
	SHA256 string       `json:"sha256,omitempty"`
	Reason string       `json:"reason,omitempty"`
}

// SignatureStatus says what Verify made of signature.json.
type SignatureStatus string

// The signature statuses of a Report.
const (
	SignatureAbsent SignatureStatus = "absent" // the bundle is not signed
	// SignatureUnchecked: signed, and the signature verifies with the
	// public key it carries, but no trusted key was given to check who
	// signed it.
	SignatureUnchecked SignatureStatus = "unchecked"
	SignatureValid     SignatureStatus = "valid"   // verifies with the given public key
	SignatureInvalid   SignatureStatus = "invalid" // does not verify
)

// Report is what Verify found.
type Report struct {
	OK       bool   `json:"ok"`
	BundleID string `json:"bundleId,omitempty"`
	// Broken names the first broken member and Reason says why; Broken
	// is empty when the archive itself is unreadable (not gzip, a
	// corrupt tar).
	Broken      string          `json:"broken,omitempty"`
	Reason      string          `json:"reason,omitempty"`
	Members     []MemberResult  `json:"members"`
	Receipts    int             `json:"receipts"`
	ReceiptHead string          `json:"receiptHead,omitempty"`
	Signature   SignatureStatus `json:"signature"`
	KeyID       string          `json:"keyId,omitempty"`
	// Manifest is the bundle's manifest, when it could be read.
	Manifest *Manifest `json:"-"`
}

// ErrBroken: a bundle did not verify. Sign returns a *BrokenError.
var ErrBroken = errors.New("evidence bundle is broken")

// BrokenError names the first broken member of a bundle.
type BrokenError struct {
	Member string // empty when the archive itself is unreadable
	Reason string
}

func (e *BrokenError) Error() string {
	if e.Member == "" {
		return fmt.Sprintf("%v: %s", ErrBroken, e.Reason)
	}
	return fmt.Sprintf("%v: %s: %s", ErrBroken, e.Member, e.Reason)
}

func (e *BrokenError) Is(target error) bool { return target == ErrBroken }

// Verify reads a bundle as a stream and checks it: manifest.json comes
// first and is valid; every other member is a regular file with a safe
// name, listed once in the manifest with its size and SHA-256, and every
// listed member is present; an artifact's content matches the hash in its
// name; receipts.jsonl is an unbroken receipt chain from the session's
// first receipt whose head is the manifest's; every sealed event in
// events.jsonl reads back as its receipt sealed it; the counts of events
// and receipts are the manifest's; and signature.json, when present,
// signs manifest.json (with opts.PublicKey when given, which then must be
// present). It never extracts anything.
//
// The report names the first problem found, in archive order, then
// missing members, then content checks. Verify does not fail: an
// unreadable input is a broken bundle.
func Verify(r io.Reader, opts *VerifyOptions) *Report {
	if opts == nil {
		opts = &VerifyOptions{}
	}
	v := &verifier{opts: opts, lim: opts.Limits.withDefaults()}
	v.run(r)
	if !v.signing {
		v.checkSignature()
	}
	v.rep.OK = !v.broken
	return &v.rep
}

type verifier struct {
	opts    *VerifyOptions
	lim     Limits
	rep     Report
	broken  bool
	signing bool           // Sign: copy members to aw, ignore an old signature
	aw      *archiveWriter // created at the first member when signing
	out     io.Writer

	manifestRaw []byte
	listed      map[string]Member
	seen        map[string]bool
	ok          map[string]bool // listed members whose hash matched
	lineCounts  map[string]int  // lines of the counted .jsonl members whose hash matched
	events      []byte
	receipts    []byte
	signature   []byte
	total       int64
}

// fail records a problem with a member (appending its result); the
// first problem is the report's. An empty name is the archive itself.
func (v *verifier) fail(name string, status MemberStatus, bytes int64, format string, args ...any) {
	reason := fmt.Sprintf(format, args...)
	if !v.broken {
		v.broken, v.rep.Broken, v.rep.Reason = true, name, reason
	}
	if name != "" {
		v.rep.Members = append(v.rep.Members, MemberResult{Name: name, Status: status, Bytes: bytes, Reason: reason})
	}
}

// mark records a problem with the content of a member whose result is
// in the report as ok.
func (v *verifier) mark(name string, status MemberStatus, format string, args ...any) {
	reason := fmt.Sprintf(format, args...)
	if !v.broken {
		v.broken, v.rep.Broken, v.rep.Reason = true, name, reason
	}
	for i := len(v.rep.Members) - 1; i >= 0; i-- {
		if m := &v.rep.Members[i]; m.Name == name && m.Status == MemberOK {
			m.Status, m.Reason = status, reason
			return
		}
	}
}

func (v *verifier) run(r io.Reader) {
	v.rep.Members, v.rep.Signature = []MemberResult{}, SignatureAbsent
	v.seen, v.ok, v.lineCounts = map[string]bool{}, map[string]bool{}, map[string]int{}
	gz, err := gzip.NewReader(bufio.NewReader(r))
	if err != nil {
		v.fail("", "", 0, "not a gzip stream: %v", err)
		return
	}
	tr := tar.NewReader(gz)
	for i := 0; ; i++ {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			v.fail("", "", 0, "reading the archive: %v", err)
			return
		}
		if !v.member(i, hdr, tr) {
			return
		}
	}
	if v.listed == nil {
		v.fail(ManifestName, MemberMissing, 0, "the archive holds no members")
		return
	}
	for _, m := range v.rep.Manifest.Members {
		if !v.seen[m.Name] {
			v.fail(m.Name, MemberMissing, m.Bytes, "listed in the manifest, absent from the archive")
		}
	}
	v.checkContent()
}

// member checks one member; false stops the walk.
func (v *verifier) member(i int, hdr *tar.Header, tr io.Reader) bool {
	name := hdr.Name
	if i >= v.lim.MaxMembers {
		v.fail("", "", 0, "the archive holds more than %d members", v.lim.MaxMembers)
		return false
	}
	if err := checkName(name); err != nil {
		v.fail(name, MemberUnsafe, hdr.Size, "%v", err)
		return false
	}
	if hdr.Typeflag != tar.TypeReg || hdr.Size < 0 {
		v.fail(name, MemberUnsafe, hdr.Size, "not a regular file (tar type %q)", hdr.Typeflag)
		return false
	}
	if hdr.Size > v.lim.MaxMemberBytes {
		v.fail(name, MemberTooLarge, hdr.Size, "%d bytes, more than the limit of %d", hdr.Size, v.lim.MaxMemberBytes)
		return false
	}
	if v.total += hdr.Size; v.total > v.lim.MaxTotalBytes {
		v.fail(name, MemberTooLarge, hdr.Size, "the members exceed %d bytes in all", v.lim.MaxTotalBytes)
		return false
	}
	if v.seen[name] {
		v.fail(name, MemberDuplicate, hdr.Size, "a second member of this name")
		return true
	}
	v.seen[name] = true
	if i == 0 {
		return v.readManifest(hdr, tr)
	}
	if name == SignatureName {
		if hdr.Size > maxSignatureBytes {
			v.fail(name, MemberTooLarge, hdr.Size, "%d bytes, more than the limit of %d", hdr.Size, maxSignatureBytes)
			return false
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			v.fail("", "", 0, "reading %s: %v", name, err)
			return false
		}
		v.signature = data
		return true
	}
	want, listed := v.listed[name]
	if !listed {
		v.fail(name, MemberUnlisted, hdr.Size, "not listed in the manifest")
		return true
	}
	keep := name == EventsName || name == ReceiptsName
	if keep && hdr.Size > v.lim.MaxParsedBytes {
		v.fail(name, MemberTooLarge, hdr.Size, "%d bytes, more than the limit of %d for a member read into memory", hdr.Size, v.lim.MaxParsedBytes)
		return false
	}
	h := sha256.New()
	var buf bytes.Buffer
	lc := &lineCounter{}
	w := io.MultiWriter(h, lc)
	if keep {
		w = io.MultiWriter(h, lc, &buf)
	}
	var n int64
	var err error
	if v.aw != nil {
		counted := &countingWriter{w: w}
		err = v.aw.add(name, hdr.Size, io.TeeReader(tr, counted))
		n = counted.n
	} else {
		n, err = io.Copy(w, tr)
	}
	if err != nil {
		v.fail("", "", 0, "reading %s: %v", name, err)
		return false
	}
	sum := hex.EncodeToString(h.Sum(nil))
	claimed, isArtifact := artifactSum(name)
	switch {
	case n != want.Bytes:
		v.fail(name, MemberMismatch, n, "%d bytes, the manifest says %d", n, want.Bytes)
	case sum != want.SHA256:
		v.fail(name, MemberMismatch, n, "sha256 %s, the manifest says %s", sum, want.SHA256)
	case isArtifact && claimed != sum:
		v.fail(name, MemberMismatch, n, "sha256 %s, its name says %s", sum, claimed)
	default:
		v.rep.Members = append(v.rep.Members, MemberResult{Name: name, Status: MemberOK, Bytes: n, SHA256: sum})
		v.ok[name] = true
		v.lineCounts[name] = lc.n
		switch name {
		case EventsName:
			v.events = buf.Bytes()
		case ReceiptsName:
			v.receipts = buf.Bytes()
		}
	}
	return true
}

func (v *verifier) readManifest(hdr *tar.Header, tr io.Reader) bool {
	if hdr.Name != ManifestName {
		v.fail(ManifestName, MemberMissing, 0, "the first member is %s, not %s", hdr.Name, ManifestName)
		return false
	}
	if hdr.Size > v.lim.MaxParsedBytes {
		v.fail(ManifestName, MemberTooLarge, hdr.Size, "%d bytes, more than the limit of %d", hdr.Size, v.lim.MaxParsedBytes)
		return false
	}
	data, err := io.ReadAll(tr)
	if err != nil {
		v.fail("", "", 0, "reading %s: %v", ManifestName, err)
		return false
	}
	sum := sha256.Sum256(data)
	v.rep.Members = append(v.rep.Members, MemberResult{Name: ManifestName, Status: MemberOK, Bytes: int64(len(data)), SHA256: hex.EncodeToString(sum[:])})
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		v.mark(ManifestName, MemberInvalid, "decoding: %v", err)
		return false
	}
	if m.FormatVersion != FormatVersion {
		v.mark(ManifestName, MemberInvalid, "format version %q, want %q", m.FormatVersion, FormatVersion)
		return false
	}
	v.listed = make(map[string]Member, len(m.Members))
	for _, e := range m.Members {
		if err := checkName(e.Name); err != nil {
			v.mark(ManifestName, MemberInvalid, "lists an unsafe member: %v", err)
			return false
		}
		if _, dup := v.listed[e.Name]; dup || e.Name == ManifestName || e.Name == SignatureName {
			v.mark(ManifestName, MemberInvalid, "lists %s twice, or lists a member it cannot", e.Name)
			return false
		}
		v.listed[e.Name] = e
	}
	v.manifestRaw, v.rep.Manifest, v.rep.BundleID = data, &m, m.BundleID
	if v.signing {
		v.aw = newArchiveWriter(v.out, hdr.ModTime)
		if err := v.aw.add(ManifestName, int64(len(data)), bytes.NewReader(data)); err != nil {
			v.fail("", "", 0, "%v", err)
			return false
		}
	}
	return true
}

// counted are the members whose lines the manifest counts.
var counted = []struct {
	name  string
	count func(Counts) int
}{
	{DecisionsName, func(c Counts) int { return c.Decisions }},
	{ApprovalsName, func(c Counts) int { return c.Approvals }},
	{ToolCallsName, func(c Counts) int { return c.ToolCalls }},
	{ProviderResponsesName, func(c Counts) int { return c.ProviderResponses }},
}

// checkContent checks what the hashes cannot: the counts, the receipt
// chain, and the sealed events against their receipts.
func (v *verifier) checkContent() {
	m := v.rep.Manifest
	artifacts := 0
	for _, e := range m.Members {
		if strings.HasPrefix(e.Name, ArtifactPrefix) {
			artifacts++
		}
	}
	if artifacts != m.Counts.Artifacts {
		v.mark(ManifestName, MemberInvalid, "lists %d artifacts, and counts %d", artifacts, m.Counts.Artifacts)
	}
	for _, c := range counted {
		if n, ok := v.lineCounts[c.name]; ok && n != c.count(m.Counts) {
			v.mark(c.name, MemberInvalid, "holds %d lines, the manifest counts %d", n, c.count(m.Counts))
		}
	}
	if !v.ok[ReceiptsName] || !v.ok[EventsName] {
		return // missing or already reported
	}
	var receipts []*runtype.Receipt
	for i, line := range lines(v.receipts) {
		var r Receipt
		if err := json.Unmarshal(line, &r); err != nil {
			v.mark(ReceiptsName, MemberInvalid, "line %d: %v", i+1, err)
			return
		}
		receipts = append(receipts, r.record())
	}
	if err := store.VerifyReceipts(receipts); err != nil {
		v.mark(ReceiptsName, MemberInvalid, "%v", err)
		return
	}
	v.rep.Receipts = len(receipts)
	if n := len(receipts); n > 0 {
		v.rep.ReceiptHead = receipts[n-1].Hash
	}
	if v.rep.ReceiptHead != m.ReceiptHead {
		v.mark(ReceiptsName, MemberInvalid, "the chain's head is %q, the manifest's receiptHead %q", v.rep.ReceiptHead, m.ReceiptHead)
		return
	}
	if len(receipts) != m.Counts.Receipts {
		v.mark(ReceiptsName, MemberInvalid, "holds %d receipts, the manifest counts %d", len(receipts), m.Counts.Receipts)
		return
	}
	byEvent := make(map[string]*runtype.Receipt, len(receipts))
	for _, r := range receipts {
		byEvent[r.EventID] = r
	}
	evs := lines(v.events)
	for i, line := range evs {
		var e struct {
			Type    event.Type `json:"type"`
			EventID string     `json:"eventId"`
		}
		if err := json.Unmarshal(line, &e); err != nil {
			v.mark(EventsName, MemberInvalid, "line %d: %v", i+1, err)
			return
		}
		if r := byEvent[e.EventID]; r != nil && !bytes.Equal(r.Body, line) {
			v.mark(EventsName, MemberInvalid, "line %d: the %s event %s differs from what receipt %d sealed", i+1, e.Type, e.EventID, r.Seq)
			return
		}
	}
	if len(evs) != m.Counts.Events {
		v.mark(EventsName, MemberInvalid, "holds %d events, the manifest counts %d", len(evs), m.Counts.Events)
	}
}

// lineCounter counts newlines.
type lineCounter struct{ n int }

func (c *lineCounter) Write(p []byte) (int, error) {
	c.n += bytes.Count(p, []byte{'\n'})
	return len(p), nil
}

// lines splits JSONL into its lines, without their newlines.
func lines(data []byte) [][]byte {
	var out [][]byte
	for len(data) > 0 {
		line, rest, _ := bytes.Cut(data, []byte{'\n'})
		out, data = append(out, line), rest
	}
	return out
}
