package checker

import (
	"bytes"
	"context"
	"encoding/base64"
	"math"
	"strings"

	"github.com/agentrt/agentrt/policy"
)

// Secrets is the builtin checker "secrets". It flags API keys, tokens,
// private keys and high-entropy credential assignments in the checked
// text, with reason code secret_in_input or secret_in_output and one
// finding per secret. See the package documentation for what it catches.
type Secrets struct{}

// Check implements policy.Checker.
func (s Secrets) Check(ctx context.Context, in *policy.CheckInput) (policy.CheckResult, error) {
	return check(ctx, in, s.Find, secretReason, "likely secrets")
}

func secretReason(phase string) string {
	if phase == policy.PhaseOutput {
		return ReasonSecretInOutput
	}
	return ReasonSecretInInput
}

// Find returns the secrets in text, sorted and non-overlapping. A
// finding covers the secret itself: the whole key for prefixed keys, the
// value alone for assignments and bearer tokens, the whole block for PEM
// private keys.
func (Secrets) Find(text string) []policy.Finding {
	return findSecrets(text)
}

// Secret kinds.
const (
	kindOpenAI       = "openai_key"
	kindAnthropic    = "anthropic_key"
	kindAWSKeyID     = "aws_access_key_id"
	kindAWSSecret    = "aws_secret_key"
	kindGitHub       = "github_token"
	kindSlack        = "slack_token"
	kindGoogle       = "google_api_key"
	kindStripe       = "stripe_key"
	kindJWT          = "jwt"
	kindPrivateKey   = "private_key"
	kindBearer       = "bearer_token"
	kindGenericValue = "generic_secret"
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
// what identifiers are made of: the scanner reads text as words of it.
var (
	wordBytes      = newByteSet("A-Z", "a-z", "0-9", "_-")
	alnumBytes     = newByteSet("A-Z", "a-z", "0-9")
	upperDigit     = newByteSet("A-Z", "0-9")
	alnumDash      = newByteSet("A-Z", "a-z", "0-9", "-")
	alnumUnder     = newByteSet("A-Z", "a-z", "0-9", "_")
	base64Bytes    = newByteSet("A-Z", "a-z", "0-9", "+/")
	bearerBytes    = newByteSet("A-Z", "a-z", "0-9", "-._~+/")
	pemBodyBytes   = newByteSet("A-Z", "a-z", "0-9", "+/=:,. \t\r\n")
	unquotedStops  = newByteSet(`"'`+"`"+`\,;&)}]>`, "\x00-\x20", "\x7f")
	quotedStops    = newByteSet(`"'`+"`"+`\`, "\x00-\x20", "\x7f")
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
}

// tokenRulesByFirst indexes tokenRules by the first byte of the prefix.
var tokenRulesByFirst = func() (idx [256][]*tokenRule) {
	for i := range tokenRules {
		r := &tokenRules[i]
		idx[r.prefix[0]] = append(idx[r.prefix[0]], r)
	}
	return idx
}()

// tokenStarts are the first bytes of words matchToken may match.
var tokenStarts = func() (set byteSet) {
	for i := range tokenRules {
		set[tokenRules[i].prefix[0]] = true
	}
	set['e'] = true // jwt
	set['-'] = true // PEM
	return set
}()

// minTokenWord is the shortest word matchToken may match: every key
// shape's alphabet is within wordBytes, so the key starts its word, and
// the shortest are a JWT header and "-----BEGIN".
const minTokenWord = 10

// nameEnds are the last bytes of the credential names, either case.
var nameEnds = newByteSet("dtnyDTNY")

// match returns the end of the key this rule sees at s[i:], or -1.
func (r *tokenRule) match(s string, i int) int {
	if !strings.HasPrefix(s[i:], r.prefix) {
		return -1
	}
	start := i + len(r.prefix)
	end := span(s, start, r.body)
	n := end - start
	switch {
	case r.exact && (n != r.min || (end < len(s) && wordBytes[s[end]])):
		return -1
	case !r.exact && (n < r.min || n > r.max):
		return -1
	case r.shape != nil && !r.shape(s[start:end]):
		return -1
	}
	return end
}

// span returns the end of the run of set bytes that starts at s[i].
func span(s string, i int, set *byteSet) int {
	for i < len(s) && set[s[i]] {
		i++
	}
	return i
}

// scanState holds the findings of a scan: specific ones (a known key
// shape) and generic ones (bearer_token, generic_secret), which a
// specific one overrides.
type scanState struct {
	specific []policy.Finding // sorted, non-overlapping
	generic  []policy.Finding
}

// findSecrets reads s as words and tries the matchers at each word.
func findSecrets(s string) []policy.Finding {
	var st scanState
	n := len(s)
	for i := 0; i < n; {
		c := s[i]
		if c == '\\' {
			i = skipEscape(s, i)
			continue
		}
		if !wordBytes[c] {
			i++
			continue
		}
		we := span(s, i+1, wordBytes)
		// Cheap tests of the word's first and last bytes keep most words
		// away from the matchers.
		if tokenStarts[c] && we-i >= minTokenWord {
			if end, kind := matchToken(s, i, we); end > i {
				st.specific = append(st.specific, policy.Finding{Kind: kind, Start: i, End: end})
				i = end
				continue
			}
		}
		if nameEnds[s[we-1]] {
			if f, ok := matchAssignment(s, i, we); ok {
				if f.Kind == kindAWSSecret {
					st.specific = append(st.specific, f)
					i = f.End
					continue
				}
				st.generic = append(st.generic, f)
			}
		} else if we-i == len("bearer") && c|0x20 == 'b' {
			if f, ok := matchBearer(s, i, we); ok {
				st.generic = append(st.generic, f)
			}
		}
		i = we
	}
	return st.resolve()
}

// skipEscape returns the index after the backslash escape at s[i]: JSON
// escapes (the checked input is raw JSON) are not part of words, so that
// "\nsk-…" starts a word at s. A backslash before anything else is
// skipped alone.
func skipEscape(s string, i int) int {
	if i+1 >= len(s) || !escapeFollower[s[i+1]] {
		return i + 1
	}
	if s[i+1] == 'u' && i+6 <= len(s) {
		return i + 6
	}
	return i + 2
}

// matchToken matches the prefixed key shapes, JWTs and PEM private keys
// at the word s[i:we]. It returns the end of the secret and its kind, or
// -1.
func matchToken(s string, i, we int) (int, string) {
	for _, r := range tokenRulesByFirst[s[i]] {
		if end := r.match(s, i); end > 0 {
			return end, r.kind
		}
	}
	switch s[i] {
	case 'e':
		if end := matchJWT(s, i, we); end > 0 {
			return end, kindJWT
		}
	case '-':
		if end := matchPEM(s, i); end > 0 {
			return end, kindPrivateKey
		}
	}
	return -1, ""
}

// matchJWT matches header.payload.signature, each part base64url, the
// header a JSON object naming an "alg". Unsigned tokens (alg none, with
// an empty signature) carry no credential and are left alone.
func matchJWT(s string, i, we int) int {
	if !strings.HasPrefix(s[i:we], "eyJ") || we-i < 10 || we-i > 1024 {
		return -1
	}
	if we >= len(s) || s[we] != '.' {
		return -1
	}
	pe := span(s, we+1, wordBytes)
	if pe-(we+1) < 2 || pe >= len(s) || s[pe] != '.' {
		return -1
	}
	end := span(s, pe+1, wordBytes)
	if end-(pe+1) < 16 {
		return -1
	}
	var buf [768]byte
	n, err := base64.RawURLEncoding.Decode(buf[:], []byte(s[i:we]))
	if err != nil || n == 0 || buf[0] != '{' || !bytes.Contains(buf[:n], []byte(`"alg"`)) {
		return -1
	}
	return end
}

const (
	pemBegin = "-----BEGIN "
	pemEnd   = "-----END "
	pemDash  = "-----"
)

// matchPEM matches a PEM private key block from its BEGIN line through
// its END line, or, when the block is cut short, through the end of its
// body. Literal JSON escapes (\n) between lines are part of the block.
func matchPEM(s string, i int) int {
	if !strings.HasPrefix(s[i:], pemBegin) {
		return -1
	}
	ls := i + len(pemBegin)
	j := span(s, ls, newLabelBytes)
	label := s[ls:j]
	if j-ls > 64 || !strings.HasPrefix(s[j:], pemDash) ||
		!(strings.HasSuffix(label, "PRIVATE KEY") || strings.HasSuffix(label, "PRIVATE KEY BLOCK")) {
		return -1
	}
	j += len(pemDash)
	for j < len(s) {
		c := s[j]
		switch {
		case pemBodyBytes[c]:
			j++
		case c == '\\' && j+1 < len(s) && (s[j+1] == 'n' || s[j+1] == 'r' || s[j+1] == 't' || s[j+1] == '/'):
			j += 2
		case c == '-' && strings.HasPrefix(s[j:], pemEnd):
			if rest := s[j+len(pemEnd):]; strings.HasPrefix(rest, label) && strings.HasPrefix(rest[len(label):], pemDash) {
				return j + len(pemEnd) + len(label) + len(pemDash)
			}
			return trimPEMTail(s, i, j)
		case c == '-':
			j++ // header lines: Proc-Type, DEK-Info
		default:
			return trimPEMTail(s, i, j)
		}
	}
	return trimPEMTail(s, i, j)
}

var newLabelBytes = newByteSet("A-Z", "0-9", " ")

// trimPEMTail drops the whitespace and escaped newlines that end a
// truncated block at s[i:end].
func trimPEMTail(s string, i, end int) int {
	for end > i {
		switch {
		case strings.ContainsRune(" \t\r\n", rune(s[end-1])):
			end--
		case end-2 > i && s[end-2] == '\\' && (s[end-1] == 'n' || s[end-1] == 'r' || s[end-1] == 't'):
			end -= 2
		default:
			return end
		}
	}
	return end
}

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

// matchAssignment matches a credential name (the word s[i:we]) assigned a
// value: key = "value", "key": "value", key: value, --key=value,
// ?key=value. The value is a finding when it looks random; an AWS secret
// key name with a 40-byte base64 value is an aws_secret_key.
func matchAssignment(s string, i, we int) (policy.Finding, bool) {
	// The syntax is cheaper to check than the name.
	vs, ve, ok := assignedValue(s, we)
	if !ok {
		return policy.Finding{}, false
	}
	var buf [32]byte
	name := foldName(s[i:we], &buf)
	if !hasAnySuffix(name, keywords) || hasAnySuffix(name, notKeywords) {
		return policy.Finding{}, false
	}
	v := s[vs:ve]
	if hasAnySuffix(name, awsSecretNames) && len(v) == 40 && span(v, 0, base64Bytes) == 40 {
		return policy.Finding{Kind: kindAWSSecret, Start: vs, End: ve}, true
	}
	if !randomLooking(v) {
		return policy.Finding{}, false
	}
	return policy.Finding{Kind: kindGenericValue, Start: vs, End: ve}, true
}

// assignedValue reads an assignment that starts after a name at s[j]:
// an optional closing quote, ':' or '=' (or ':=', '==', '=>'), an
// optional opening quote and the value, which ends at a quote, a
// backslash or a blank (and, unquoted, at ,;&)}]>).
func assignedValue(s string, j int) (vs, ve int, ok bool) {
	j, _ = skipQuote(s, j)
	j = skipBlanks(s, j)
	if j >= len(s) || (s[j] != ':' && s[j] != '=') {
		return 0, 0, false
	}
	j++
	if j < len(s) && (s[j] == '=' || s[j] == '>') {
		j++
	}
	j = skipBlanks(s, j)
	j, quoted := skipQuote(s, j)
	stops := unquotedStops
	if quoted {
		stops = quotedStops
	}
	end := j
	for end < len(s) && !stops[s[end]] {
		end++
	}
	return j, end, end > j
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

func skipBlanks(s string, j int) int {
	for j < len(s) && (s[j] == ' ' || s[j] == '\t') {
		j++
	}
	return j
}

// matchBearer matches "Bearer <token>" (any case) at the word s[i:we].
// The finding is the token.
func matchBearer(s string, i, we int) (policy.Finding, bool) {
	if we-i != len("bearer") || !strings.EqualFold(s[i:we], "bearer") {
		return policy.Finding{}, false
	}
	if we >= len(s) || (s[we] != ' ' && s[we] != '\t') {
		return policy.Finding{}, false
	}
	vs := skipBlanks(s, we)
	ve := span(s, vs, bearerBytes)
	for ve < len(s) && s[ve] == '=' {
		ve++
	}
	if ve-vs < 20 || !randomLooking(s[vs:ve]) {
		return policy.Finding{}, false
	}
	return policy.Finding{Kind: kindBearer, Start: vs, End: ve}, true
}

// placeholders mark values that stand for a secret rather than being one.
var placeholders = []string{"redacted", "example", "placeholder", "xxxx", "****", "changeme", "your"}

// randomLooking reports whether an assigned value looks like a credential
// rather than a word, a reference or a placeholder: 8 to 512 bytes, not
// a variable, path, URL or dotted name, letters with digits (or both
// cases when long), and enough Shannon entropy.
func randomLooking(v string) bool {
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

// resolve returns the findings in order: specific ones, and generic ones
// (united where they overlap) that overlap no specific one, which is a
// more precise account of the same secret.
func (st *scanState) resolve() []policy.Finding {
	generic := mergeFindings(st.generic)
	if len(generic) == 0 {
		return st.specific
	}
	out := st.specific
	k := 0
	for _, g := range generic {
		for k < len(st.specific) && st.specific[k].End <= g.Start {
			k++
		}
		if k < len(st.specific) && st.specific[k].Start < g.End {
			continue
		}
		out = append(out, g)
	}
	sortFindings(out)
	return out
}
