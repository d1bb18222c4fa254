package output_test

import (
	"strings"
	"testing"

	"github.com/agentrt/agentrt/output"
)

// findTokens reads s as words, as the secrets checker does, and returns
// what output.MatchToken finds.
func findTokens(s string) []output.Token {
	var found []output.Token
	for i := 0; i < len(s); {
		if s[i] == '\\' {
			i = output.SkipEscape(s, i)
			continue
		}
		we := i
		for we < len(s) && strings.IndexByte("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-", s[we]) >= 0 {
			we++
		}
		if we == i {
			i++
			continue
		}
		if tok := output.MatchToken(s, i, we); tok.End > 0 {
			found = append(found, tok)
			if tok.Start == i {
				i = tok.End
				continue
			}
		}
		i = we
	}
	return found
}

// TestMatchTokenAgreesWithRedactor: MatchToken finds the token shapes the
// Redactor replaces, under the same names.
func TestMatchTokenAgreesWithRedactor(t *testing.T) {
	t.Parallel()
	r := output.NewRedactor(output.RedactorConfig{})
	for _, secret := range []string{
		fakeOpenAI, fakeAnthropic, fakeAWSKeyID, fakeGitHub, fakeSlack, fakeGoogle, fakeStripe, fakeJWT, fakeJWE, fakePEM, jsonString(fakePEM),
	} {
		text := "a " + secret + " b"
		_, counts := r.String(text)
		found := findTokens(text)
		if len(found) != 1 || counts[found[0].Kind] != 1 || counts.Total() != 1 || text[found[0].Start:found[0].End] != secret {
			t.Errorf("MatchToken found %+v in %q, the Redactor %v", found, text, counts)
		}
	}
}

// TestMatchTokenWholeText: MatchToken decides on the whole text, where
// the Redactor must decide on a bounded window.
func TestMatchTokenWholeText(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		text, kind, token string
	}{
		{"eyJhbGciOiJub25lIn0.eyJzdWIiOiIxIn0.", "", ""}, // unsigned: no credential
		{"Bearer" + strings.Repeat(" ", 40) + fakeBearer, "bearer_token", fakeBearer},
		{"-----BEGIN RSA PRIVATE KEY-----\n" + strings.Repeat("\n", 2000) + fakePEMBody + "-----END RSA PRIVATE KEY-----", "private_key",
			"-----BEGIN RSA PRIVATE KEY-----\n" + strings.Repeat("\n", 2000) + fakePEMBody + "-----END RSA PRIVATE KEY-----"},
	} {
		found := findTokens(tt.text)
		switch {
		case tt.kind == "" && len(found) != 0:
			t.Errorf("MatchToken found %+v in %q, want nothing", found, tt.text)
		case tt.kind != "" && (len(found) != 1 || found[0].Kind != tt.kind || tt.text[found[0].Start:found[0].End] != tt.token):
			t.Errorf("MatchToken found %+v in %q, want %s %q", found, tt.text, tt.kind, tt.token)
		}
	}
}
