package output_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/output"
)

type storeBundle struct {
	store *output.Store
}

func setupStore(t *testing.T) *storeBundle {
	t.Helper()
	s, err := output.NewStore(filepath.Join(t.TempDir(), "outputs"))
	if err != nil {
		t.Fatal(err)
	}
	return &storeBundle{store: s}
}

// files lists the store directory's entries.
func (b *storeBundle) files(t *testing.T) []string {
	t.Helper()
	ents, err := os.ReadDir(b.store.Dir())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// read returns the content of ref.
func (b *storeBundle) read(t *testing.T, ref string) string {
	t.Helper()
	rc, err := b.store.Open(ref)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func refOf(data string) string {
	sum := sha256.Sum256([]byte(data))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// sinkWrite writes data to a new sink in writes of at most chunk bytes and
// closes it.
func sinkWrite(t *testing.T, s *output.Store, lim output.Limits, data string, chunk int) *output.Spill {
	t.Helper()
	k := s.Sink(lim)
	for len(data) > 0 {
		n := min(chunk, len(data))
		if m, err := k.Write([]byte(data[:n])); err != nil || m != n {
			t.Fatalf("Write = %d, %v", m, err)
		}
		data = data[n:]
	}
	sp, err := k.Close()
	if err != nil {
		t.Fatal(err)
	}
	return sp
}

func TestNewStore(t *testing.T) {
	t.Parallel()

	dir := filepath.Join(t.TempDir(), "a", "b")
	s, err := output.NewStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	if s.Dir() != dir {
		t.Errorf("Dir() = %q, want %q", s.Dir(), dir)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm != 0o700 {
		t.Errorf("directory mode = %v, want 0700", perm)
	}
	if _, err := output.NewStore(""); !errors.Is(err, fs.ErrInvalid) {
		t.Errorf("NewStore(\"\") = %v, want fs.ErrInvalid", err)
	}
}

func TestSinkInline(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name string
		data string
	}{
		{"empty", ""},
		{"short", "hello\n"},
		{"exactly the inline limit", strings.Repeat("x", 16)},
		{"utf-8", "hé wörld ☃"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setupStore(t)
			for _, chunk := range []int{1, 3, 100} {
				sp := sinkWrite(t, b.store, output.Limits{Inline: 16}, tt.data, chunk)
				want := &output.Spill{Bytes: int64(len(tt.data)), Stored: int64(len(tt.data)), Preview: tt.data, Inline: 16}
				if diff := cmp.Diff(want, sp); diff != "" {
					t.Errorf("chunk %d: spill (-want +got):\n%s", chunk, diff)
				}
			}
			if files := b.files(t); len(files) != 0 {
				t.Errorf("the store holds %v, want nothing", files)
			}
		})
	}
}

func TestSinkSpills(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name        string
		lim         output.Limits
		data        string
		wantPreview string
	}{
		{
			name:        "one byte over",
			lim:         output.Limits{Inline: 16},
			data:        "0123456789abcdefg",
			wantPreview: "01234567\n[… 1 bytes omitted; the full output is stored as " + refOf("0123456789abcdefg") + " …]\n9abcdefg",
		},
		{
			name:        "odd inline limit",
			lim:         output.Limits{Inline: 5},
			data:        "abcdefghij",
			wantPreview: "ab\n[… 5 bytes omitted; the full output is stored as " + refOf("abcdefghij") + " …]\nhij",
		},
		{
			// "é" is 2 bytes and "☃" 3: the head would end inside the
			// first, the tail start inside the second.
			name:        "runes cut at both ends",
			lim:         output.Limits{Inline: 8},
			data:        "abcé" + strings.Repeat("-", 20) + "☃xyz",
			wantPreview: "abc\n[… 25 bytes omitted; the full output is stored as " + refOf("abcé"+strings.Repeat("-", 20)+"☃xyz") + " …]\nxyz",
		},
		{
			name:        "runes whole at both ends",
			lim:         output.Limits{Inline: 10},
			data:        "abcé" + strings.Repeat("-", 20) + "☃xy",
			wantPreview: "abcé\n[… 20 bytes omitted; the full output is stored as " + refOf("abcé"+strings.Repeat("-", 20)+"☃xy") + " …]\n☃xy",
		},
		{
			name:        "invalid utf-8 is kept",
			lim:         output.Limits{Inline: 4},
			data:        "a\xff" + strings.Repeat("-", 10) + "\xfeb",
			wantPreview: "a\xff\n[… 10 bytes omitted; the full output is stored as " + refOf("a\xff"+strings.Repeat("-", 10)+"\xfeb") + " …]\n\xfeb",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setupStore(t)
			for _, chunk := range []int{1, 2, 7, 1 << 20} {
				sp := sinkWrite(t, b.store, tt.lim, tt.data, chunk)
				want := &output.Spill{
					Bytes: int64(len(tt.data)), Stored: int64(len(tt.data)),
					Spilled: true, Ref: refOf(tt.data), Preview: tt.wantPreview, Inline: tt.lim.Inline,
				}
				if diff := cmp.Diff(want, sp); diff != "" {
					t.Errorf("chunk %d: spill (-want +got):\n%s", chunk, diff)
				}
				if got := b.read(t, sp.Ref); got != tt.data {
					t.Errorf("chunk %d: stored %q, want %q", chunk, got, tt.data)
				}
			}
			// The same output, written four times, is one file.
			if diff := cmp.Diff([]string{"sha256-" + strings.TrimPrefix(refOf(tt.data), "sha256:")}, b.files(t)); diff != "" {
				t.Errorf("store files (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSinkRandomWrites checks that how an output is cut into writes does
// not change what is stored and shown.
func TestSinkRandomWrites(t *testing.T) {
	t.Parallel()

	b := setupStore(t)
	rng := rand.New(rand.NewPCG(5, 6))
	for iter := range 200 {
		var data []byte
		for range rng.IntN(400) {
			data = append(data, "aé☃𝄞\n"[rng.IntN(11)])
		}
		lim := output.Limits{Inline: 1 + rng.IntN(64), Max: int64(rng.IntN(300))}
		want, err := b.store.Put(data, lim)
		if err != nil {
			t.Fatal(err)
		}
		got := sinkWrite(t, b.store, lim, string(data), 1+rng.IntN(50))
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("iteration %d: sink and Put differ (-Put +sink):\n%s", iter, diff)
		}
		if !got.Spilled {
			continue
		}
		if got.Stored != min(int64(len(data)), max(lim.Max, int64(lim.Inline))) {
			t.Fatalf("iteration %d: stored %d of %d bytes under %+v", iter, got.Stored, len(data), lim)
		}
		if stored := b.read(t, got.Ref); stored != string(data[:got.Stored]) {
			t.Fatalf("iteration %d: the stored output is not the output's head", iter)
		}
	}
}

func TestSinkMax(t *testing.T) {
	t.Parallel()

	b := setupStore(t)
	data := strings.Repeat("0123456789", 10)
	sp := sinkWrite(t, b.store, output.Limits{Inline: 10, Max: 25}, data, 7)
	stored := data[:25]
	want := &output.Spill{
		Bytes: 100, Stored: 25, Truncated: true, Spilled: true, Ref: refOf(stored), Inline: 10,
		Preview: "01234\n[… 90 bytes omitted; its first 25 bytes are stored as " + refOf(stored) + " …]\n56789",
	}
	if diff := cmp.Diff(want, sp); diff != "" {
		t.Errorf("spill (-want +got):\n%s", diff)
	}
	if got := b.read(t, sp.Ref); got != stored {
		t.Errorf("stored %q, want %q", got, stored)
	}

	// A Max below Inline counts as Inline.
	sp = sinkWrite(t, b.store, output.Limits{Inline: 10, Max: 3}, data, 100)
	if sp.Stored != 10 || !sp.Truncated {
		t.Errorf("Max below Inline: stored %d, truncated %v; want 10, true", sp.Stored, sp.Truncated)
	}
}

func TestSinkDefaults(t *testing.T) {
	t.Parallel()

	b := setupStore(t)
	sp, err := b.store.Put([]byte("x"), output.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if sp.Inline != output.DefaultInline {
		t.Errorf("Inline = %d, want %d", sp.Inline, output.DefaultInline)
	}
	data := bytes.Repeat([]byte("y"), output.DefaultInline+1)
	sp, err = b.store.Put(data, output.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if !sp.Spilled || sp.Ref != refOf(string(data)) {
		t.Errorf("Put(DefaultInline+1 bytes) = spilled %v, ref %q", sp.Spilled, sp.Ref)
	}
}

func TestSinkDiscard(t *testing.T) {
	t.Parallel()

	b := setupStore(t)
	k := b.store.Sink(output.Limits{Inline: 4})
	if _, err := k.Write([]byte("more than four bytes")); err != nil {
		t.Fatal(err)
	}
	if len(b.files(t)) != 1 {
		t.Fatalf("the store holds %v, want the sink's temporary file", b.files(t))
	}
	k.Discard()
	k.Discard()
	if files := b.files(t); len(files) != 0 {
		t.Errorf("after Discard the store holds %v, want nothing", files)
	}
	if _, err := k.Write([]byte("x")); !errors.Is(err, fs.ErrClosed) {
		t.Errorf("Write after Discard = %v, want fs.ErrClosed", err)
	}
	if _, err := k.Close(); !errors.Is(err, fs.ErrClosed) {
		t.Errorf("Close after Discard = %v, want fs.ErrClosed", err)
	}
}

func TestSinkClosed(t *testing.T) {
	t.Parallel()

	b := setupStore(t)
	k := b.store.Sink(output.Limits{Inline: 4})
	if _, err := k.Write([]byte("0123456789")); err != nil {
		t.Fatal(err)
	}
	sp, err := k.Close()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := k.Write([]byte("x")); !errors.Is(err, fs.ErrClosed) {
		t.Errorf("Write after Close = %v, want fs.ErrClosed", err)
	}
	if _, err := k.Close(); !errors.Is(err, fs.ErrClosed) {
		t.Errorf("second Close = %v, want fs.ErrClosed", err)
	}
	// Discard after Close keeps the stored output: it may be shared.
	k.Discard()
	if got := b.read(t, sp.Ref); got != "0123456789" {
		t.Errorf("stored %q after Discard", got)
	}
}

func TestStoreOpen(t *testing.T) {
	t.Parallel()

	b := setupStore(t)
	sp, err := b.store.Put([]byte("0123456789"), output.Limits{Inline: 4})
	if err != nil {
		t.Fatal(err)
	}
	sum := strings.TrimPrefix(sp.Ref, "sha256:")
	bad := []string{
		"", "sha256:", "sha256:../x", "sha256:../../etc/passwd", "sha256:" + strings.ToUpper(sum),
		"sha256:" + sum[:63], "sha256:" + sum + "0", "sha256:" + sum[:63] + "g", "sha256:" + sum[:62] + "/.",
		"SHA256:" + sum, "sha256-" + sum, "sha512:" + sum, " sha256:" + sum, "sha256:" + sum + "\n",
	}
	for _, ref := range bad {
		if rc, err := b.store.Open(ref); !errors.Is(err, fs.ErrInvalid) {
			if rc != nil {
				rc.Close()
			}
			t.Errorf("Open(%q) = %v, want fs.ErrInvalid", ref, err)
		}
	}
	if _, err := b.store.Open(refOf("not stored")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Open(a ref not stored) = %v, want fs.ErrNotExist", err)
	}
	if got := b.read(t, sp.Ref); got != "0123456789" {
		t.Errorf("Open(%q) reads %q", sp.Ref, got)
	}
}

// TestStoreConcurrent has sinks write the same and different outputs at
// once: each gets its file, identical ones share it, and no temporary
// file is left.
func TestStoreConcurrent(t *testing.T) {
	t.Parallel()

	b := setupStore(t)
	var wg sync.WaitGroup
	refs := make([]string, 16)
	for i := range refs {
		wg.Go(func() {
			data := strings.Repeat(fmt.Sprintf("output %d\n", i%4), 1000)
			sp, err := b.store.Put([]byte(data), output.Limits{Inline: 100})
			if err != nil {
				t.Error(err)
				return
			}
			refs[i] = sp.Ref
		})
	}
	wg.Wait()
	for i, ref := range refs {
		if want := refOf(strings.Repeat(fmt.Sprintf("output %d\n", i%4), 1000)); ref != want {
			t.Errorf("output %d: ref %q, want %q", i, ref, want)
		}
	}
	if files := b.files(t); len(files) != 4 {
		t.Errorf("the store holds %v, want 4 files", files)
	}
}
