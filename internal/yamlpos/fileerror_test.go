package yamlpos_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/internal/yamlpos"
)

func TestFileError(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  *yamlpos.FileError
		want string
	}{
		{"positioned", &yamlpos.FileError{File: "a.yaml", Line: 3, Column: 7, Message: "unknown key"}, "a.yaml:3:7: unknown key"},
		{"whole file", &yamlpos.FileError{File: "a.yaml", Message: "empty file"}, "a.yaml: empty file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := tt.err.Error(); got != tt.want {
				t.Errorf("Error() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestFileErrors(t *testing.T) {
	t.Parallel()
	first := &yamlpos.FileError{File: "a.yaml", Line: 1, Column: 2, Message: "one"}
	second := &yamlpos.FileError{File: "a.yaml", Message: "two"}
	var err error = yamlpos.FileErrors{first, second}

	if got, want := err.Error(), "a.yaml:1:2: one\na.yaml: two"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	var fe *yamlpos.FileError
	if !errors.As(err, &fe) || fe != first {
		t.Errorf("errors.As found %v, want the first error", fe)
	}
	if !errors.Is(err, second) {
		t.Error("errors.Is does not find the second error")
	}
}

func TestSortFileErrors(t *testing.T) {
	t.Parallel()
	e := func(file string, line, col int, msg string) *yamlpos.FileError {
		return &yamlpos.FileError{File: file, Line: line, Column: col, Message: msg}
	}
	tests := []struct {
		name      string
		in        yamlpos.FileErrors
		fileOrder map[string]int
		want      yamlpos.FileErrors
	}{
		{
			name: "one file by position, duplicates dropped, ties stable",
			in: yamlpos.FileErrors{
				e("a", 3, 1, "c"), e("a", 1, 5, "b"), e("a", 1, 2, "a"),
				e("a", 3, 1, "c"), e("a", 3, 1, "d"), e("a", 0, 0, "file"),
			},
			want: yamlpos.FileErrors{
				e("a", 0, 0, "file"), e("a", 1, 2, "a"), e("a", 1, 5, "b"), e("a", 3, 1, "c"), e("a", 3, 1, "d"),
			},
		},
		{
			name:      "files in the order given",
			in:        yamlpos.FileErrors{e("a", 1, 1, "a1"), e("b", 2, 1, "b2"), e("b", 1, 1, "b1"), e("a", 2, 1, "a2")},
			fileOrder: map[string]int{"b": 0, "a": 1},
			want:      yamlpos.FileErrors{e("b", 1, 1, "b1"), e("b", 2, 1, "b2"), e("a", 1, 1, "a1"), e("a", 2, 1, "a2")},
		},
		{
			name: "empty",
			in:   yamlpos.FileErrors{},
			want: yamlpos.FileErrors{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := yamlpos.SortFileErrors(tt.in, tt.fileOrder)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("SortFileErrors (-want +got):\n%s", diff)
			}
		})
	}
}
