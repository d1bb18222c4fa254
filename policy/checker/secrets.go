package checker

import (
	"context"
	"strings"

	"github.com/agentrt/agentrt/output"
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

// Secret kinds. The token shapes (API keys, JWTs, private keys, bearer
// tokens) are found by output.MatchToken and named as it names them:
// openai_key, anthropic_key, aws_access_key_id, github_token,
// slack_token, google_api_key, stripe_key, jwt, private_key and
// bearer_token.
const (
	kindAWSSecret    = "aws_secret_key"
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

// The scanner's alphabets. wordBytes, the base64url alphabet, is what
// identifiers are made of: the scanners read text as words of it.
var (
	wordBytes     = newByteSet("A-Z", "a-z", "0-9", "_-")
	base64Bytes   = newByteSet("A-Z", "a-z", "0-9", "+/")
	unquotedStops = newByteSet(`"'`+"`"+`\,;&)}]>`, "\x00-\x20", "\x7f")
	quotedStops   = newByteSet(`"'`+"`"+`\`, "\x00-\x20", "\x7f")
)

// nameEnds are the last bytes of the credential names, either case.
var nameEnds = newByteSet("dtnyDTNY")

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

// findSecrets reads s as words, as output reads text, and tries the
// matchers at each word: the token shapes of output.MatchToken, and
// assignments.
func findSecrets(s string) []policy.Finding {
	var st scanState
	n := len(s)
	for i := 0; i < n; {
		c := s[i]
		if c == '\\' {
			i = output.SkipEscape(s, i)
			continue
		}
		if !wordBytes[c] {
			i++
			continue
		}
		we := span(s, i+1, wordBytes)
		if tok := output.MatchToken(s, i, we); tok.End > 0 {
			f := policy.Finding{Kind: tok.Kind, Start: tok.Start, End: tok.End}
			if f.Kind == kindBearer {
				// Generic: a key shape in the token is matched at its word.
				st.generic = append(st.generic, f)
				i = we
				continue
			}
			st.specific = append(st.specific, f)
			i = f.End
			continue
		}
		// A cheap test of the word's last byte keeps most words away
		// from the assignment matcher.
		if nameEnds[s[we-1]] {
			if f, ok := matchAssignment(s, i, we); ok {
				if f.Kind == kindAWSSecret {
					st.specific = append(st.specific, f)
					i = f.End
					continue
				}
				st.generic = append(st.generic, f)
			}
		}
		i = we
	}
	return st.resolve()
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
	if !output.RandomLooking(v) {
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
