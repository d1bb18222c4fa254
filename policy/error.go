package policy

import "github.com/agentrt/agentrt/internal/yamlpos"

// Error is one problem in a rule file, at a position. Its Error method
// returns "file:line:column: message".
type Error = yamlpos.FileError

// Errors is every problem found in one or more rule files, sorted by file
// and position. Its Error method returns the errors one per line, and
// Unwrap returns them, so errors.As finds an *Error.
type Errors = yamlpos.FileErrors

// sortErrors orders errors by position and drops exact duplicates.
// fileOrder ranks files (in the order they were read); nil for errors of
// one file.
func sortErrors(es Errors, fileOrder map[string]int) Errors {
	return yamlpos.SortFileErrors(es, fileOrder)
}
