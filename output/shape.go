package output

import (
	"bytes"
	"encoding/base64"
	"math"
	"strings"
)

// Redaction kinds. The token shapes are named as the secrets checker
// (policy/checker) names them.
const (
	kindSecretEnv  = "secret_env"
	kindPattern    = "pattern"
	kindOpenAI     = "openai_key"
	kindAnthropic  = "anthropic_key"
	kindAWSKeyID   = "aws_access_key_id"
	kindGitHub     = "github_token"
	kindSlack      = "slack_token"
	kindGoogle     = "google_api_key"
	kindStripe     = "stripe_key"
	kindJWT        = "jwt"
	kindPrivateKey = "private_key"
	kindBearer     = "bearer_token"
	kindAgentrt    = "agentrt_token"
)

// The scanner's bounds. Every decision the scanner takes at a position
// reads at most a window of bytes from there, so a stream needs to hold
// back only that window to decide exactly as a scan of the whole text
// would.
const (
	// scanWindow bounds what decides a match at a word start: the
	// longest key body is 512 bytes, a JWT header 1 KiB, and "Bearer"
	// with its blanks and a token about 1.1 KiB.
	scanWindow = 2 << 10
	// pemWindow bounds what decides how a PEM block goes on from a byte
	// of its body: an END line ("-----END " label "-----").
	pemWindow = 128
	// pemMaxBlank is the longest run of blanks a PEM block holds; a
	// longer one ends a block whose END line is missing. Real blocks
	// have one line break between lines.
	pemMaxBlank = 1 << 10
	// maxTokenHeader bounds a JWT header and maxPEMLabel a PEM label.
	maxTokenHeader = 1 << 10
	maxPEMLabel    = 64
	// minTokenWord is the shortest word a token shape may start: a JWT
	// header or "-----BEGIN".
	minTokenWord = 10
	// maxBearerBlanks bounds the blanks between "Bearer" and its token.
	maxBearerBlanks = 16
	// bearer tokens are 20 to maxBearer bytes.
	minBearer = 20
	maxBearer = 512
)

// byteSet is a set of bytes, indexed by byte.
type byteSet [256]bool

func newByteSet(ranges ...string) *byteSet {
	var s byteSet
	for _, r := range ranges {
		if len(r) == 3 && r[1] == '-' {
			for c := int(r[0]); c <= int(r[2]); c++ {
				s[c] = true
			}
			continue
		}
		for i := range len(r) {
			s[r[i]] = true
		}
	}
	return &s
}

// The scanner's alphabets. wordBytes, the base64url alphabet, is also
// what the scanner reads words of.
var (
	wordBytes      = newByteSet("A-Z", "a-z", "0-9", "_-")
	alnumBytes     = newByteSet("A-Z", "a-z", "0-9")
	upperDigit     = newByteSet("A-Z", "0-9")
	alnumDash      = newByteSet("A-Z", "a-z", "0-9", "-")
	alnumUnder     = newByteSet("A-Z", "a-z", "0-9", "_")
	bearerBytes    = newByteSet("A-Z", "a-z", "0-9", "-._~+/")
	pemBodyBytes   = newByteSet("A-Z", "a-z", "0-9", "+/=:,.")
	pemLabelBytes  = newByteSet("A-Z", "0-9", " ")
	escapeFollower = newByteSet(`"\/bfnrtu'`)
)

// tokenRule is a key shape that starts with a fixed prefix.
type tokenRule struct {
	kind   string
	prefix string
	body   *byteSet // the alphabet after the prefix
	// min and max bound the length of the body. When exact, the body is
	// exactly min bytes and the word ends there.
	min, max int
	exact    bool
	// shape, when set, must accept the body.
	shape func(body string) bool
}

