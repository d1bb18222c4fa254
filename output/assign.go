package output

import "strings"

// Kinds of credentials found by the name they are assigned to.
const (
	kindGenericSecret = "generic_secret"
	kindAWSSecret     = "aws_secret_key"
)

// Bounds on an assignment: the blanks around its operator and its value
// (RandomLooking takes nothing longer).
const (
	maxAssignBlanks = 16
	maxAssignValue  = 512
)

// The assignment matcher's alphabets.
var (
	base64Bytes   = newByteSet("A-Z", "a-z", "0-9", "+/")
	unquotedStops = newByteSet(`"'`+"`"+`\,;&)}]>`, "\x00-\x20", "\x7f")
	quotedStops   = newByteSet(`"'`+"`"+`\`, "\x00-\x20", "\x7f")
	// nameEnds are the last bytes of the credential names, either case: a
	// cheap test of a word's last byte keeps most words away from the
	// matcher.
	nameEnds = newByteSet("dtnyDTNY")
)

// keywords are the ends of names whose values are credentials, compared
// lowercase with '_' and '-' dropped: API_KEY, client-secret, apiKey.
var keywords = []string{
	"password", "passwd", "secret", "token",
	"apikey", "accesskey", "secretkey", "privatekey", "signingkey",
}

// notKeywords end like keywords but name values that are not credentials.
var notKeywords = []string{"pagetoken", "nexttoken", "continuationtoken"}

// awsSecretNames end the names of AWS secret access keys.
var awsSecretNames = []string{"secretaccesskey", "awssecretkey"}

// MatchAssignment matches a credential assigned to the word s[i:we] (a
// run of the base64url alphabet, read as MatchToken reads words): key =
// "value", "key": "value", key: value, --key=value, ?key=value, when the
// word is a credential name (it ends in password, secret, token, apikey,
// …) and the value looks random (RandomLooking). The token is the value
// alone, of kind aws_secret_key (a 40-byte base64 value assigned to an
// AWS secret access key name) or generic_secret; its End is 0 when there
// is none. The Redactor replaces what it finds, unless a token shape
// starts the value (then that shape is what it replaces).
func MatchAssignment(s string, i, we int) Token {
	if !nameEnds[s[we-1]] || !keywordTail(s[i:we]) {
		return Token{}
	}
	// The operator is cheaper to check than the name, and the name than
	// the value.
	vs, quoted, ok := assignment(s, we)
	if !ok {
		return Token{}
	}
	var buf [32]byte
	name := foldName(s[i:we], &buf)
	if !hasAnySuffix(name, keywords) || hasAnySuffix(name, notKeywords) {
		return Token{}
	}
	ve, ok := valueEnd(s, vs, quoted)
	if !ok {
		return Token{}
	}
	v := s[vs:ve]
	if hasAnySuffix(name, awsSecretNames) && len(v) == 40 && span(v, 0, base64Bytes) == 40 {
		return Token{Kind: kindAWSSecret, Start: vs, End: ve}
	}
	if !RandomLooking(v) {
		return Token{}
	}
	return Token{Kind: kindGenericSecret, Start: vs, End: ve}
}

// keywordTails are the last three letters of the keywords.
var keywordTails = []string{"ord", "swd", "ret", "ken", "key"}

// keywordTail reports whether word ends like a keyword: a cheap test of
// its last three letters (lowercase, '_' and '-' dropped) that rejects
// most names before foldName.
func keywordTail(word string) bool {
	var buf [3]byte
	k := len(buf)
	for j := len(word) - 1; j >= 0 && k > 0; j-- {
		c := word[j]
		if c == '_' || c == '-' {
			continue
		}
		k--
		buf[k] = c | 0x20
	}
	if k > 0 {
		return false
	}
	for _, t := range keywordTails {
		if string(buf[:]) == t {
			return true
		}
	}
	return false
}

// foldName writes the last bytes of word into buf, lowercase and without
// '_' and '-', and returns them.
func foldName(word string, buf *[32]byte) string {
	k := len(buf)
	for j := len(word) - 1; j >= 0 && k > 0; j-- {
		c := word[j]
		if c == '_' || c == '-' {
			continue
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		k--
		buf[k] = c
	}
	return string(buf[k:])
}

func hasAnySuffix(s string, suffixes []string) bool {
	for _, x := range suffixes {
		if strings.HasSuffix(s, x) {
			return true
		}
	}
	return false
}

// assignment reads an assignment that starts after a name at s[j]: an
// optional closing quote, ':' or '=' (or ':=', '==', '=>') and an
// optional opening quote. It returns where the value starts and whether
// it is quoted. At most maxAssignBlanks blanks may stand on either side
// of the operator, so that what decides an assignment lies within a
// bounded stretch of text.
func assignment(s string, j int) (vs int, quoted, ok bool) {
	j, _ = skipQuote(s, j)
	j, ok = skipBlanks(s, j)
	if !ok || j >= len(s) || (s[j] != ':' && s[j] != '=') {
		return 0, false, false
	}
	j++
	if j < len(s) && (s[j] == '=' || s[j] == '>') {
		j++
	}
	if j, ok = skipBlanks(s, j); !ok {
		return 0, false, false
	}
	j, quoted = skipQuote(s, j)
	return j, quoted, true
}

// valueEnd returns the end of the value that starts at s[vs]: a quote, a
// backslash or a blank (and, unquoted, one of ,;&)}]>). A value longer
// than maxAssignValue is none.
func valueEnd(s string, vs int, quoted bool) (int, bool) {
	stops := unquotedStops
	if quoted {
		stops = quotedStops
	}
	end := vs
	for end < len(s) && end-vs <= maxAssignValue && !stops[s[end]] {
		end++
	}
	return end, end > vs && end-vs <= maxAssignValue
}

// skipQuote skips a quote at s[j], bare or backslash-escaped.
func skipQuote(s string, j int) (int, bool) {
	if j < len(s) && (s[j] == '"' || s[j] == '\'' || s[j] == '`') {
		return j + 1, true
	}
	if j+1 < len(s) && s[j] == '\\' && (s[j+1] == '"' || s[j+1] == '\'') {
		return j + 2, true
	}
	return j, false
}

// skipBlanks skips at most maxAssignBlanks spaces and tabs; ok is false
// when more follow.
func skipBlanks(s string, j int) (int, bool) {
	start := j
	for j < len(s) && (s[j] == ' ' || s[j] == '\t') {
		j++
		if j-start > maxAssignBlanks {
			return j, false
		}
	}
	return j, true
}
