package output

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
)

// stage is one pass of redaction. redact reads s, appends its redacted
// form to dst and returns it with consumed, how much of s it has decided:
// out holds the redaction of s[:tail] and s[tail:consumed] is kept as it
// is (so that a stage that redacts nothing copies nothing). When eof is
// false, s is a prefix of a longer text and redact may leave an undecided
// tail, a bounded one, to be given again with what follows; the result
// over any such sequence of calls is that of one call on the whole text.
// A stage may keep state between the calls of one stream.
type stage interface {
	redact(dst []byte, s string, eof bool, c Counts) (out []byte, tail, consumed int)
}

// literalStage removes the configured secret values: at each position the
// longest that starts there, the leftmost first.
type literalStage struct {
	needles        []string // longest first, distinct
	maxLen, minLen int
}

func newLiteralStage(secrets []string) *literalStage {
	var needles []string
	for _, s := range secrets {
		if len(s) >= 4 {
			// A value is also found as it appears inside a JSON string:
			// escaped, with and without HTML escaping.
			needles = append(needles, s, jsonEscaped(s, true), jsonEscaped(s, false))
		}
	}
	if len(needles) == 0 {
		return nil
	}
	slices.SortFunc(needles, func(a, b string) int {
		if len(a) != len(b) {
			return len(b) - len(a)
		}
		return strings.Compare(a, b)
	})
	needles = slices.Compact(needles)
	return &literalStage{needles: needles, maxLen: len(needles[0]), minLen: len(needles[len(needles)-1])}
}

// in reports whether s holds a needle.
func (l *literalStage) in(s string) bool {
	for _, nd := range l.needles {
		if strings.Contains(s, nd) {
			return true
		}
	}
	return false
}

// jsonEscaped returns s as it reads inside a JSON string.
func jsonEscaped(s string, html bool) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(html)
	enc.Encode(s) // a string always encodes
	q := strings.TrimSuffix(b.String(), "\n")
	return q[1 : len(q)-1]
}

func (l *literalStage) redact(dst []byte, s string, eof bool, c Counts) ([]byte, int, int) {
	// A match that starts before limit is decided: every needle that
	// could start there lies within s.
	limit := len(s)
	if !eof {
		limit = max(0, len(s)-l.maxLen+1)
	}
	var buf [8]int
	next := buf[:0] // the next occurrence of each needle, or -1
	for _, nd := range l.needles {
		next = append(next, strings.Index(s, nd))
	}
	pos, last := 0, 0
	for {
		best, bestLen := -1, 0
		for k, nd := range l.needles {
			if next[k] >= 0 && next[k] < pos {
				if j := strings.Index(s[pos:], nd); j >= 0 {
					next[k] = pos + j
				} else {
					next[k] = -1
				}
			}
			// Needles are longest first: the first at a position wins.
			if next[k] >= 0 && (best < 0 || next[k] < best) {
				best, bestLen = next[k], len(nd)
			}
		}
		if best < 0 || best >= limit {
			break
		}
		dst = append(dst, s[last:best]...)
		dst = appendMarker(dst, kindSecretEnv)
		c[kindSecretEnv]++
		pos = best + bestLen
		last = pos
	}
	if eof {
		return dst, last, len(s)
	}
	return dst, last, max(pos, limit)
}

// maxPatternLine bounds the text a pattern is matched against: patterns
// match within a line, and a longer line is matched in pieces of this
// size.
const maxPatternLine = 64 << 10

// patternStage removes the matches of the configured patterns, line by
// line, each pattern in turn on what the one before left.
type patternStage struct {
	patterns []*regexp.Regexp
}

func (p *patternStage) redact(dst []byte, s string, eof bool, c Counts) ([]byte, int, int) {
	pos, last := 0, 0
	for pos < len(s) {
		var end, next int
		if nl := strings.IndexByte(s[pos:min(len(s), pos+maxPatternLine)], '\n'); nl >= 0 {
			end, next = pos+nl, pos+nl+1
		} else if len(s)-pos >= maxPatternLine {
			end, next = pos+maxPatternLine, pos+maxPatternLine
		} else if eof {
			end, next = len(s), len(s)
		} else {
			break
		}
		text, changed := s[pos:end], false
		for _, re := range p.patterns {
			if out, n := replacePattern(re, text); n > 0 {
				text, changed = out, true
				c[kindPattern] += n
			}
		}
		if changed {
			dst = append(dst, s[last:pos]...)
			dst = append(dst, text...)
			last = end
		}
		pos = next
	}
	return dst, last, pos
}

// replacePattern replaces re's non-empty matches in text and returns how
// many it replaced.
func replacePattern(re *regexp.Regexp, text string) (string, int) {
	locs := re.FindAllStringIndex(text, -1)
	var b strings.Builder
	from, n := 0, 0
	for _, loc := range locs {
		if loc[0] == loc[1] {
			continue // an empty match removes nothing
		}
		b.WriteString(text[from:loc[0]])
		b.WriteString("[REDACTED:" + kindPattern + "]")
		from = loc[1]
		n++
	}
	if n == 0 {
		return text, 0
	}
	b.WriteString(text[from:])
	return b.String(), n
}