// tokenRules are tried in order, so a longer prefix comes before a
// shorter one it extends (sk-ant- before sk-).
var tokenRules = []tokenRule{
	{kind: kindAnthropic, prefix: "sk-ant-", body: wordBytes, min: 32, max: 512, shape: mixedAlnum},
	{kind: kindStripe, prefix: "sk_live_", body: alnumBytes, min: 20, max: 255},
	{kind: kindOpenAI, prefix: "sk-", body: wordBytes, min: 32, max: 512, shape: mixedAlnum},
	{kind: kindStripe, prefix: "rk_live_", body: alnumBytes, min: 20, max: 255},
	{kind: kindAWSKeyID, prefix: "AKIA", body: upperDigit, min: 16, exact: true},
	{kind: kindAWSKeyID, prefix: "ASIA", body: upperDigit, min: 16, exact: true},
	{kind: kindGoogle, prefix: "AIza", body: wordBytes, min: 35, exact: true},
	{kind: kindGitHub, prefix: "ghp_", body: alnumBytes, min: 36, max: 255},
	{kind: kindGitHub, prefix: "gho_", body: alnumBytes, min: 36, max: 255},
	{kind: kindGitHub, prefix: "ghu_", body: alnumBytes, min: 36, max: 255},
	{kind: kindGitHub, prefix: "ghs_", body: alnumBytes, min: 36, max: 255},
	{kind: kindGitHub, prefix: "ghr_", body: alnumBytes, min: 36, max: 255},
	{kind: kindGitHub, prefix: "github_pat_", body: alnumUnder, min: 50, max: 255},
	{kind: kindSlack, prefix: "xoxa-", body: alnumDash, min: 10, max: 255, shape: hasDigit},
	{kind: kindSlack, prefix: "xoxb-", body: alnumDash, min: 10, max: 255, shape: hasDigit},
	{kind: kindSlack, prefix: "xoxp-", body: alnumDash, min: 10, max: 255, shape: hasDigit},
	{kind: kindSlack, prefix: "xoxr-", body: alnumDash, min: 10, max: 255, shape: hasDigit},
	{kind: kindSlack, prefix: "xoxs-", body: alnumDash, min: 10, max: 255, shape: hasDigit},
	// agentrt's own API tokens: art_ and 48 hex digits.
	{kind: kindAgentrt, prefix: "art_", body: alnumBytes, min: 32, max: 255},
}

// tokenRulesByFirst indexes tokenRules by the first byte of the prefix.
var tokenRulesByFirst = func() (idx [256][]*tokenRule) {
	for i := range tokenRules {
		r := &tokenRules[i]
		idx[r.prefix[0]] = append(idx[r.prefix[0]], r)
	}
	return idx
}()

// tokenStarts are the first bytes of words a token shape may start.
var tokenStarts = func() (set byteSet) {
	for i := range tokenRules {
		set[tokenRules[i].prefix[0]] = true
	}
	set['e'] = true // jwt
	set['-'] = true // PEM
	return set
}()

// span returns the end of the run of set bytes that starts at s[i].
func span(s string, i int, set *byteSet) int {
	for i < len(s) && set[s[i]] {
		i++
	}
	return i
}

// match returns the end of the key this rule sees at the start of v, or
// -1.
func (r *tokenRule) match(v string) int {
	if !strings.HasPrefix(v, r.prefix) {
		return -1
	}
	start := len(r.prefix)
	end := span(v, start, r.body)
	n := end - start
	switch {
	case r.exact && (n != r.min || (end < len(v) && wordBytes[v[end]])):
		return -1
	case !r.exact && (n < r.min || n > r.max):
		return -1
	case r.shape != nil && !r.shape(v[start:end]):
		return -1
	}
	return end
}

// Scanner modes: where a scan that stopped goes on.
const (
	modeText = iota // at a position that is not inside a word
	modeWord        // inside a word no token starts
	modePEM         // inside a PEM private key block, after its BEGIN line
	modeJWT         // inside a JWT, after its header and the payload's first bytes
)

