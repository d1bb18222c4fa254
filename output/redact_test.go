package output_test

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/agentrt/agentrt/output"
)

// Fake credentials, each assembled from two literals so that secret
// scanners reading this file do not flag it.
var (
	fakeOpenAI      = "sk-" + "T3BlbkFJaB1cD2eF3gH4iJ5kL6mN7oP8qR9sT0uV1wX2yZ3"
	fakeOpenAIProj  = "sk-" + "proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z_Ab7cDe0f-Gh2iJk"
	fakeAnthropic   = "sk-ant-" + "api03-Xy7_Zq9-Ab3Cd5Ef7Gh9Ij1Kl3Mn5Op7Qr9St1Uv3Wx5Yz7Ab9Cd1Ef3Gh5Ij7Kl9Mn1Op3Qr5-AA"
	fakeAWSKeyID    = "AKIA" + "IOSFODNN7EXAMPLE"
	fakeAWSSTS      = "ASIA" + "Y34FZKBOKMUTVV7A"
	fakeGitHub      = "ghp_" + "aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789"
	fakeGitHubOAuth = "gho_" + "aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789"
	fakeGitHubUser  = "ghu_" + "Zy9Xw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0FeDcBa"
	fakeGitHubApp   = "ghs_" + "Zy9Xw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0FeDcBa"
	fakeGitHubRef   = "ghr_" + "Zy9Xw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0FeDcBa"
	fakeGitHubPAT   = "github_pat_" + "11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789ab"
	fakeSlack       = "xoxb-" + "1234567890123-1234567890123-aBcDeFgHiJkLmNoPqRsTuVwX"
	fakeSlackUser   = "xoxp-" + "1234567890-abcdefABCDEF"
	fakeGoogle      = "AIza" + "SyD-3xAmPl3K3y_0123456789abcdefghij"
	fakeStripe      = "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc"
	fakeStripeRK    = "rk_live_" + "51H8aBcDeFgHiJkLmNoPqRsTuV"
	fakeJWT         = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9." + "eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
	fakeBearer      = "Zx8Qm3Lr7Tp2Wn6Ks9Vb4Hd1" + "Fg5Jc0"
	fakeAgentrt     = "art_" + "0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a6978"
	fakeAWSSecret   = "wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCYEXAMPLEKEY"
	fakePEMBody     = "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\n" + "VTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxK\n"
	fakePEM         = "-----BEGIN RSA PRIVATE KEY-----\n" + fakePEMBody + "-----END RSA PRIVATE KEY-----"
	// A JWE: its header names an "enc", and it has five parts.
	fakeJWE = "eyJhbGciOiJSU0EtT0FFUCIsImVuYyI6IkEyNTZHQ00ifQ." + "OKOawDo13gRp2ojaHV7LFpZcgV7T6DVZKTyKOMTYUmKoTCVJRgckCL9kiMT03JGe.48V1_ALb6US04U3b.5eym8TW_c8SuK0ltJ3rpYIzOeDQz7TALvtu6UG9oMo4vpzs9tX_EFShS8iB7j6jiSdiwkIr3ajwQzaBtQD_A.XFBoMYUZodetZdvTiFvSkQ"
)

// jsonString returns s as a JSON string literal, without the quotes.
func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}

