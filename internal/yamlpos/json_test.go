package yamlpos

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestJSON(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name string
		src  string
		opts JSONOptions
		want string
	}{
		{
			name: "KeyOrderAndTypes",
			src:  "{z: 1, a: [x, 'y', true, ~, 1.50, 0x10], m: {<<: {b: 2}, c: 3}}",
			want: `{"z":1,"a":["x","y",true,null,1.5,16],"m":{"b":2,"c":3}}`,
		},
		{
			name: "NoHTMLEscaping",
			src:  `{q: "<a & b>"}`,
			want: `{"q":"<a & b>"}`,
		},
		{
			name: "TaggedStrings",
			src:  "{a: !!str 7, b: !!str true}",
			want: `{"a":"7","b":"true"}`,
		},
		{
			name: "PlainNumbersKeptAsStrings",
			src:  "{a: 1e3, b: 99999999999999999999, c: '5'}",
			want: `{"a":"1e3","b":"99999999999999999999","c":"5"}`,
		},
		{
			name: "PlainNumbers",
			src:  "{a: 1e3, b: 99999999999999999999, c: '5', d: +1e3, e: 01, f: 1e400}",
			opts: JSONOptions{PlainNumbers: true},
			want: `{"a":1e3,"b":99999999999999999999,"c":"5","d":1e3,"e":1,"f":1e400}`,
		},
		{
			name: "AliasesExpanded",
			src:  "{a: &s {t: 1}, b: *s}",
			want: `{"a":{"t":1},"b":{"t":1}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, "v: "+tt.src+"\n", Options{})
			got, err := b.field(t, "v").JSON(tt.opts)
			if err != nil {
				t.Fatalf("JSON: %v", err)
			}
			if diff := cmp.Diff(tt.want, string(got)); diff != "" {
				t.Errorf("JSON mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// laughs is a "billion laughs" mapping: its value l5 expands to 10^6 items.
var laughs = lines(
	"l0: &l0 [a, a, a, a, a, a, a, a, a, a]",
	"l1: &l1 [*l0, *l0, *l0, *l0, *l0, *l0, *l0, *l0, *l0, *l0]",
	"l2: &l2 [*l1, *l1, *l1, *l1, *l1, *l1, *l1, *l1, *l1, *l1]",
	"l3: &l3 [*l2, *l2, *l2, *l2, *l2, *l2, *l2, *l2, *l2, *l2]",
	"l4: &l4 [*l3, *l3, *l3, *l3, *l3, *l3, *l3, *l3, *l3, *l3]",
	"l5: &l5 [*l4, *l4, *l4, *l4, *l4, *l4, *l4, *l4, *l4, *l4]",
)

func TestJSONErrors(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name    string
		src     string
		key     string
		opts    JSONOptions
		reason  JSONReason
		at      Pos // of the value at fault
		problem []string
	}{
		{
			name:   "Infinity",
			key:    "v",
			src:    "v: {a: 1, b: .inf}\n",
			reason: NotFinite,
			at:     Pos{1, 14},
		},
		{
			name:   "TooManyNodes",
			src:    laughs,
			key:    "l5",
			opts:   JSONOptions{MaxNodes: 1000},
			reason: TooManyNodes,
		},
		{
			name:   "TooLarge",
			src:    laughs,
			key:    "l5",
			opts:   JSONOptions{MaxBytes: 1 << 10},
			reason: TooLarge,
		},
		{
			name:   "SelfReferenceTooDeep",
			key:    "v",
			src:    "v: &s {self: *s}\n",
			opts:   JSONOptions{MaxDepth: 10},
			reason: TooDeep,
			at:     Pos{1, 14},
		},
		{
			name:    "Unresolved",
			key:     "v",
			src:     "v: {a: *nope}\n",
			reason:  Unresolved,
			problem: []string{"1:8 unknown alias *nope"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, tt.src, Options{})
			_, err := b.field(t, tt.key).JSON(tt.opts)
			var je *JSONError
			if !errors.As(err, &je) {
				t.Fatalf("JSON error = %v, want a *JSONError", err)
			}
			if je.Reason != tt.reason {
				t.Errorf("reason = %d, want %d", je.Reason, tt.reason)
			}
			if tt.at != (Pos{}) && (je.Value == nil || je.Value.Pos != tt.at) {
				t.Errorf("value at fault = %+v, want one at %v", je.Value, tt.at)
			}
			if diff := cmp.Diff(tt.problem, b.problems); diff != "" {
				t.Errorf("problems mismatch (-want +got):\n%s", diff)
			}
			if strings.TrimSpace(err.Error()) == "" {
				t.Error("Error() is empty")
			}
		})
	}
}