// match is a token shape the scanner found: v[start:end] of the view it
// looked at. mode is where the scan goes on after end: modeText, or
// modePEM or modeJWT when the match goes on beyond the view.
type match struct {
	start, end int
	kind       string
	mode       int
	label      string // modePEM: the block's label
	parts      int    // modeJWT: the dot-separated parts still allowed
}

// shapeScanner finds the built-in token shapes. It reads text as words of
// the base64url alphabet (JSON escapes such as \n separate words, as in
// the secrets checker) and tries the shapes at each word's start. It is
// resumable: redact may stop before the end of the text it is given
// (asking for more) and go on with the rest and what follows, which gives
// the same result as one call on the whole text.
type shapeScanner struct {
	mode  int
	label string // modePEM: the block's label
	parts int    // modeJWT: the dot-separated parts still allowed
	// wholeText, set when the scanner is given the whole text at once,
	// lifts the bound on runs of blanks in a PEM block (pemMaxBlank),
	// which only a stream needs.
	wholeText bool
}

// redact implements stage.
func (sc *shapeScanner) redact(dst []byte, s string, eof bool, c Counts) (out []byte, tail, consumed int) {
	n := len(s)
	i, last := 0, 0
	for i < n {
		switch sc.mode {
		case modeWord:
			i = span(s, i, wordBytes)
			if i < n {
				sc.mode = modeText
			}
			continue
		case modePEM:
			j, done := sc.pemBody(s, i, eof)
			if !done {
				return dst, j, j
			}
			i, last = j, j
			continue
		case modeJWT:
			j, done := sc.jwtBody(s, i, eof)
			if !done {
				return dst, j, j
			}
			i, last = j, j
			continue
		}
		c0 := s[i]
		if c0 == '\\' {
			if !eof && n-i < 6 {
				break
			}
			i = SkipEscape(s, i)
			continue
		}
		if !wordBytes[c0] {
			i++
			continue
		}
		if !eof && n-i < scanWindow {
			// A whole word at which nothing can start is decided now,
			// whatever follows; any other waits for a window of text.
			we := span(s, i+1, wordBytes)
			if we == n || mayStart(s, i, we) {
				break
			}
			i = we
			continue
		}
		v := s[i:min(n, i+scanWindow)]
		m, we := matchWord(v)
		if m.end <= 0 {
			i += we
			if we == len(v) {
				sc.mode = modeWord
			}
			continue
		}
		dst = append(dst, s[last:i+m.start]...)
		dst = appendMarker(dst, m.kind)
		c[m.kind]++
		i += m.end
		last = i
		sc.mode, sc.label, sc.parts = m.mode, m.label, m.parts
	}
	if eof {
		i = n
	}
	return dst, last, i
}

// appendMarker appends the text that replaces a secret of kind.
func appendMarker(dst []byte, kind string) []byte {
	dst = append(dst, "[REDACTED:"...)
	dst = append(dst, kind...)
	return append(dst, ']')
}

// SkipEscape returns the index after the backslash escape at s[i], a
// backslash: JSON escapes are not part of words (see NextWord), so that
// "\nsk-…" starts a word at s. A backslash before anything else is
// skipped alone.
func SkipEscape(s string, i int) int {
	if i+1 >= len(s) || !escapeFollower[s[i+1]] {
		return i + 1
	}
	if s[i+1] == 'u' && i+6 <= len(s) {
		return i + 6
	}
	return i + 2
}

// matchWord tries the token shapes at the word that starts v, a view of
// at most scanWindow bytes. It returns the match (end 0 when there is
// none) and the end of the word within v.
func matchWord(v string) (match, int) {
	c := v[0]
	we := span(v, 1, wordBytes)
	if tokenStarts[c] && we >= minTokenWord {
		if m := matchToken(v, we); m.end > 0 {
			return m, we
		}
	}
	if we == len("bearer") && c|0x20 == 'b' && strings.EqualFold(v[:we], "bearer") {
		return matchBearer(v, we), we
	}
	if tok := MatchAssignment(v, 0, we); tok.End > 0 && !startsToken(v, tok.Start) {
		return match{start: tok.Start, end: tok.End, kind: tok.Kind}, we
	}
	return match{}, we
}