func TestRedactTokenShapes(t *testing.T) {
	t.Parallel()

	r := output.NewRedactor(output.RedactorConfig{})
	tests := []struct {
		name string
		text string
		want string
		// counts, when nil, is one of the kind in want's only marker.
		counts output.Counts
	}{
		{"openai", "export OPENAI_API_KEY=" + fakeOpenAI, "export OPENAI_API_KEY=[REDACTED:openai_key]", nil},
		{"openai project", `{"key":"` + fakeOpenAIProj + `"}`, `{"key":"[REDACTED:openai_key]"}`, nil},
		{"anthropic", "key: " + fakeAnthropic + "\n", "key: [REDACTED:anthropic_key]\n", nil},
		{"aws key id", "id=" + fakeAWSKeyID + ".", "id=[REDACTED:aws_access_key_id].", nil},
		{"aws sts key id", `"AccessKeyId": "` + fakeAWSSTS + `"`, `"AccessKeyId": "[REDACTED:aws_access_key_id]"`, nil},
		{"github classic", "https://" + fakeGitHub + "@github.com/o/r", "https://[REDACTED:github_token]@github.com/o/r", nil},
		{"github oauth", "token " + fakeGitHubOAuth, "token [REDACTED:github_token]", nil},
		{"github user", "token " + fakeGitHubUser, "token [REDACTED:github_token]", nil},
		{"github app", "token " + fakeGitHubApp, "token [REDACTED:github_token]", nil},
		{"github refresh", "token " + fakeGitHubRef, "token [REDACTED:github_token]", nil},
		{"github fine-grained", "GH=" + fakeGitHubPAT, "GH=[REDACTED:github_token]", nil},
		{"slack bot", "SLACK_BOT_TOKEN=" + fakeSlack + "\n", "SLACK_BOT_TOKEN=[REDACTED:slack_token]\n", nil},
		{"slack user", "t=" + fakeSlackUser, "t=[REDACTED:slack_token]", nil},
		{"google", "js?key=" + fakeGoogle + "&callback=init", "js?key=[REDACTED:google_api_key]&callback=init", nil},
		{"stripe secret", "api_key = '" + fakeStripe + "'", "api_key = '[REDACTED:stripe_key]'", nil},
		{"stripe restricted", fakeStripeRK, "[REDACTED:stripe_key]", nil},
		{"agentrt", "Authorization: token " + fakeAgentrt, "Authorization: token [REDACTED:agentrt_token]", nil},
		{"password json", `{"user":"admin","password":"Xk9mP2vL7qR4"}`, `{"user":"admin","password":"[REDACTED:generic_secret]"}`, nil},
		{"password flag", "mysql --password=Pa55w0rdXyz db", "mysql --password=[REDACTED:generic_secret] db", nil},
		{"escaped json in json", `{"body":"{\"password\":\"Xk9mP2vL7qR4\"}"}`, `{"body":"{\"password\":\"[REDACTED:generic_secret]\"}"}`, nil},
		{"aws secret", "AWS_SECRET_ACCESS_KEY=" + fakeAWSSecret + "\n", "AWS_SECRET_ACCESS_KEY=[REDACTED:aws_secret_key]\n", nil},
		{"key shape in an assignment", `{"api_key":"` + fakeOpenAI + `"}`, `{"api_key":"[REDACTED:openai_key]"}`, nil},
		{"pagination token", `{"nextPageToken":"Xk9mP2vL7qR4"}`, `{"nextPageToken":"Xk9mP2vL7qR4"}`, output.Counts{}},
		{"jwt", "cookie: session=" + fakeJWT + "; Path=/", "cookie: session=[REDACTED:jwt]; Path=/", nil},
		{"jwt then a sentence", "token " + fakeJWT + ". Next", "token [REDACTED:jwt]. Next", nil},
		{"jwe", "enc " + fakeJWE + " end", "enc [REDACTED:jwt] end", nil},
		{"jws has three parts", fakeJWT + ".more", "[REDACTED:jwt].more", nil},
		{"pem", "key:\n" + fakePEM + "\nafter", "key:\n[REDACTED:private_key]\nafter", nil},
		{"pem escaped in json", `{"content":"` + jsonString(fakePEM) + `\n"}`, `{"content":"[REDACTED:private_key]\n"}`, nil},
		{"pem openssh", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ==\n-----END OPENSSH PRIVATE KEY-----\n",
			"[REDACTED:private_key]\n", nil},
		{"pem truncated", "-----BEGIN PRIVATE KEY-----\n" + fakePEMBody + "\n[truncated]", "[REDACTED:private_key]\n\n[truncated]", nil},
		{"pem truncated at the end", "x -----BEGIN PRIVATE KEY-----\n" + fakePEMBody, "x [REDACTED:private_key]\n", nil},
		{"pem other END label", "-----BEGIN EC PRIVATE KEY-----\nAbCd==\n-----END RSA PRIVATE KEY-----",
			"[REDACTED:private_key]\n-----END RSA PRIVATE KEY-----", nil},
		{"pem encrypted headers", "-----BEGIN EC PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,0123ABCD\n\nAbCd==\n-----END EC PRIVATE KEY-----!",
			"[REDACTED:private_key]!", nil},
		{"bearer", "Authorization: Bearer " + fakeBearer, "Authorization: Bearer [REDACTED:bearer_token]", nil},
		{"bearer lowercase", "authorization: bearer " + fakeBearer + "\r\n", "authorization: bearer [REDACTED:bearer_token]\r\n", nil},
		{"bearer padded", "Bearer " + fakeBearer + "== x", "Bearer [REDACTED:bearer_token] x", nil},
		{"bearer jwt is a jwt", `"Authorization":"Bearer ` + fakeJWT + `"`, `"Authorization":"Bearer [REDACTED:jwt]"`, nil},
		{"bearer github is github", "Bearer " + fakeGitHub, "Bearer [REDACTED:github_token]", nil},
		{"key after escaped newline", `{"text":"a\n` + fakeGitHub + `\tb"}`, `{"text":"a\n[REDACTED:github_token]\tb"}`, nil},
		{"several", "a " + fakeGitHub + " b " + fakeSlack + " c " + fakeOpenAI + " d " + fakeGitHubApp,
			"a [REDACTED:github_token] b [REDACTED:slack_token] c [REDACTED:openai_key] d [REDACTED:github_token]",
			output.Counts{"github_token": 2, "slack_token": 1, "openai_key": 1}},
		{"adjacent", fakeAWSKeyID + "/" + fakeGoogle, "[REDACTED:aws_access_key_id]/[REDACTED:google_api_key]",
			output.Counts{"aws_access_key_id": 1, "google_api_key": 1}},
		{"utf-8 around", "clé: «" + fakeOpenAI + "»", "clé: «[REDACTED:openai_key]»", nil},
	}
	marker := regexp.MustCompile(`\[REDACTED:([a-z_]+)\]`)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, counts := r.String(tt.text)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("String(%q) (-want +got):\n%s", tt.text, diff)
			}
			want := tt.counts
			if want == nil {
				m := marker.FindAllStringSubmatch(tt.want, -1)
				if len(m) != 1 {
					t.Fatalf("test case: want %q holds %d markers", tt.want, len(m))
				}
				want = output.Counts{m[0][1]: 1}
			}
			if diff := cmp.Diff(want, counts, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("counts (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRedactLeavesOrdinaryText(t *testing.T) {
	t.Parallel()

	r := output.NewRedactor(output.RedactorConfig{})
	texts := map[string]string{
		"prose":          "The quick brown fox jumps over the lazy dog. It's 12:30 and all tests passed (42 of 42).",
		"log line":       "2026-01-02T15:04:05.123Z INFO http: GET /api/v1/users?id=42 200 1.2ms remote=10.0.0.1:5123",
		"git hash":       "commit 76e059e4c3a1b2f0d9e8c7b6a5f4e3d2c1b0a9f8\nAuthor: A <a@example.com>",
		"sha256":         "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855  file.tar.gz",
		"md5":            "d41d8cd98f00b204e9800998ecf8427e",
		"uuid":           "request 550e8400-e29b-41d4-a716-446655440000 done; trace=6ba7b810-9dad-11d1-80b4-00c04fd430c8",
		"base64 blob":    "data: SGVsbG8sIHdvcmxkISBUaGlzIGlzIGp1c3QgYmFzZTY0IHRleHQu",
		"short sk":       "sk-abc and sk-1234567890",
		"sk lowercase":   "sk-" + strings.Repeat("abcdefgh", 5), // no upper case or digits
		"task words":     "task-force-readiness-checklist-for-the-whole-department-of-engineering",
		"akia long":      "AKIA" + "IOSFODNN7EXAMPLEXYZ",
		"akia in word":   "xAKIA" + "IOSFODNN7EXAMPLE",
		"aiza short":     "AIza" + "Short",
		"ghp short":      "ghp_" + "abc123",
		"slack no digit": "xoxb-" + "abcdefghijklmnop",
		"stripe test":    "sk_test_" + "4eC39HqLyjWDarjtT1zdp7dc",
		"eyJ no alg":     "eyJmb28iOiJiYXIiLCJiYXoiOjF9." + "eyJzdWIiOiIxMjM0NTY3ODkwIn0.abcdefghijklmnopqrstu",
		"eyJ alone":      "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9",
		"pem public":     "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAu1SU1L\n-----END PUBLIC KEY-----",
		"pem cert":       "-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIEAgAAuTANBgkqhkiG9w0BAQUFADBa\n-----END CERTIFICATE-----",
		"bearer short":   "Authorization: Bearer abc123",
		"bearer word":    "Authorization: Bearer your-token-here-please-replace",
		"bearer var":     "Authorization: Bearer $TOKEN_FROM_THE_ENVIRONMENT_1",
		"bearer alone":   "the bearer of this letter",
		"backslashes":    `C:\\Users\\me\\go\\bin \u00e9 \n\t\\`,
		"empty":          "",
	}
	for name, text := range texts {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, counts := r.String(text)
			if got != text || counts.Total() != 0 {
				t.Errorf("String(%q) = %q, %v; want it unchanged", text, got, counts)
			}
		})
	}
}

