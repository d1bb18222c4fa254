package output_test

import (
	"bytes"
	"fmt"
	"io"
	"regexp"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/output"
)

// ordinaryLog returns about size bytes of log text without secrets:
// timestamps, paths, hex ids, UUIDs, key=value pairs and JSON.
func ordinaryLog(size int) string {
	var b bytes.Buffer
	for i := 0; b.Len() < size; i++ {
		switch i % 4 {
		case 0:
			fmt.Fprintf(&b, "2026-01-02T15:04:%02d.%06dZ INFO http: GET /api/v1/items/%d?expand=owner 200 %dms remote=10.0.%d.%d:5123\n",
				i%60, i%1_000_000, i, i%97, i%256, i%200)
		case 1:
			fmt.Fprintf(&b, `{"level":"debug","msg":"cache miss","key":"user:%d","trace_id":"%08x-e29b-41d4-a716-446655440000","took":"1.2ms"}`+"\n", i, i*2654435761)
		case 2:
			fmt.Fprintf(&b, "commit %040x\nAuthor: Build Bot <bot@example.com>\n    pkg: fix the race in the scheduler's task-queue (#%d)\n", i*7919, i)
		default:
			fmt.Fprintf(&b, "[worker-%d] processed batch %d: 128 records, 0 errors; sha256=%064x\n", i%8, i, i)
		}
	}
	return b.String()
}

func BenchmarkRedactString(b *testing.B) {
	text := ordinaryLog(1 << 20)
	configs := []struct {
		name string
		cfg  output.RedactorConfig
	}{
		{"shapes", output.RedactorConfig{}},
		{"shapes+secrets+patterns", output.RedactorConfig{
			Secrets:  []string{"db-pass-Zq8xv1Lm", "another-secret-value", "third-one-0001"},
			Patterns: []*regexp.Regexp{regexp.MustCompile(`acct-[0-9]{6}`)},
		}},
	}
	for _, c := range configs {
		b.Run(c.name, func(b *testing.B) {
			r := output.NewRedactor(c.cfg)
			b.SetBytes(int64(len(text)))
			b.ReportAllocs()
			for b.Loop() {
				if _, n := r.String(text); n.Total() != 0 {
					b.Fatalf("redacted %v in ordinary text", n)
				}
			}
		})
	}
}

func BenchmarkRedactWriter(b *testing.B) {
	text := []byte(ordinaryLog(1 << 20))
	r := output.NewRedactor(output.RedactorConfig{})
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		w := r.Writer(io.Discard)
		for p := text; len(p) > 0; {
			n := min(len(p), 32<<10)
			if _, err := w.Write(p[:n]); err != nil {
				b.Fatal(err)
			}
			p = p[n:]
		}
		if err := w.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSink measures a Sink's throughput on a 100 MB output written
// in 32 KiB chunks: hashing, writing and syncing the file.
func BenchmarkSink(b *testing.B) {
	const size = 100 << 20
	s, err := output.NewStore(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	chunk := []byte(ordinaryLog(32 << 10))[:32<<10]
	b.SetBytes(size)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		k := s.Sink(output.Limits{})
		// A different first chunk each time, so that every output is a new
		// file.
		if _, err := fmt.Fprintf(k, "run %d\n", i); err != nil {
			b.Fatal(err)
		}
		for range size / len(chunk) {
			if _, err := k.Write(chunk); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := k.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRedactNothing measures String on the short texts a runtime
// writes most (ids, names, previews, tool arguments) when they hold no
// secret: the prefilter's cost.
func BenchmarkRedactNothing(b *testing.B) {
	texts := []string{
		"echo", "call_0_0", "s-0/call_0_0", "turn_01M8EBX351HNQMCZZM5E2P7GTE",
		`{"text":"session=0 turn=0 ` + strings.Repeat("x", 182) + `"}`,
		"no policy is configured; the default evaluator allows every call",
		"final: session=12 tool_calls=5",
	}
	n := 0
	for _, s := range texts {
		n += len(s)
	}
	for _, c := range []struct {
		name string
		cfg  output.RedactorConfig
	}{
		{"shapes", output.RedactorConfig{}},
		{"shapes+secrets", output.RedactorConfig{Secrets: []string{"art_0123456789abcdef0123456789abcdef", "cfg-key-Zq8xv1Lm", "env-key-Lm2vq9Zx"}}},
	} {
		b.Run(c.name, func(b *testing.B) {
			r := output.NewRedactor(c.cfg)
			b.SetBytes(int64(n))
			b.ReportAllocs()
			for b.Loop() {
				for _, s := range texts {
					if _, n := r.String(s); n != nil {
						b.Fatalf("redacted %v in %q", n, s)
					}
				}
			}
		})
	}
}
