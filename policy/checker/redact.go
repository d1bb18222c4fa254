package checker

import (
	"cmp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/agentrt/agentrt/policy"
)

// Redact returns text with the range of every finding replaced by
// "[REDACTED:kind]", for previews that must not show what a checker
// found. It does not modify findings.
//
// Ranges are clamped to text, and empty ones are ignored. A range that
// cuts a valid UTF-8 sequence is widened to the whole rune. Overlapping ranges
// are replaced once, as their union, under the kind of the one that
// starts first (the longer at equal starts); adjacent ranges are
// replaced one by one. A kind that is not a plain name (letters, digits,
// '_', '-', '.', at most 64 bytes) gives "[REDACTED]", since an external
// checker's kind could itself quote what it found.
//
// Findings of Secrets never include quotes or cut JSON escapes, so
// redacting raw input JSON with them leaves valid JSON.
func Redact(text string, findings []policy.Finding) string {
	spans := make([]policy.Finding, 0, len(findings))
	for _, f := range findings {
		start, end := max(f.Start, 0), min(f.End, len(text))
		if start >= end {
			continue
		}
		start = runeStart(text, start)
		if end < len(text) {
			if r := runeStart(text, end); r < end {
				_, size := utf8.DecodeRuneInString(text[r:])
				end = r + size
			}
		}
		spans = append(spans, policy.Finding{Kind: f.Kind, Start: start, End: end})
	}
	if len(spans) == 0 {
		return text
	}
	slices.SortStableFunc(spans, func(a, b policy.Finding) int {
		return cmp.Or(cmp.Compare(a.Start, b.Start), cmp.Compare(b.End, a.End))
	})
	var b strings.Builder
	b.Grow(len(text))
	last := 0
	for i := 0; i < len(spans); {
		cur := spans[i]
		for i++; i < len(spans) && spans[i].Start < cur.End; i++ {
			cur.End = max(cur.End, spans[i].End)
		}
		b.WriteString(text[last:cur.Start])
		b.WriteString(redaction(cur.Kind))
		last = cur.End
	}
	b.WriteString(text[last:])
	return b.String()
}

// redaction is the text that stands for a redacted range of kind.
func redaction(kind string) string {
	if kind == "" || len(kind) > 64 {
		return "[REDACTED]"
	}
	for i := range len(kind) {
		if c := kind[i]; !wordBytes[c] && c != '.' {
			return "[REDACTED]"
		}
	}
	return "[REDACTED:" + kind + "]"
}

// runeStart returns the start of the valid UTF-8 sequence that i falls
// inside of, or i.
func runeStart(text string, i int) int {
	for r := i - 1; r >= 0 && r >= i-(utf8.UTFMax-1); r-- {
		if !utf8.RuneStart(text[r]) {
			continue
		}
		if _, size := utf8.DecodeRuneInString(text[r:]); r+size > i {
			return r
		}
		break
	}
	return i
}
