package checker_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/policy"
	"github.com/agentrt/agentrt/policy/checker"
)

// TestSecretsFindShapes: the token shapes come from output.MatchToken,
// which sees the whole text, unlike a redacting stream.
func TestSecretsFindShapes(t *testing.T) {
	t.Parallel()
	fakeJWE := "eyJhbGciOiJSU0EtT0FFUCIsImVuYyI6IkEyNTZHQ00ifQ." + "OKOawDo13gRp2ojaHV7LFpZcgV7T6DVZKTyKOMTYUmKoTCVJRgckCL9kiMT03JGe.48V1_ALb6US04U3b.5eym8TW_c8SuK0ltJ3rpYIzOeDQz7TALvtu6UG9oMo4vpzs9tX_EFShS8iB7j6jiSdiwkIr3ajwQzaBtQD_A.XFBoMYUZodetZdvTiFvSkQ"
	longBlankPEM := "-----BEGIN RSA PRIVATE KEY-----\n" + strings.Repeat(" ", 2000) + fakePEMBody + "-----END RSA PRIVATE KEY-----"
	tests := []secretCase{
		{"jwe through its last part", "enc " + fakeJWE + ".x end", [][2]string{{"jwt", fakeJWE}}},
		{"jws through its signature", fakeJWT + ".more", [][2]string{{"jwt", fakeJWT}}},
		{"pem with a long run of blanks", "key: " + longBlankPEM + "\n", [][2]string{{"private_key", longBlankPEM}}},
		{"bearer after many blanks", "Bearer" + strings.Repeat(" ", 40) + fakeBearer, [][2]string{{"bearer_token", fakeBearer}}},
		{"key inside a bearer token", "Bearer abc." + fakeGitHub, [][2]string{{"github_token", fakeGitHub}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var want []policy.Finding
			for _, w := range tt.want {
				want = append(want, at(t, tt.text, w[0], w[1]))
			}
			if diff := cmp.Diff(want, checker.Secrets{}.Find(tt.text)); diff != "" {
				t.Errorf("Find(%q) findings (-want +got):\n%s", tt.text, diff)
			}
		})
	}
}
