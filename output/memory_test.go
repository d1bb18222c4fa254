package output_test

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"runtime"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/output"
)

// streamSecret is a configured secret value of the generated streams.
const streamSecret = "db-pass-" + "Zq8xv1Lm"

// logStream writes about size bytes of log lines to w, with a secret
// every 40,000 lines (about every 3 MB), or, when redacted, what a
// Redactor makes of them. It returns the counts the secrets make.
func logStream(w io.Writer, size int, redacted bool) (output.Counts, error) {
	counts := output.Counts{}
	secrets := []struct{ raw, red, kind string }{
		{"auth token=" + fakeGitHub + " ok\n", "auth token=[REDACTED:github_token] ok\n", "github_token"},
		{"connecting with " + streamSecret + "\n", "connecting with [REDACTED:secret_env]\n", "secret_env"},
		{"key:\n" + fakePEM + "\n", "key:\n[REDACTED:private_key]\n", "private_key"},
		{`{"headers":{"Authorization":"Bearer ` + fakeBearer + `"}}` + "\n", `{"headers":{"Authorization":"Bearer [REDACTED:bearer_token]"}}` + "\n", "bearer_token"},
	}
	var line []byte
	written := 0
	for i := 0; written < size; i++ {
		line = line[:0]
		if i%40_000 == 39_999 {
			s := secrets[(i/40_000)%len(secrets)]
			counts[s.kind]++
			if redacted {
				line = append(line, s.red...)
			} else {
				line = append(line, s.raw...)
			}
			written += len(s.raw)
		} else {
			line = fmt.Appendf(line, "2026-01-02T15:04:%02d.%06dZ INFO http: GET /api/v1/items/%d 200 %dms id=%08x\n",
				i%60, i%1_000_000, i, i%97, i*2654435761)
			written += len(line)
		}
		if _, err := w.Write(line); err != nil {
			return nil, err
		}
	}
	return counts, nil
}

// sizeHash counts and hashes what is written to it.
type sizeHash struct {
	n int64
	h hash.Hash
}

func (s *sizeHash) Write(p []byte) (int, error) {
	s.n += int64(len(p))
	return s.h.Write(p)
}

// heapMeter samples the heap in use as a stream goes through.
type heapMeter struct {
	base, peak, live uint64
	ms               runtime.MemStats
}

func newHeapMeter() *heapMeter {
	m := &heapMeter{}
	runtime.GC()
	runtime.ReadMemStats(&m.ms)
	m.base = m.ms.HeapInuse
	return m
}

// sample records the heap in use, and after a collection (when gc) the
// live heap.
func (m *heapMeter) sample(gc bool) {
	if gc {
		runtime.GC()
	}
	runtime.ReadMemStats(&m.ms)
	growth := m.ms.HeapInuse - min(m.ms.HeapInuse, m.base)
	m.peak = max(m.peak, growth)
	if gc {
		m.live = max(m.live, growth)
	}
}

// meteredWriter samples the meter every MiB written through it.
type meteredWriter struct {
	w       io.Writer
	m       *heapMeter
	n, next int
}

func (w *meteredWriter) Write(p []byte) (int, error) {
	w.n += len(p)
	if w.n >= w.next {
		w.m.sample(w.next%(16<<20) == 0)
		w.next += 1 << 20
	}
	return w.w.Write(p)
}

// TestStreamMemory sends 100 MB with a few secrets through a RedactWriter
// into a Sink, in 32 KiB writes, and checks that the heap stays small,
// the stored output is the redacted stream and holds no secret. It is
// not parallel: other tests' allocations would blur the measure.
func TestStreamMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("streams 100 MB")
	}
	const size = 100 << 20
	b := setupStore(t)
	r := output.NewRedactor(output.RedactorConfig{Secrets: []string{streamSecret}})

	want := &sizeHash{h: sha256.New()}
	wantCounts, err := logStream(want, size, true)
	if err != nil {
		t.Fatal(err)
	}

	meter := newHeapMeter()
	k := b.store.Sink(output.Limits{})
	w := r.Writer(k)
	chunks := bufio.NewWriterSize(&meteredWriter{w: w, m: meter}, 32<<10)
	if _, err := logStream(chunks, size, false); err != nil {
		t.Fatal(err)
	}
	if err := chunks.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	sp, err := k.Close()
	if err != nil {
		t.Fatal(err)
	}
	meter.sample(true)
	t.Logf("heap growth: peak %.2f MB in use, %.2f MB live", float64(meter.peak)/1e6, float64(meter.live)/1e6)
	if meter.peak > 20<<20 {
		t.Errorf("the heap grew by %d bytes, over 20 MiB", meter.peak)
	}

	if diff := cmp.Diff(wantCounts, w.Counts()); diff != "" {
		t.Errorf("counts (-want +got):\n%s", diff)
	}
	wantRef := "sha256:" + hex.EncodeToString(want.h.Sum(nil))
	if !sp.Spilled || sp.Truncated || sp.Bytes != want.n || sp.Stored != want.n || sp.Ref != wantRef {
		t.Errorf("spill = spilled %v, truncated %v, %d bytes, %d stored, ref %s; want a spill of %d bytes, ref %s",
			sp.Spilled, sp.Truncated, sp.Bytes, sp.Stored, sp.Ref, want.n, wantRef)
	}

	// Read the stored output back, hashing it and looking for secrets
	// across the reads' boundaries.
	rc, err := b.store.Open(sp.Ref)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	needles := [][]byte{[]byte(streamSecret), []byte(fakeGitHub), []byte(fakeBearer), []byte("PRIVATE KEY"), []byte(fakePEMBody[:40])}
	got := &sizeHash{h: sha256.New()}
	buf := make([]byte, 64<<10)
	overlap := 0
	for {
		n, err := rc.Read(buf[overlap:])
		got.Write(buf[overlap : overlap+n])
		window := buf[:overlap+n]
		for _, nd := range needles {
			if i := bytes.Index(window, nd); i >= 0 {
				t.Fatalf("the stored output holds a secret near byte %d", got.n-int64(len(window)-i))
			}
		}
		keep := min(len(window), 64)
		overlap = copy(buf, window[len(window)-keep:])
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if gotRef := "sha256:" + hex.EncodeToString(got.h.Sum(nil)); got.n != want.n || gotRef != wantRef {
		t.Errorf("the stored file has %d bytes, %s; want %d, %s", got.n, gotRef, want.n, wantRef)
	}
}
