package config

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/agentrt/agentrt/internal/yamlpos"
)

// Error is one problem in a config file, at a position.
type Error struct {
	File string
	// Line and Column are 1-based; zero when the problem has no position.
	Line, Column int
	Message      string
}

// Error returns "file:line:column: message".
func (e *Error) Error() string {
	if e.Line == 0 {
		return fmt.Sprintf("%s: %s", e.File, e.Message)
	}
	return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Column, e.Message)
}

// Errors is every problem found in a config file, sorted by position.
type Errors []*Error

// Error returns the errors one per line.
func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap returns the errors, so errors.As finds an *Error.
func (es Errors) Unwrap() []error {
	errs := make([]error, len(es))
	for i, e := range es {
		errs[i] = e
	}
	return errs
}

// sortErrors orders errors by position and drops exact duplicates, which
// appear when an anchor holding a mistake is merged in several places.
func sortErrors(es Errors) Errors {
	slices.SortStableFunc(es, func(a, b *Error) int {
		return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Column, b.Column))
	})
	return slices.CompactFunc(es, func(a, b *Error) bool { return *a == *b })
}

// suggest returns the candidate the user probably meant by s, or "". A
// candidate qualifies when it is within edit distance 2 of s, ignoring
// case, or when every word of s (split at '_' and '-') is a word of exactly
// one candidate, as "max_hops" is of "max_tool_hops".
func suggest(s string, candidates []string) string {
	if best, d := yamlpos.Nearest(s, candidates); best != "" && d < 3 && d < len(s) {
		return best
	}
	words := splitWords(strings.ToLower(s))
	if len(words) == 0 {
		return ""
	}
	var match string
	for _, c := range candidates {
		cw := splitWords(strings.ToLower(c))
		if !containsAll(cw, words) {
			continue
		}
		if match != "" {
			return ""
		}
		match = c
	}
	return match
}

func splitWords(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == '_' || r == '-' })
}

func containsAll(set, words []string) bool {
	for _, w := range words {
		if !slices.Contains(set, w) {
			return false
		}
	}
	return true
}

// didYouMean returns "; did you mean X?" for the suggestion, or "".
func didYouMean(s string, candidates []string) string {
	if m := suggest(s, candidates); m != "" {
		return "; did you mean " + m + "?"
	}
	return ""
}