// startsToken reports whether a token shape starts at v[i]: then the
// scanner replaces that, under its own kind, when it reaches it.
func startsToken(v string, i int) bool {
	tw := span(v, i, wordBytes)
	return tokenStarts[v[i]] && tw-i >= minTokenWord && matchToken(v[i:], tw-i).end > 0
}

// matchToken matches the prefixed key shapes, JWTs and PEM private key
// BEGIN lines at the start of v, whose first word ends at we.
func matchToken(v string, we int) match {
	if end, kind := matchKey(v); end > 0 {
		return match{end: end, kind: kind}
	}
	switch v[0] {
	case 'e':
		return matchJWT(v, we)
	case '-':
		return matchPEM(v)
	}
	return match{}
}

// matchKey matches the prefixed key shapes at the start of v. It returns
// the end of the key and its kind, or -1.
func matchKey(v string) (int, string) {
	for _, r := range tokenRulesByFirst[v[0]] {
		if end := r.match(v); end > 0 {
			return end, r.kind
		}
	}
	return -1, ""
}

// jwtHeader reports whether h, a word, is a JWT header: base64url of a
// JSON object naming an "alg"; and whether it names an "enc" too (a JWE).
func jwtHeader(h string) (ok, jwe bool) {
	if len(h) > maxTokenHeader || !strings.HasPrefix(h, "eyJ") {
		return false, false
	}
	var buf [maxTokenHeader * 3 / 4]byte
	n, err := base64.RawURLEncoding.Decode(buf[:], []byte(h))
	if err != nil || n == 0 || buf[0] != '{' || !bytes.Contains(buf[:n], []byte(`"alg"`)) {
		return false, false
	}
	return true, bytes.Contains(buf[:n], []byte(`"enc"`))
}

// jwtParts is how many dot-separated parts follow a JWT's payload: the
// signature, or a JWE's IV, ciphertext and tag.
func jwtParts(jwe bool) int {
	if jwe {
		return 3
	}
	return 1
}

// matchJWT matches the start of a JWT: a header that decodes to a JSON
// object naming an "alg", a dot and at least two bytes of payload. The
// rest of the token (the payload and any further parts: a signature, or
// a JWE's four) is consumed in modeJWT.
func matchJWT(v string, we int) match {
	if we > maxTokenHeader || !strings.HasPrefix(v, "eyJ") {
		return match{}
	}
	if we+2 >= len(v) || v[we] != '.' || !wordBytes[v[we+1]] || !wordBytes[v[we+2]] {
		return match{}
	}
	ok, jwe := jwtHeader(v[:we])
	if !ok {
		return match{}
	}
	return match{end: we + 3, kind: kindJWT, mode: modeJWT, parts: jwtParts(jwe)}
}

// jwtBody consumes the rest of a JWT from s[i]: word bytes, and a dot
// followed by one when parts remain. It returns where it stopped and
// whether the token ended there; when it did not, s ended first (and more
// may follow).
func (sc *shapeScanner) jwtBody(s string, i int, eof bool) (int, bool) {
	for {
		i = span(s, i, wordBytes)
		if i == len(s) {
			if eof {
				sc.mode = modeText
			}
			return i, eof
		}
		if s[i] != '.' || sc.parts == 0 {
			sc.mode = modeText
			return i, true
		}
		if i+1 == len(s) && !eof {
			return i, false
		}
		if i+1 == len(s) || !wordBytes[s[i+1]] {
			sc.mode = modeText
			return i, true
		}
		sc.parts--
		i += 2
	}
}

const (
	pemBegin = "-----BEGIN "
	pemEnd   = "-----END "
	pemDash  = "-----"
)