func TestRedactSecretsAndPatterns(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name   string
		cfg    output.RedactorConfig
		text   string
		want   string
		counts output.Counts
	}{
		{
			name:   "secret value",
			cfg:    output.RedactorConfig{Secrets: []string{"hunter2-db-pass"}},
			text:   "connecting with hunter2-db-pass to db (pass=hunter2-db-pass)",
			want:   "connecting with [REDACTED:secret_env] to db (pass=[REDACTED:secret_env])",
			counts: output.Counts{"secret_env": 2},
		},
		{
			name:   "short values are ignored",
			cfg:    output.RedactorConfig{Secrets: []string{"", "a", "abc", "abcd"}},
			text:   "a abc abcd abcde",
			want:   "a abc [REDACTED:secret_env] [REDACTED:secret_env]e",
			counts: output.Counts{"secret_env": 2},
		},
		{
			name:   "longest secret wins",
			cfg:    output.RedactorConfig{Secrets: []string{"pass", "password123", "pass"}},
			text:   "password123 pass passw",
			want:   "[REDACTED:secret_env] [REDACTED:secret_env] [REDACTED:secret_env]w",
			counts: output.Counts{"secret_env": 3},
		},
		{
			name:   "overlapping secrets: leftmost first",
			cfg:    output.RedactorConfig{Secrets: []string{"abcdef", "defghi"}},
			text:   "abcdefghi",
			want:   "[REDACTED:secret_env]ghi",
			counts: output.Counts{"secret_env": 1},
		},
		{
			name:   "secret value that is a token is a secret_env",
			cfg:    output.RedactorConfig{Secrets: []string{fakeGitHub}},
			text:   "token " + fakeGitHub + " and " + fakeGitHubApp,
			want:   "token [REDACTED:secret_env] and [REDACTED:github_token]",
			counts: output.Counts{"secret_env": 1, "github_token": 1},
		},
		{
			name:   "no token shapes",
			cfg:    output.RedactorConfig{NoTokenShapes: true, Secrets: []string{"s3cr3t-value"}},
			text:   fakeGitHub + " s3cr3t-value",
			want:   fakeGitHub + " [REDACTED:secret_env]",
			counts: output.Counts{"secret_env": 1},
		},
		{
			name:   "patterns",
			cfg:    output.RedactorConfig{Patterns: []*regexp.Regexp{regexp.MustCompile(`acct-[0-9]{6}`), regexp.MustCompile(`(?i)internal-[a-z]+`)}},
			text:   "acct-123456 acct-12 INTERNAL-host\nacct-654321",
			want:   "[REDACTED:pattern] acct-12 [REDACTED:pattern]\n[REDACTED:pattern]",
			counts: output.Counts{"pattern": 3},
		},
		{
			name:   "patterns match within lines",
			cfg:    output.RedactorConfig{Patterns: []*regexp.Regexp{regexp.MustCompile(`^pin: \d+$`), regexp.MustCompile(`a\s+b`)}},
			text:   "pin: 1234\nx pin: 5678\na\nb a  b",
			want:   "[REDACTED:pattern]\nx pin: 5678\na\nb [REDACTED:pattern]",
			counts: output.Counts{"pattern": 2},
		},
		{
			name:   "empty pattern matches remove nothing",
			cfg:    output.RedactorConfig{Patterns: []*regexp.Regexp{regexp.MustCompile(`x*`), nil}},
			text:   "abc xx",
			want:   "abc [REDACTED:pattern]",
			counts: output.Counts{"pattern": 1},
		},
		{
			name: "all three",
			cfg: output.RedactorConfig{
				Secrets:  []string{"db-pass-0001"},
				Patterns: []*regexp.Regexp{regexp.MustCompile(`cust_[0-9]+`)},
			},
			text:   "db-pass-0001 cust_42 " + fakeStripe,
			want:   "[REDACTED:secret_env] [REDACTED:pattern] [REDACTED:stripe_key]",
			counts: output.Counts{"secret_env": 1, "pattern": 1, "stripe_key": 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, counts := output.NewRedactor(tt.cfg).String(tt.text)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("String(%q) (-want +got):\n%s", tt.text, diff)
			}
			if diff := cmp.Diff(tt.counts, counts); diff != "" {
				t.Errorf("counts (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCounts(t *testing.T) {
	t.Parallel()

	c := output.Counts{"jwt": 1, "pattern": 2}
	c.Add(output.Counts{"jwt": 3, "secret_env": 1})
	c.Add(nil)
	if diff := cmp.Diff(output.Counts{"jwt": 4, "pattern": 2, "secret_env": 1}, c); diff != "" {
		t.Errorf("Add (-want +got):\n%s", diff)
	}
	if got := c.Total(); got != 7 {
		t.Errorf("Total() = %d, want 7", got)
	}
	if got := output.Counts(nil).Total(); got != 0 {
		t.Errorf("nil Total() = %d, want 0", got)
	}
}

// TestCountsHoldNoSecrets checks that what a Redactor reports names kinds
// only.
func TestCountsHoldNoSecrets(t *testing.T) {
	t.Parallel()

	r := output.NewRedactor(output.RedactorConfig{Secrets: []string{"value-of-the-secret"}})
	_, counts := r.String("value-of-the-secret " + fakeOpenAI)
	for k := range counts {
		if strings.Contains(k, "value-of") || strings.Contains(k, "sk-") {
			t.Errorf("counts hold %q", k)
		}
	}
}

// TestRedactJSON: JSON comes out valid, also when the replacement in
// place would break it, and a secret value is found escaped in JSON.
func TestRedactJSON(t *testing.T) {
	t.Parallel()
	quoted := `pa"ss<word>-` + "Zq8x"
	r := output.NewRedactor(output.RedactorConfig{
		Secrets:  []string{"nabc-secret", quoted},
		Patterns: []*regexp.Regexp{regexp.MustCompile(`id=\S+`)},
	})
	tests := []struct {
		name, in, want string
	}{
		{"nothing", `{"a":"b"}`, `{"a":"b"}`},
		{"token", `{"t":"` + fakeGitHub + `"}`, `{"t":"[REDACTED:github_token]"}`},
		{"secret escaped", `{"p":` + string(mustJSON(quoted)) + `}`, `{"p":"[REDACTED:secret_env]"}`},
		// The bytes look like the value, but the string holds a line feed
		// and "abc-secret": replacing them would break the document.
		{"what only looks like a secret", `{"p":"x\nabc-secret"}`, `{"p":"x\nabc-secret"}`},
		{"pattern across a quote", `{"q":"id=42","r":1}`, `{"q":"[REDACTED:pattern]","r":1}`},
		{"not JSON", `id=42 "`, `[REDACTED:pattern] "`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := r.JSON(tt.in)
			if got != tt.want {
				t.Errorf("JSON(%q) = %q, want %q", tt.in, got, tt.want)
			}
			if json.Valid([]byte(tt.in)) && !json.Valid([]byte(got)) {
				t.Errorf("JSON(%q) = %q is not JSON", tt.in, got)
			}
		})
	}
}

func mustJSON(s string) []byte {
	b, _ := json.Marshal(s)
	return b
}

// TestRedactedMarker: Redacted tells redacted text.
func TestRedactedMarker(t *testing.T) {
	t.Parallel()
	r := output.NewRedactor(output.RedactorConfig{})
	if red := r.Text("key " + fakeOpenAI); !output.Redacted(red) || output.Redacted("key") {
		t.Errorf("Redacted(%q) is false, or Redacted(%q) true", red, "key")
	}
}
