package yamlpos

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestParse(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name    string
		src     string
		wantDoc bool
		next    Pos
		err     *SyntaxError
	}{
		{name: "Empty", src: ""},
		{name: "OnlyComments", src: "# nothing\n"},
		{name: "OneDocument", src: "a: 1\n", wantDoc: true},
		{name: "AfterMarker", src: "---\na: 1\n", wantDoc: true},
		{name: "SecondDocument", src: "a: 1\n---\nb: 2\n", wantDoc: true, next: Pos{2, 1}},
		{name: "SyntaxError", src: "a: [1, 2\n", err: &SyntaxError{Pos: Pos{1, 4}, Message: "sequence end token ']' not found"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			doc, next, err := Parse([]byte(tt.src), Options{})
			var se *SyntaxError
			if tt.err != nil {
				if !errors.As(err, &se) {
					t.Fatalf("Parse error = %v, want a *SyntaxError", err)
				}
				if diff := cmp.Diff(tt.err, se); diff != "" {
					t.Errorf("syntax error mismatch (-want +got):\n%s", diff)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if got := doc != nil; got != tt.wantDoc {
				t.Errorf("Parse returned a document: %v, want %v", got, tt.wantDoc)
			}
			if next != tt.next {
				t.Errorf("next document at %v, want %v", next, tt.next)
			}
		})
	}
}

func TestScalars(t *testing.T) {
	t.Parallel()

	src := lines(
		"s: hello",
		"q: '1e3'",
		"p: 1e3",
		"i: 0x10",
		"u: 18446744073709551615",
		"f: 1.0e6",
		"inf: -.inf",
		"b: true",
		"n: ~",
		"lit: |",
		"  two",
		"  lines",
	)
	b := setup(t, src, Options{})
	type scalar struct {
		Kind        Kind
		Text, Num   string
		Int         int64
		IntOK, Bool bool
		Plain       bool
	}
	var got []scalar
	for _, f := range b.doc.Root().Fields() {
		v := f.Value()
		got = append(got, scalar{v.Kind, v.Text, v.Num, v.Int, v.IntOK, v.Bool, v.PlainNumber()})
	}
	want := []scalar{
		{Kind: String, Text: "hello"},
		{Kind: String, Text: "1e3"},
		{Kind: String, Text: "1e3", Plain: true},
		{Kind: Int, Text: "0x10", Num: "16", Int: 16, IntOK: true},
		{Kind: Int, Text: "18446744073709551615", Num: "18446744073709551615"},
		{Kind: Float, Text: "1.0e6", Num: "1000000"},
		{Kind: Float, Text: "-.inf"},
		{Kind: Bool, Text: "true", Bool: true},
		{Kind: Null, Text: "~"},
		{Kind: String, Text: "two\nlines\n"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("scalars mismatch (-want +got):\n%s", diff)
	}
	if b.problems != nil {
		t.Errorf("problems = %q, want none", b.problems)
	}
}

func TestPositions(t *testing.T) {
	t.Parallel()

	src := lines(
		"anchored: &a 42",
		"alias: *a",
		"tagged: !!str 7",
		"block:",
		"  k: v",
		"empty:",
		"list:",
		"  -",
		"  - ~",
		"flow: [x, ~]",
	)
	tests := []struct {
		name string
		opts Options
		want []string
	}{
		{
			name: "FirstToken",
			want: []string{"1:11", "2:8", "3:9", "5:4", "6:7", "8:4", "9:5", "10:11"},
		},
		{
			name: "EntryPositions",
			opts: Options{EntryPositions: true},
			want: []string{"1:14", "2:8", "3:9", "5:3", "6:1", "8:3", "9:3", "10:11"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, src, tt.opts)
			var got []string
			for _, key := range []string{"anchored", "alias", "tagged", "block", "empty"} {
				got = append(got, posString(b.field(t, key).Pos))
			}
			for _, item := range b.field(t, "list").Items() {
				got = append(got, posString(item.Pos))
			}
			got = append(got, posString(b.field(t, "flow").Items()[1].Pos))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("positions mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func posString(p Pos) string {
	return fmt.Sprintf("%d:%d", p.Line, p.Column)
}

func lines(l ...string) string {
	return strings.Join(l, "\n") + "\n"
}

func TestAliases(t *testing.T) {
	t.Parallel()

	t.Run("LatestAnchorBefore", func(t *testing.T) {
		t.Parallel()
		b := setup(t, lines("a: &x 1", "b: *x", "c: &x 2", "d: *x"), Options{})
		if got := []string{b.field(t, "b").Text, b.field(t, "d").Text}; !cmp.Equal(got, []string{"1", "2"}) {
			t.Errorf("aliases resolve to %q, want [1 2]", got)
		}
	})
	t.Run("Unknown", func(t *testing.T) {
		t.Parallel()
		b := setup(t, lines("a: *nope", "b: 1"), Options{})
		if v := b.field(t, "a"); v != nil {
			t.Errorf("unknown alias resolves to %+v, want nil", v)
		}
		if diff := cmp.Diff([]string{"1:4 unknown alias *nope"}, b.problems); diff != "" {
			t.Errorf("problems mismatch (-want +got):\n%s", diff)
		}
	})
	t.Run("SelfReference", func(t *testing.T) {
		t.Parallel()
		b := setup(t, "a: &s {self: *s}\n", Options{})
		v := b.field(t, "a")
		for range 3 {
			v = v.Fields()[0].Value()
		}
		if v.Kind != Map || v.Pos != (Pos{1, 14}) {
			t.Errorf("self-reference three levels down = %v at %v, want a mapping at 1:14", v.Kind, v.Pos)
		}
	})
	t.Run("Loop", func(t *testing.T) {
		t.Parallel()
		b := setup(t, "a: &s !!str *s\n", Options{})
		if v := b.field(t, "a"); v != nil {
			t.Errorf("alias to itself resolves to %+v, want nil", v)
		}
		if diff := cmp.Diff([]string{"1:12 aliases nested too deeply"}, b.problems); diff != "" {
			t.Errorf("problems mismatch (-want +got):\n%s", diff)
		}
	})
	t.Run("UnresolvedFieldsAreLazy", func(t *testing.T) {
		t.Parallel()
		b := setup(t, lines("ignored: *nope", "b: 1"), Options{})
		if got := keys(b.doc.Root()); !cmp.Equal(got, []string{"ignored@1:1", "b@2:1"}) {
			t.Errorf("keys = %q", got)
		}
		if b.problems != nil {
			t.Errorf("problems = %q, want none until the value is read", b.problems)
		}
	})
}

func TestTags(t *testing.T) {
	t.Parallel()

	src := lines(
		"str: !!str 7",
		"float: !!float 3",
		"same: !!int 4",
		"custom: !custom x",
		"bad: !!int abc",
	)
	t.Run("Kept", func(t *testing.T) {
		t.Parallel()
		b := setup(t, src, Options{})
		var got []string
		for _, f := range b.doc.Root().Fields() {
			v := f.Value()
			got = append(got, v.Kind.String()+" "+v.Tag)
		}
		want := []string{"an integer !!str", "an integer !!float", "an integer !!int", "a string !custom", "a string !!int"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("kinds mismatch (-want +got):\n%s", diff)
		}
		if b.problems != nil {
			t.Errorf("problems = %q, want none", b.problems)
		}
	})
	t.Run("CoreTags", func(t *testing.T) {
		t.Parallel()
		b := setup(t, src, Options{CoreTags: true})
		var got []*Value
		for _, f := range b.doc.Root().Fields() {
			got = append(got, f.Value())
		}
		want := []*Value{
			{Kind: String, Pos: Pos{1, 6}, Tag: "!!str", Text: "7"},
			{Kind: Float, Pos: Pos{2, 8}, Tag: "!!float", Text: "3", Num: "3"},
			{Kind: Int, Pos: Pos{3, 7}, Tag: "!!int", Text: "4", Num: "4", Int: 4, IntOK: true},
			nil,
			nil,
		}
		if diff := cmp.Diff(want, got, cmpopts.IgnoreUnexported(Value{})); diff != "" {
			t.Errorf("values mismatch (-want +got):\n%s", diff)
		}
		wantProblems := []string{"4:9 unsupported tag !custom (only the standard tags !!str, !!int, !!float, !!bool, !!null, !!map and !!seq are)", "5:6 value tagged !!int is a string"}
		if diff := cmp.Diff(wantProblems, b.problems); diff != "" {
			t.Errorf("problems mismatch (-want +got):\n%s", diff)
		}
	})
}

func TestFields(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name     string
		src      string
		want     []string
		problems []string
	}{
		{
			name: "MergesInPlaceExplicitKeysWin",
			src:  lines("base: &b {x: 1, y: 2}", "m: {a: 0, <<: *b, x: 3}"),
			want: []string{"a@2:5", "y@1:17", "x@2:19"},
		},
		{
			name: "EarlierMergeWins",
			src:  lines("m: {<<: [{x: 1}, {x: 2, y: 3}]}"),
			want: []string{"x@1:11", "y@1:25"},
		},
		{
			name:     "BadMerges",
			src:      lines("m: {<<: [1, {x: 1}], k: v}"),
			want:     []string{"x@1:14", "k@1:22"},
			problems: []string{"1:10 merge key (<<) needs a mapping or a list of mappings, got integer 1"},
		},
		{
			name:     "MergeSelf",
			src:      lines("m: &m {<<: *m, k: 1}"),
			want:     []string{"k@1:16"},
			problems: []string{"1:12 merge key (<<) merges a mapping into itself"},
		},
		{
			name:     "KeyNotScalar",
			src:      lines("m: {~: 1, k: 2}"),
			want:     []string{"k@1:11"},
			problems: []string{"1:5 mapping keys must be strings, got null"},
		},
		{
			name:     "DuplicateThroughAlias",
			src:      lines("k: &k a", "m:", "  a: 1", "  *k : 2"),
			want:     []string{"a@3:3"},
			problems: []string{`4:3 duplicate key "a" (first defined at line 3, column 3)`},
		},
		{
			name:     "TooManyMerges",
			src:      mergeLadder(15) + "m: {<<: *m15}\n",
			want:     []string{"k@1:10"},
			problems: []string{"4:20 too many merges (more than 10000); simplify the merge keys (<<)"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, tt.src, Options{})
			if diff := cmp.Diff(tt.want, keys(b.field(t, "m"))); diff != "" {
				t.Errorf("keys mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.problems, b.problems); diff != "" {
				t.Errorf("problems mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// mergeLadder returns anchors m0..mN where each merges the one before it
// twice, so expanding mN takes 2^(N+1)-2 merges.
func mergeLadder(n int) string {
	var b strings.Builder
	b.WriteString("m0: &m0 {k: 1}\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "m%d: &m%d {<<: [*m%d, *m%d]}\n", i, i, i-1, i-1)
	}
	return b.String()
}
