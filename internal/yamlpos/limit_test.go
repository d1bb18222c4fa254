package yamlpos

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/goccy/go-yaml/lexer"
	"github.com/google/go-cmp/cmp"
)

// blockMapping returns a block mapping of n keys, one a line.
func blockMapping(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "k%d: v\n", i)
	}
	return b.String()
}

func TestParseLimits(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name string
		src  string
		want *LimitError // nil: parses
	}{
		{
			name: "NestedFlow",
			src:  "a: " + strings.Repeat("[", 50_000) + strings.Repeat("]", 50_000) + "\n",
			// The mapping is the first level, the first bracket the second.
			want: &LimitError{Pos: Pos{1, 3 + MaxDepth}, Message: "nested more than 256 levels deep"},
		},
		{
			name: "NestedFlowAtTheLimit",
			src:  "a: " + strings.Repeat("[", MaxDepth-1) + strings.Repeat("]", MaxDepth-1) + "\n",
		},
		{
			name: "NestedDashes",
			src:  strings.Repeat("- ", 100_000) + "x\n",
			want: &LimitError{Pos: Pos{1, 2*MaxDepth + 1}, Message: "nested more than 256 levels deep"},
		},
		{
			name: "NestedKeys",
			src:  nested(MaxDepth + 1),
			want: &LimitError{Pos: Pos{MaxDepth + 1, MaxDepth + 2}, Message: "nested more than 256 levels deep"},
		},
		{
			name: "NestedKeysAtTheLimit",
			src:  nested(MaxDepth),
		},
		{
			name: "ListsUnderKeysAtTheirColumn",
			src:  "a:\n- b:\n  - c:\n    - d: 1\n    e: 2\n  f: 3\ng: 4\n",
		},
		{
			name: "TagsInARow",
			src:  "a: " + strings.Repeat("!t ", 1000) + "x\n",
			// The parser places each tag two columns after the one before.
			want: &LimitError{Pos: Pos{1, 4 + 2*MaxDepth}, Message: "more than 256 anchors, tags and ? keys in a row"},
		},
		{
			name: "AnchorsInARow",
			src:  "a: " + strings.Repeat("&a ", 1000) + "x\n",
			want: &LimitError{Pos: Pos{1, 4 + 3*MaxDepth}, Message: "more than 256 anchors, tags and ? keys in a row"},
		},
		{
			name: "WideBlockMapping",
			src:  blockMapping(MaxBlockKeys + 1),
			want: &LimitError{Pos: Pos{MaxBlockKeys + 1, 6}, Message: "block mappings hold too many keys " +
				"(more than 4096 in one mapping, or as costly across several); write a long mapping in flow style, {key: value, …}"},
		},
		{
			name: "WideBlockMappingAtTheLimit",
			src:  blockMapping(MaxBlockKeys),
		},
		{
			name: "ManyTokens",
			src:  "a: [" + strings.Repeat("1,", MaxTokens) + "]\n",
			want: &LimitError{Pos: Pos{1, MaxTokens + 2}, Message: "the file holds more than 131072 YAML tokens (keys, values, - and such), the most agentrt reads"},
		},
		{
			name: "ProseIsCheap",
			src:  "a: |\n" + strings.Repeat("  Words, words: and more - words, [all] of them.\n", 20_000) + "b: \"" + strings.Repeat("x, ", 100_000) + "\"\n",
		},
		{
			name: "TooLarge",
			src:  "a: \"" + strings.Repeat("x", MaxFileBytes) + "\"\n",
			want: &LimitError{Message: "the file is larger than 10 MiB, the most agentrt reads"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			doc, _, err := Parse([]byte(tt.src), Options{})
			if tt.want == nil {
				if err != nil || doc == nil {
					t.Fatalf("Parse = %v, %v; want a document", doc, err)
				}
				return
			}
			var le *LimitError
			if !errors.As(err, &le) {
				t.Fatalf("Parse error = %v, want a *LimitError", err)
			}
			if diff := cmp.Diff(tt.want, le); diff != "" {
				t.Errorf("limit error mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// nested returns a block mapping nested depth levels deep, one key a
// level, each indented one more space.
func nested(depth int) string {
	var b strings.Builder
	for i := range depth {
		b.WriteString(strings.Repeat(" ", i) + "a:\n")
	}
	return b.String()
}

// TestParseNestedMemory: 200 KB of nested brackets once made the parser
// allocate about 15 GB; now the nesting limit stops it before parsing.
// Heap allocation, counted by the runtime, is what the test bounds.
func TestParseNestedMemory(t *testing.T) {
	// Not parallel: it measures the process's allocations.
	src := []byte("agents: " + strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000) + "\n")
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, _, err := Parse(src, Options{})
	runtime.ReadMemStats(&after)
	var le *LimitError
	if !errors.As(err, &le) {
		t.Fatalf("Parse error = %v, want a *LimitError", err)
	}
	const bound = 64 << 20
	got := after.TotalAlloc - before.TotalAlloc
	t.Logf("parsing 200 KB of nested brackets allocated %.1f MiB", float64(got)/(1<<20))
	if got > bound {
		t.Errorf("parsing 200 KB of nested brackets allocated %d MiB, want at most %d MiB", got>>20, bound>>20)
	}
}

func TestParseDocuments(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name string
		src  string
		next Pos
	}{
		{name: "EmptySecond", src: "a: 1\n---\n"},
		{name: "CommentSecond", src: "a: 1\n---\n# nothing\n"},
		{name: "AfterEnd", src: "a: 1\n...\nb: 2\n", next: Pos{3, 1}},
		{name: "AfterEndAndMarker", src: "a: 1\n...\n---\nb: 2\n", next: Pos{3, 1}},
		// The second document is not read, so its mistakes do not matter.
		{name: "BrokenSecond", src: "a: 1\n---\nb: [\n", next: Pos{2, 1}},
		// Nor does how many follow: they once took seconds to parse.
		{name: "ManyDocuments", src: "a: 1\n" + strings.Repeat("---\nb: 2\n", 20_000), next: Pos{2, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			doc, next, err := Parse([]byte(tt.src), Options{})
			if err != nil || doc == nil {
				t.Fatalf("Parse = %v, %v; want a document", doc, err)
			}
			if next != tt.next {
				t.Errorf("next document at %v, want %v", next, tt.next)
			}
			if got := doc.Root().Fields(); len(got) != 1 {
				t.Errorf("first document has %d keys, want 1", len(got))
			}
		})
	}
}

func TestReadFile(t *testing.T) {
	t.Parallel()

	dir := t.TempDir()
	write := func(name string, size int) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(strings.Repeat("#", size)), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	t.Run("AtTheLimit", func(t *testing.T) {
		t.Parallel()
		data, err := ReadFile(write("max.yaml", MaxFileBytes))
		if err != nil || len(data) != MaxFileBytes {
			t.Fatalf("ReadFile = %d bytes, %v; want %d bytes", len(data), err, MaxFileBytes)
		}
	})
	t.Run("PastTheLimit", func(t *testing.T) {
		t.Parallel()
		_, err := ReadFile(write("big.yaml", MaxFileBytes+1))
		var le *LimitError
		if !errors.As(err, &le) || le.Pos != (Pos{}) {
			t.Fatalf("ReadFile error = %v, want a *LimitError without a position", err)
		}
		if got, want := le.FileError("big.yaml").Error(), "big.yaml: the file is larger than 10 MiB, the most agentrt reads"; got != want {
			t.Errorf("error = %q, want %q", got, want)
		}
	})
	t.Run("Missing", func(t *testing.T) {
		t.Parallel()
		if _, err := ReadFile(filepath.Join(dir, "none.yaml")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("ReadFile error = %v, want one wrapping os.ErrNotExist", err)
		}
	})
}

// FuzzCountTokens checks that countTokens bounds the scanner's tokens
// from above, within a factor of two: the token limit is checked on its
// count, before the scanner runs.
func FuzzCountTokens(f *testing.F) {
	for _, s := range []string{
		"a: b\n", "- [1, 2]\n", "a: |\n  x\n  y\nb: 'c'\n", "a: \"x\\\"y\"\n", "? a\n: b\n",
		"a: &x !t b\n*x: c\n", "# c\na: b # d\n---\nc: d\n", "{a: [b, {c: d}]}\n", "a: >-\n  x\n\n  y\nb: 1\n",
		"%YAML 1.2\n---\na: b\n", "- a: |\n   x\n  - y\n", "a: \"x\ny\"\n", "a:\r\n  - b\r\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, _ := countTokens(s, len(s)+1)
		if want := len(lexer.Tokenize(s)); 2*got+16 < want {
			t.Errorf("countTokens = %d, the scanner makes %d tokens of %q", got, want, s)
		}
	})
}
