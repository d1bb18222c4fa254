package output

import "strings"

// The prefilter: most text a runtime writes holds no secret, and most of
// it is short (ids, names, previews). Before the shape scanner runs on a
// whole text, mayFind reads it as the scanner reads it, word by word, and
// rejects each word by its length and first two bytes (a token shape), its
// length and case-folded text ("bearer") or its last byte and what follows
// it (an assignment). It only ever answers "maybe" where the scanner
// could find something, so skipping the scanner when it answers "no"
// changes no result; it runs several times faster than the scanner.

// tokenSeconds holds, by a word's first byte, the second bytes a token
// shape may start with: the prefixes' second bytes, "ey" for a JWT
// header and "--" for a PEM BEGIN line.
var tokenSeconds = func() (m [256]string) {
	add := func(p string) {
		if strings.IndexByte(m[p[0]], p[1]) < 0 {
			m[p[0]] += p[1:2]
		}
	}
	for i := range tokenRules {
		add(tokenRules[i].prefix)
	}
	add("ey")
	add(pemDash)
	return m
}()

// mayFind reports whether the shape scanner might find a token shape or
// an assignment in the whole text s; false means it finds none.
func mayFind(s string) bool {
	words := wordBytes // a local: the loops below read it at every byte
	n := len(s)
	for i := 0; i < n; {
		c := s[i]
		if !words[c] {
			if c == '\\' {
				i = SkipEscape(s, i)
			} else {
				i++
			}
			continue
		}
		we := i + 1
		for we < n && words[s[we]] {
			we++
		}
		if tokenStartsWord(s, i, we) {
			return true
		}
		// An assignment: the scanner decides it within a window from the
		// word's start (a longer word leaves no room for a value there).
		if nameEnds[s[we-1]] && we < n && maySyntax[s[we]] && we-i < scanWindow &&
			keywordTail(s[i:we]) && MatchAssignment(s[i:min(n, i+scanWindow)], 0, we-i).End > 0 {
			return true
		}
		i = we
	}
	return false
}

// mayStart reports whether the scanner may find something at the word
// s[i:we] that the text goes on after, or ends with: a token shape, by the
// word's length and first two bytes; "Bearer"; or an assignment, by the
// word's last byte and the byte after it.
func mayStart(s string, i, we int) bool {
	return tokenStartsWord(s, i, we) || nameEnds[s[we-1]] && keywordTail(s[i:we]) && mayAssign(s, we)
}

// mayAssign reports whether an assignment's operator may follow a name
// that ends at s[j]: a quote, blanks and ':' or '=', as far as s goes.
func mayAssign(s string, j int) bool {
	if j == len(s)-1 && s[j] == '\\' {
		return true // an escaped quote may follow
	}
	j, _ = skipQuote(s, j)
	j, ok := skipBlanks(s, j)
	return ok && (j >= len(s) || s[j] == ':' || s[j] == '=')
}

// tokenStartsWord reports whether a token shape or "Bearer" may start at
// the word s[i:we].
func tokenStartsWord(s string, i, we int) bool {
	switch l := we - i; {
	case l >= minTokenWord:
		return strings.IndexByte(tokenSeconds[s[i]], s[i+1]) >= 0
	case l == len("bearer"):
		return s[i]|0x20 == 'b' && strings.EqualFold(s[i:we], "bearer")
	}
	return false
}

// maySyntax holds the bytes that may follow a credential name in an
// assignment: a quote, a backslash (an escaped quote), a blank, ':' or
// '='.
var maySyntax = newByteSet(`"'`+"`"+`\:=`, " \t")
