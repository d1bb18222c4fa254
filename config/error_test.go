package config

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestErrorString(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name string
		err  error
		want string
	}{
		{
			name: "Positioned",
			err:  &Error{File: "agentrt.yaml", Line: 7, Column: 5, Message: `unknown key "max_hops"`},
			want: `agentrt.yaml:7:5: unknown key "max_hops"`,
		},
		{
			name: "NoPosition",
			err:  &Error{File: "agentrt.yaml", Message: "empty"},
			want: "agentrt.yaml: empty",
		},
		{
			name: "ErrorsOnePerLine",
			err: Errors{
				{File: "a.yaml", Line: 1, Column: 1, Message: "first"},
				{File: "a.yaml", Line: 2, Column: 3, Message: "second"},
			},
			want: "a.yaml:1:1: first\na.yaml:2:3: second",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tt.want, tt.err.Error()); diff != "" {
				t.Errorf("Error() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseErrorsAreInspectable(t *testing.T) {
	t.Parallel()

	src := "agents:\n  a:\n    model: {provider: replay, script: support.replay.yaml}\n    max_hops: 8\n    colour: red\n"
	_, err := Parse("agentrt.yaml", []byte(src), fixture(t), Options{})

	var errs Errors
	if !errors.As(err, &errs) {
		t.Fatalf("errors.As(%T, *Errors) = false", err)
	}
	want := Errors{
		{File: "agentrt.yaml", Line: 4, Column: 5, Message: `unknown key "max_hops" in agent "a"; did you mean max_tool_hops?`},
		{File: "agentrt.yaml", Line: 5, Column: 5, Message: `unknown key "colour" in agent "a"`},
	}
	if diff := cmp.Diff(want, errs); diff != "" {
		t.Errorf("Errors mismatch (-want +got):\n%s", diff)
	}
	var first *Error
	if !errors.As(err, &first) {
		t.Fatalf("errors.As(%T, **Error) = false", err)
	}
	if diff := cmp.Diff(want[0], first); diff != "" {
		t.Errorf("first *Error mismatch (-want +got):\n%s", diff)
	}
}

func TestSortErrors(t *testing.T) {
	t.Parallel()

	got := sortErrors(Errors{
		{File: "f", Line: 3, Column: 1, Message: "c"},
		{File: "f", Line: 1, Column: 9, Message: "b"},
		{File: "f", Line: 1, Column: 2, Message: "a"},
		{File: "f", Line: 3, Column: 1, Message: "c"},
		{File: "f", Line: 3, Column: 1, Message: "d"},
	})
	want := Errors{
		{File: "f", Line: 1, Column: 2, Message: "a"},
		{File: "f", Line: 1, Column: 9, Message: "b"},
		{File: "f", Line: 3, Column: 1, Message: "c"},
		{File: "f", Line: 3, Column: 1, Message: "d"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("sortErrors mismatch (-want +got):\n%s", diff)
	}
}

func TestSuggest(t *testing.T) {
	t.Parallel()

	tests := []struct {
		in         string
		candidates []string
		want       string
	}{
		{"max_tool_hop", agentKeys, "max_tool_hops"},
		{"max_hops", agentKeys, "max_tool_hops"},
		{"Tools", agentKeys, "tools"},
		{"instruction", agentKeys, "instructions"},
		{"workspaces", agentKeys, "workspace"},
		{"colour", agentKeys, ""},
		{"readonly", annotationKeys, "read_only"},
		{"read-only", annotationKeys, "read_only"},
		{"agent", topKeys, "agents"},
		{"x", topKeys, ""},
		{"", topKeys, ""},
		// "tool" is a word of no key besides "tools", which is closer.
		{"tool", agentKeys, "tools"},
		// A word shared by several candidates suggests none of them.
		{"hops", []string{"max_hops", "min_hops"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			if got := suggest(tt.in, tt.candidates); got != tt.want {
				t.Errorf("suggest(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}
