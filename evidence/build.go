package evidence

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"
)

// ErrChanged: a member read from an opener changed between Finish and
// WriteTo.
var ErrChanged = errors.New("member changed while the bundle was written")

// Builder assembles a bundle: Add members, Finish the manifest, then
// WriteTo an archive. A Builder is not safe for concurrent use.
type Builder struct {
	modTime  time.Time
	members  []*buildMember
	names    map[string]bool
	manifest []byte // set by Finish
}

type buildMember struct {
	name   string
	data   []byte                        // or
	open   func() (io.ReadCloser, error) // read twice: by Finish to hash, by WriteTo to copy
	bytes  int64
	sha256 string
}

// NewBuilder returns a Builder whose tar headers all carry modTime (cut
// to whole seconds; the Unix epoch when zero).
func NewBuilder(modTime time.Time) *Builder {
	if modTime.IsZero() {
		modTime = time.Unix(0, 0)
	}
	return &Builder{modTime: modTime.UTC().Truncate(time.Second), names: map[string]bool{}}
}

// Add adds a member held in memory.
func (b *Builder) Add(name string, data []byte) error {
	if err := b.check(name); err != nil {
		return err
	}
	b.members = append(b.members, &buildMember{name: name, data: data})
	return nil
}

// AddJSON adds a member holding v as indented JSON.
func (b *Builder) AddJSON(name string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding %s: %w", name, err)
	}
	return b.Add(name, append(data, '\n'))
}

// AddReader adds a member read through open, for large contents: Finish
// reads it once to hash it and WriteTo once more to copy it, failing
// with ErrChanged when the two differ.
func (b *Builder) AddReader(name string, open func() (io.ReadCloser, error)) error {
	if err := b.check(name); err != nil {
		return err
	}
	b.members = append(b.members, &buildMember{name: name, open: open})
	return nil
}

// Has reports whether a member of that name was added.
func (b *Builder) Has(name string) bool { return b.names[name] }

func (b *Builder) check(name string) error {
	if b.manifest != nil {
		return errors.New("adding a member to a finished bundle")
	}
	if err := checkName(name); err != nil {
		return err
	}
	if name == ManifestName || name == SignatureName {
		return fmt.Errorf("%s is written by the bundle itself", name)
	}
	if b.names[name] {
		return fmt.Errorf("duplicate member %s", name)
	}
	b.names[name] = true
	return nil
}

// Finish hashes every member, lists them in m.Members in the order they
// were added, sets m.FormatVersion and m.BundleID, and encodes the
// manifest. It returns the manifest as written and its encoding.
func (b *Builder) Finish(m Manifest) (*Manifest, []byte, error) {
	if b.manifest != nil {
		return nil, nil, errors.New("finishing a bundle twice")
	}
	m.Members = make([]Member, 0, len(b.members))
	for _, bm := range b.members {
		if bm.open == nil {
			sum := sha256.Sum256(bm.data)
			bm.bytes, bm.sha256 = int64(len(bm.data)), hex.EncodeToString(sum[:])
		} else {
			n, sum, err := hashOpen(bm.open)
			if err != nil {
				return nil, nil, fmt.Errorf("reading %s: %w", bm.name, err)
			}
			bm.bytes, bm.sha256 = n, sum
		}
		m.Members = append(m.Members, Member{Name: bm.name, Bytes: bm.bytes, SHA256: bm.sha256})
	}
	if m.Signals == nil {
		m.Signals = map[string]Signal{}
	}
	if m.KnownGaps == nil {
		m.KnownGaps = []string{}
	}
	if m.RunIDs == nil {
		m.RunIDs = []string{}
	}
	m.FormatVersion, m.BundleID = FormatVersion, ""
	unnamed, err := json.Marshal(m)
	if err != nil {
		return nil, nil, fmt.Errorf("encoding the manifest: %w", err)
	}
	sum := sha256.Sum256(unnamed)
	m.BundleID = "evd_" + hex.EncodeToString(sum[:16])
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, nil, fmt.Errorf("encoding the manifest: %w", err)
	}
	b.manifest = append(data, '\n')
	return &m, slices.Clone(b.manifest), nil
}

func hashOpen(open func() (io.ReadCloser, error)) (int64, string, error) {
	rc, err := open()
	if err != nil {
		return 0, "", err
	}
	defer rc.Close()
	h := sha256.New()
	n, err := io.Copy(h, rc)
	if err != nil {
		return 0, "", err
	}
	return n, hex.EncodeToString(h.Sum(nil)), nil
}

// WriteTo writes the finished bundle to w as a .tar.gz.
func (b *Builder) WriteTo(w io.Writer) (int64, error) {
	if b.manifest == nil {
		return 0, errors.New("writing a bundle before Finish")
	}
	cw := &countingWriter{w: w}
	aw := newArchiveWriter(cw, b.modTime)
	if err := aw.add(ManifestName, int64(len(b.manifest)), bytes.NewReader(b.manifest)); err != nil {
		return cw.n, err
	}
	for _, bm := range b.members {
		if err := b.writeMember(aw, bm); err != nil {
			return cw.n, err
		}
	}
	return cw.n, aw.close()
}

func (b *Builder) writeMember(aw *archiveWriter, bm *buildMember) error {
	if bm.open == nil {
		return aw.add(bm.name, bm.bytes, bytes.NewReader(bm.data))
	}
	rc, err := bm.open()
	if err != nil {
		return fmt.Errorf("reading %s: %w", bm.name, err)
	}
	defer rc.Close()
	h := sha256.New()
	// tar refuses more or fewer bytes than the header says.
	if err := aw.add(bm.name, bm.bytes, io.TeeReader(rc, h)); err != nil {
		if errors.Is(err, tar.ErrWriteTooLong) || errors.Is(err, io.ErrUnexpectedEOF) {
			return fmt.Errorf("%s: %w", bm.name, ErrChanged)
		}
		return err
	}
	if extra, _ := rc.Read(make([]byte, 1)); extra > 0 || hex.EncodeToString(h.Sum(nil)) != bm.sha256 {
		return fmt.Errorf("%s: %w", bm.name, ErrChanged)
	}
	return nil
}

// archiveWriter writes members into a deterministic .tar.gz.
type archiveWriter struct {
	gz      *gzip.Writer
	tw      *tar.Writer
	modTime time.Time
}

func newArchiveWriter(w io.Writer, modTime time.Time) *archiveWriter {
	gz := gzip.NewWriter(w) // no name, no time in the gzip header
	return &archiveWriter{gz: gz, tw: tar.NewWriter(gz), modTime: modTime}
}

func (a *archiveWriter) add(name string, size int64, r io.Reader) error {
	hdr := &tar.Header{Typeflag: tar.TypeReg, Name: name, Size: size, Mode: 0o644, ModTime: a.modTime}
	if err := a.tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("writing %s: %w", name, err)
	}
	n, err := io.Copy(a.tw, r)
	switch {
	case err != nil:
		return fmt.Errorf("writing %s: %w", name, err)
	case n != size:
		return fmt.Errorf("writing %s: %w", name, io.ErrUnexpectedEOF)
	}
	return nil
}

func (a *archiveWriter) close() error {
	if err := a.tw.Close(); err != nil {
		return fmt.Errorf("closing the archive: %w", err)
	}
	if err := a.gz.Close(); err != nil {
		return fmt.Errorf("closing the archive: %w", err)
	}
	return nil
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
