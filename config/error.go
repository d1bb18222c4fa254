package config

import (
	"slices"
	"strings"

	"github.com/agentrt/agentrt/internal/yamlpos"
)

// Error is one problem in a config file, at a position. Its Error method
// returns "file:line:column: message", or "file: message" when the problem
// has no position (Line is zero).
type Error = yamlpos.FileError

// Errors is every problem found in a config file, sorted by position. Its
// Error method returns the errors one per line, and Unwrap returns them,
// so errors.As finds an *Error.
type Errors = yamlpos.FileErrors

// sortErrors orders errors by position and drops exact duplicates.
func sortErrors(es Errors) Errors { return yamlpos.SortFileErrors(es, nil) }

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
