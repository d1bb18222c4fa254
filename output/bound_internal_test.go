package output

import (
	"io"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestWriterHoldsBackLittle checks the bound on what a RedactWriter
// holds back, with text built to make it hold the most: long words, runs
// of blanks in a PEM block, long lines and secrets cut by writes.
func TestWriterHoldsBackLittle(t *testing.T) {
	t.Parallel()

	secrets := []string{strings.Repeat("s3cret", 100)} // 600 bytes
	r := NewRedactor(RedactorConfig{Secrets: secrets})
	w := r.Writer(io.Discard)
	bound := len(secrets[0]) + scanWindow + pemMaxBlank + pemWindow
	parts := []string{
		strings.Repeat("word", 5000), " ", "-----BEGIN PRIVATE KEY-----\nAbc\n", strings.Repeat(" ", 3000), "x\n",
		secrets[0], "eyJhbGciOiJIUzI1NiJ9.eyJ" + strings.Repeat("A", 20000), " sk-", "\\",
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 2000 {
		p := parts[rng.IntN(len(parts))]
		for len(p) > 0 {
			n := min(len(p), 1+rng.IntN(4096))
			if _, err := w.Write([]byte(p[:n])); err != nil {
				t.Fatal(err)
			}
			p = p[n:]
			held := 0
			for _, s := range w.stages {
				held += len(s.pending)
			}
			if held > bound {
				t.Fatalf("the writer holds back %d bytes, over %d", held, bound)
			}
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}
