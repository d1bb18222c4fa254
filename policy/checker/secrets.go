package checker

import (
	"context"

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
// slack_token, google_api_key, stripe_key, agentrt_token, jwt,
// private_key and bearer_token.
const (
	kindAWSSecret = "aws_secret_key"
	kindBearer    = "bearer_token"
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

// wordBytes, the base64url alphabet, is what identifiers are made of:
// the scanners read text as words of it.
var wordBytes = newByteSet("A-Z", "a-z", "0-9", "_-")

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
// the assignments of output.MatchAssignment.
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
		if tok := output.MatchAssignment(s, i, we); tok.End > 0 {
			f := policy.Finding{Kind: tok.Kind, Start: tok.Start, End: tok.End}
			if f.Kind == kindAWSSecret {
				st.specific = append(st.specific, f)
				i = f.End
				continue
			}
			st.generic = append(st.generic, f)
		}
		i = we
	}
	return st.resolve()
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
