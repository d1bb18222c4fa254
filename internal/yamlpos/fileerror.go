package yamlpos

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// FileError is one problem in a file, at a position, as the package
// reading the file words it. Packages config and policy give it their own
// names, config.Error and policy.Error.
type FileError struct {
	File string
	// Line and Column are 1-based; Line is zero when the problem is with
	// the file as a whole.
	Line, Column int
	Message      string
}

// Error returns "file:line:column: message", or "file: message" when Line
// is zero.
func (e *FileError) Error() string {
	if e.Line == 0 {
		return fmt.Sprintf("%s: %s", e.File, e.Message)
	}
	return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Column, e.Message)
}

// FileErrors is every problem found in one or more files, in the order
// SortFileErrors puts them.
type FileErrors []*FileError

// Error returns the errors one per line.
func (es FileErrors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap returns the errors, so errors.As finds a *FileError.
func (es FileErrors) Unwrap() []error {
	errs := make([]error, len(es))
	for i, e := range es {
		errs[i] = e
	}
	return errs
}

// SortFileErrors orders es by file and then position, in place, and drops
// exact duplicates, which appear when an anchor holding a mistake is
// merged in several places. It returns es shortened. fileOrder ranks the
// files, such as by the order they were read; a file it does not hold
// ranks 0, so for errors of one file it may be nil. Errors at the same
// place keep their order.
func SortFileErrors(es FileErrors, fileOrder map[string]int) FileErrors {
	slices.SortStableFunc(es, func(a, b *FileError) int {
		return cmp.Or(cmp.Compare(fileOrder[a.File], fileOrder[b.File]),
			cmp.Compare(a.Line, b.Line), cmp.Compare(a.Column, b.Column))
	})
	return slices.CompactFunc(es, func(a, b *FileError) bool { return *a == *b })
}