// matchPEM matches the BEGIN line of a PEM private key block at the
// start of v: a label ending in PRIVATE KEY or PRIVATE KEY BLOCK. The
// block's body and END line are consumed in modePEM.
func matchPEM(v string) match {
	end, label := pemBeginLine(v)
	if end < 0 {
		return match{}
	}
	return match{end: end, kind: kindPrivateKey, mode: modePEM, label: strings.Clone(label)}
}

// pemBeginLine matches the BEGIN line of a PEM private key block at the
// start of v. It returns the end of the line and the block's label, or
// -1.
func pemBeginLine(v string) (int, string) {
	if !strings.HasPrefix(v, pemBegin) {
		return -1, ""
	}
	ls := len(pemBegin)
	j := span(v, ls, pemLabelBytes)
	label := v[ls:j]
	if j-ls > maxPEMLabel || !strings.HasPrefix(v[j:], pemDash) ||
		!(strings.HasSuffix(label, "PRIVATE KEY") || strings.HasSuffix(label, "PRIVATE KEY BLOCK")) {
		return -1, ""
	}
	return j + len(pemDash), label
}

// pemBody consumes a PEM block's body from s[i], through its END line.
// A block whose END line is missing (or names another label) ends before
// the blanks that end its body, as does one with a run of blanks longer
// than pemMaxBlank. Literal JSON escapes (\n) between lines are part of
// the block. pemBody returns where it stopped and whether the block ended
// there; when it did not, it needs more text than s holds after that
// point, which is the start of a run of blanks it may yet give back.
func (sc *shapeScanner) pemBody(s string, i int, eof bool) (int, bool) {
	blank := -1 // the start of the run of blanks that ends the body so far
	j := i
	for j < len(s) {
		if !eof && len(s)-j < pemWindow {
			break
		}
		c := s[j]
		switch {
		case c == ' ' || c == '\t' || c == '\r' || c == '\n':
			if blank < 0 {
				blank = j
			}
			j++
		case c == '\\' && j+1 < len(s) && strings.IndexByte("nrt", s[j+1]) >= 0:
			if blank < 0 {
				blank = j
			}
			j += 2
		case c == '\\' && j+1 < len(s) && s[j+1] == '/':
			blank = -1
			j += 2
		case pemBodyBytes[c]:
			blank = -1
			j++
		case c == '-' && strings.HasPrefix(s[j:], pemEnd):
			rest := s[j+len(pemEnd):]
			if strings.HasPrefix(rest, sc.label) && strings.HasPrefix(rest[len(sc.label):], pemDash) {
				end := j + len(pemEnd) + len(sc.label) + len(pemDash)
				sc.mode, sc.label = modeText, ""
				return end, true
			}
			return sc.pemCut(j, blank), true
		case c == '-':
			blank = -1 // header lines: Proc-Type, DEK-Info
			j++
		default:
			return sc.pemCut(j, blank), true
		}
		if blank >= 0 && j-blank > pemMaxBlank && !sc.wholeText {
			return sc.pemCut(j, blank), true
		}
	}
	if eof {
		return sc.pemCut(j, blank), true
	}
	if blank >= 0 {
		return blank, false
	}
	return j, false
}

// pemCut ends a block cut short at j, before the blanks that start at
// blank (when blank ≥ 0).
func (sc *shapeScanner) pemCut(j, blank int) int {
	sc.mode, sc.label = modeText, ""
	if blank >= 0 {
		return blank
	}
	return j
}

// matchBearer matches "Bearer <token>" (any case) at the start of v, the
// word "bearer" ending at we. The match is the token: a known key shape,
// or bearer_token when it looks random.
func matchBearer(v string, we int) match {
	vs := bearerValue(v, we)
	if vs < 0 || vs-we > maxBearerBlanks || vs == len(v) {
		return match{}
	}
	if tw := span(v, vs, wordBytes); tokenStarts[v[vs]] && tw-vs >= minTokenWord {
		if m := matchToken(v[vs:], tw-vs); m.end > 0 {
			m.start += vs
			m.end += vs
			return m
		}
	}
	ve := bearerEnd(v, vs)
	if ve < 0 {
		return match{}
	}
	return match{start: vs, end: ve, kind: kindBearer}
}

// bearerValue returns where the value after the word "bearer", which
// ends at v[we], starts: after a run of blanks. It returns -1 when no
// blank follows the word.
func bearerValue(v string, we int) int {
	if we >= len(v) || (v[we] != ' ' && v[we] != '\t') {
		return -1
	}
	vs := we
	for vs < len(v) && (v[vs] == ' ' || v[vs] == '\t') {
		vs++
	}
	return vs
}

// bearerEnd returns the end of the bearer token at v[vs:], or -1 unless
// it is minBearer to maxBearer bytes (with its '=' padding) and looks
// random.
func bearerEnd(v string, vs int) int {
	ve := vs
	for ve < len(v) && ve-vs <= maxBearer && bearerBytes[v[ve]] {
		ve++
	}
	for ve < len(v) && ve-vs <= maxBearer && v[ve] == '=' {
		ve++
	}
	if ve-vs < minBearer || ve-vs > maxBearer || !RandomLooking(v[vs:ve]) {
		return -1
	}
	return ve
}

// placeholders mark values that stand for a secret rather than being one.
var placeholders = []string{"redacted", "example", "placeholder", "xxxx", "****", "changeme", "your"}

// RandomLooking reports whether v, a token or an assigned value, looks
// like a credential rather than a word, a reference or a placeholder: 8
// to 512 bytes, not a variable, path, URL or dotted name, letters with
// digits (or both cases when long), and enough Shannon entropy. It tells
// bearer tokens from other words after "Bearer", and the secrets checker
// (policy/checker) tells credentials in assignments with it.
func RandomLooking(v string) bool {
	if len(v) < 8 || len(v) > 512 || strings.ContainsRune("$<{[%*#(/.~", rune(v[0])) || strings.Contains(v, "://") {
		return false
	}
	var upper, lower, digit bool
	var counts [256]uint16
	dotted := true // only identifier bytes and dots, with a dot
	for i := range len(v) {
		c := v[i]
		counts[c]++
		switch {
		case 'A' <= c && c <= 'Z':
			upper = true
		case 'a' <= c && c <= 'z':
			lower = true
		case '0' <= c && c <= '9':
			digit = true
		case c == '_' || c == '.':
		default:
			dotted = false
		}
	}
	if dotted && strings.Contains(v, ".") {
		return false // config.apiKey, os.environ
	}
	if !((upper || lower) && digit) && !(len(v) >= 20 && upper && lower) {
		return false
	}
	for _, p := range placeholders {
		if containsFold(v, p) {
			return false
		}
	}
	var h float64
	for _, c := range counts {
		if c > 0 {
			p := float64(c) / float64(len(v))
			h -= p * math.Log2(p)
		}
	}
	if len(v) < 16 {
		return h >= 2.5
	}
	return h >= 3.0
}

// containsFold reports whether s contains the lowercase ASCII substr,
// ignoring ASCII case.
func containsFold(s, substr string) bool {
	for i := 0; i+len(substr) <= len(s); i++ {
		if strings.EqualFold(s[i:i+len(substr)], substr) {
			return true
		}
	}
	return false
}

func mixedAlnum(s string) bool {
	var upper, lower, digit bool
	for i := range len(s) {
		switch c := s[i]; {
		case 'A' <= c && c <= 'Z':
			upper = true
		case 'a' <= c && c <= 'z':
			lower = true
		case '0' <= c && c <= '9':
			digit = true
		}
	}
	return upper && lower && digit
}

func hasDigit(s string) bool {
	return strings.ContainsAny(s, "0123456789")
}
