package checker_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/policy"
	"github.com/agentrt/agentrt/policy/checker"
)

// Fake credentials, each assembled from two literals so that secret
// scanners reading this file do not flag it.
var (
	fakeOpenAI     = "sk-" + "T3BlbkFJaB1cD2eF3gH4iJ5kL6mN7oP8qR9sT0uV1wX2yZ3"
	fakeOpenAIProj = "sk-" + "proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z_Ab7cDe0f-Gh2iJk"
	fakeAnthropic  = "sk-ant-" + "api03-Xy7_Zq9-Ab3Cd5Ef7Gh9Ij1Kl3Mn5Op7Qr9St1Uv3Wx5Yz7Ab9Cd1Ef3Gh5Ij7Kl9Mn1Op3Qr5-AA"
	fakeAWSKeyID   = "AKIA" + "IOSFODNN7EXAMPLE"
	fakeAWSSTS     = "ASIA" + "Y34FZKBOKMUTVV7A"
	fakeAWSSecret  = "wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCYEXAMPLEKEY"
	fakeGitHub     = "ghp_" + "aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789"
	fakeGitHubApp  = "ghs_" + "Zy9Xw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0FeDcBa"
	fakeGitHubPAT  = "github_pat_" + "11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789ab"
	fakeSlack      = "xoxb-" + "1234567890123-1234567890123-aBcDeFgHiJkLmNoPqRsTuVwX"
	fakeGoogle     = "AIza" + "SyD-3xAmPl3K3y_0123456789abcdefghij"
	fakeStripe     = "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc"
	fakeStripeRK   = "rk_live_" + "51H8aBcDeFgHiJkLmNoPqRsTuV"
	fakeJWT        = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9." + "eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
	fakeBearer     = "Zx8Qm3Lr7Tp2Wn6Ks9Vb4Hd1" + "Fg5Jc0"
	fakePEMBody    = "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\n" + "VTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxK\n"
	fakePEM        = "-----BEGIN RSA PRIVATE KEY-----\n" + fakePEMBody + "-----END RSA PRIVATE KEY-----"
)

// at returns the finding of kind covering the first occurrence of secret
// in text.
func at(t *testing.T, text, kind, secret string) policy.Finding {
	t.Helper()
	i := strings.Index(text, secret)
	if i < 0 {
		t.Fatalf("test case: %q is not in %q", secret, text)
	}
	return policy.Finding{Kind: kind, Start: i, End: i + len(secret)}
}

// jsonString returns s as a JSON string literal, without the quotes: what
// s looks like inside raw input JSON.
func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}

type secretCase struct {
	name string
	text string
	// want holds kind and secret pairs, in order.
	want [][2]string
}

func TestSecretsFind(t *testing.T) {
	t.Parallel()

	escapedPEM := jsonString(fakePEM)
	tests := []secretCase{
		{"openai", "export OPENAI_API_KEY=" + fakeOpenAI, [][2]string{{"openai_key", fakeOpenAI}}},
		{"openai project", `{"key":"` + fakeOpenAIProj + `"}`, [][2]string{{"openai_key", fakeOpenAIProj}}},
		{"anthropic", "key: " + fakeAnthropic + "\n", [][2]string{{"anthropic_key", fakeAnthropic}}},
		{"aws key id", "id=" + fakeAWSKeyID + ".", [][2]string{{"aws_access_key_id", fakeAWSKeyID}}},
		{"aws sts key id", `"AccessKeyId": "` + fakeAWSSTS + `"`, [][2]string{{"aws_access_key_id", fakeAWSSTS}}},
		{"aws secret env", "AWS_SECRET_ACCESS_KEY=" + fakeAWSSecret, [][2]string{{"aws_secret_key", fakeAWSSecret}}},
		{"aws secret ini", "aws_access_key_id = " + fakeAWSKeyID + "\naws_secret_access_key = " + fakeAWSSecret + "\n",
			[][2]string{{"aws_access_key_id", fakeAWSKeyID}, {"aws_secret_key", fakeAWSSecret}}},
		{"aws secret json", `{"SecretAccessKey":"` + fakeAWSSecret + `"}`, [][2]string{{"aws_secret_key", fakeAWSSecret}}},
		{"github classic", "git remote set-url origin https://" + fakeGitHub + "@github.com/o/r", [][2]string{{"github_token", fakeGitHub}}},
		{"github app", "token " + fakeGitHubApp, [][2]string{{"github_token", fakeGitHubApp}}},
		{"github fine-grained", "GH=" + fakeGitHubPAT, [][2]string{{"github_token", fakeGitHubPAT}}},
		{"slack", "SLACK_BOT_TOKEN=" + fakeSlack + "\n", [][2]string{{"slack_token", fakeSlack}}},
		{"google", "https://maps.googleapis.com/maps/api/js?key=" + fakeGoogle + "&callback=init", [][2]string{{"google_api_key", fakeGoogle}}},
		{"stripe secret", "Stripe.api_key = '" + fakeStripe + "'", [][2]string{{"stripe_key", fakeStripe}}},
		{"stripe restricted", fakeStripeRK, [][2]string{{"stripe_key", fakeStripeRK}}},
		{"jwt", "cookie: session=" + fakeJWT + "; Path=/", [][2]string{{"jwt", fakeJWT}}},
		{"pem", "key:\n" + fakePEM + "\n", [][2]string{{"private_key", fakePEM}}},
		{"pem escaped in json", `{"content":"` + escapedPEM + `\n"}`, [][2]string{{"private_key", escapedPEM}}},
		{"pem openssh", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ==\n-----END OPENSSH PRIVATE KEY-----",
			[][2]string{{"private_key", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ==\n-----END OPENSSH PRIVATE KEY-----"}}},
		{"pem truncated", "-----BEGIN PRIVATE KEY-----\n" + fakePEMBody + "\n[truncated]",
			[][2]string{{"private_key", "-----BEGIN PRIVATE KEY-----\n" + strings.TrimSuffix(fakePEMBody, "\n")}}},
		{"pem encrypted headers", "-----BEGIN EC PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,0123ABCD\n\nAbCd==\n-----END EC PRIVATE KEY-----",
			[][2]string{{"private_key", "-----BEGIN EC PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,0123ABCD\n\nAbCd==\n-----END EC PRIVATE KEY-----"}}},
		{"bearer", "Authorization: Bearer " + fakeBearer, [][2]string{{"bearer_token", fakeBearer}}},
		{"bearer lowercase", "authorization: bearer " + fakeBearer + "\r\n", [][2]string{{"bearer_token", fakeBearer}}},
		{"bearer jwt is a jwt", `{"headers":{"Authorization":"Bearer ` + fakeJWT + `"}}`, [][2]string{{"jwt", fakeJWT}}},
		{"password json", `{"user":"admin","password":"Xk9mP2vL7qR4"}`, [][2]string{{"generic_secret", "Xk9mP2vL7qR4"}}},
		{"password yaml", "db:\n  password: s3cr3tPassw0rd!\n", [][2]string{{"generic_secret", "s3cr3tPassw0rd!"}}},
		{"password flag", "mysql -u root --password=Pa55w0rdXyz db", [][2]string{{"generic_secret", "Pa55w0rdXyz"}}},
		{"api key header", "x-api-key: 3f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c", [][2]string{{"generic_secret", "3f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c"}}},
		{"camel case name", `const apiKey = "Qw8Er7Ty6Ui5Op4As3Df2Gh1"`, [][2]string{{"generic_secret", "Qw8Er7Ty6Ui5Op4As3Df2Gh1"}}},
		{"go assignment", `clientSecret := "d41d8cd98f00b204e9800998ecf8427e"`, [][2]string{{"generic_secret", "d41d8cd98f00b204e9800998ecf8427e"}}},
		{"url query", "https://api.example.com/v1?access_token=9aZ8yX7wV6uT5sR4qP3o&format=json", [][2]string{{"generic_secret", "9aZ8yX7wV6uT5sR4qP3o"}}},
		{"uuid in a token assignment", `{"token":"550e8400-e29b-41d4-a716-446655440000"}`, [][2]string{{"generic_secret", "550e8400-e29b-41d4-a716-446655440000"}}},
		{"escaped json in json", `{"body":"{\"password\":\"Xk9mP2vL7qR4\"}"}`, [][2]string{{"generic_secret", "Xk9mP2vL7qR4"}}},
		{"key after escaped newline", `{"text":"a\n` + fakeGitHub + `\tb"}`, [][2]string{{"github_token", fakeGitHub}}},
		{"specific beats generic", `{"api_key":"` + fakeOpenAI + `"}`, [][2]string{{"openai_key", fakeOpenAI}}},
		{"specific beats generic env", "GITHUB_TOKEN=" + fakeGitHub, [][2]string{{"github_token", fakeGitHub}}},
		{"overlapping generics unite", "token=Abc123xyzQ9token=Xyz789abcK3", [][2]string{{"generic_secret", "Abc123xyzQ9token=Xyz789abcK3"}}},
		{"several", "a " + fakeGitHub + " b " + fakeSlack + " c " + fakeOpenAI,
			[][2]string{{"github_token", fakeGitHub}, {"slack_token", fakeSlack}, {"openai_key", fakeOpenAI}}},
		{"adjacent", fakeAWSKeyID + "/" + fakeGoogle, [][2]string{{"aws_access_key_id", fakeAWSKeyID}, {"google_api_key", fakeGoogle}}},
		{"at the very end", fakeStripe, [][2]string{{"stripe_key", fakeStripe}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var want []policy.Finding
			from := 0
			for _, w := range tt.want {
				f := at(t, tt.text[from:], w[0], w[1])
				f.Start += from
				f.End += from
				from = f.End
				want = append(want, f)
			}
			got := checker.Secrets{}.Find(tt.text)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Find(%q) findings (-want +got):\n%s", tt.text, diff)
			}
		})
	}
}

// TestSecretsNearMisses: text that resembles a secret and is not one.
func TestSecretsNearMisses(t *testing.T) {
	t.Parallel()
	tests := []string{
		"pip install sk-learn scikit-learn",
		"task-1234 disk-usage risk-assessment",
		"sk-" + "thisisaverylongslugnamewithoutanydigitsoruppercase",
		"sk-" + "Ab1",
		"sk_test_" + "4eC39HqLyjWDarjtT1zdp7dc",
		"550e8400-e29b-41d4-a716-446655440000",
		`{"id":"550e8400-e29b-41d4-a716-446655440000","request_id":"6ba7b810-9dad-11d1-80b4-00c04fd430c8"}`,
		"commit 3f786850e387550fdab836ed7e6dc881de23001b",
		`{"sha":"3f786850e387550fdab836ed7e6dc881de23001b","tree":"4b825dc642cb6eb9a060e54bf8d69288fbee4904"}`,
		"AKIA" + "IOSFODNN7EXAMPL",
		"AKIA" + "IOSFODNN7EXAMPLEX",
		"akia" + "iosfodnn7example",
		"ASIAN markets opened higher; AKIAK is a town",
		"ghp_short gho_ ghu_x",
		"ghp_" + "aBcDeFgHiJkLmNoPqRsTuVwXyZ012345678",
		"github_pat_" + "11ABCDEFG",
		"xoxo-hugs-and-kisses-1234567890",
		"xoxb-" + "notatoken",
		"AIza" + "SyShort",
		"AIza" + "SyD-3xAmPl3K3y_0123456789abcdefghijk",
		"eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9",
		`"data":"eyJmb28iOiJiYXIiLCJiYXoiOjEyMzQ1fQ=="`,
		"eyJhbGciOiJub25lIn0.eyJzdWIiOiIxIn0.",
		"eyJub3QiOiJhIGp3dCJ9.eyJzdWIiOiIxIn0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV",
		"version eyJ.eyJ.abc",
		"Authorization: Bearer token",
		"Authorization: Bearer ${TOKEN}",
		"Authorization: Bearer <your-token-here>",
		`curl -H "Authorization: Bearer $GITHUB_TOKEN" https://api.github.com/user`,
		"the bearer of this letter",
		`{"password":"hunter2"}`,
		`{"password":"changeme"}`,
		`{"password":"correct horse battery staple"}`,
		`{"password":"${DB_PASSWORD}"}`,
		`{"password":null,"token":""}`,
		`password = os.environ["DB_PASSWORD"]`,
		`token = config.apiToken`,
		`{"api_key":"YOUR_API_KEY"}`,
		`api_key: "your-api-key-here-123"`,
		`api_key: "sk-...redacted...1234"`,
		`{"password":"********"}`,
		`password=/run/secrets/db_password1`,
		`{"token":"https://auth.example.com/oauth2/token"}`,
		`{"password_hash":"$2b$12$KIXQeJ8n1Yd7hQnH3vC0vO9n0f2s7hYxQwE1rT6yU8iO2pL4kJ6mC"}`,
		`{"max_tokens":4096,"token_count":12,"tokenizer":"cl100k_base"}`,
		`{"nextPageToken":"CiAKGjBpNDd2Nmp2Zml2cXRwYjBpOXA3bTdoNmQ"}`,
		`{"secret_name":"prod-db-creds-2","secretName":"Ab12Cd34Ef56"}`,
		"The secret: Kubernetes stores it for you.",
		"Forgot password? Reset it at https://example.com/reset",
		"Use a token: see the documentation.",
		"password: [REDACTED:generic_secret]",
		"-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAu1SU1LfVLPHCozMxH2Mo\n-----END PUBLIC KEY-----",
		"-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIEAgAAuTANBgkqhkiG9w0BAQUFADBaMQswCQYDVQQGEwJJ\n-----END CERTIFICATE-----",
		"-----BEGIN PRIVATE KEY",
		`{"image":"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="}`,
		"The quick brown fox jumps over the lazy dog. Secrets are stored in Vault; tokens expire after one hour.",
		`C:\new\token\path`,
		"",
	}
	for _, text := range tests {
		if got := (checker.Secrets{}).Find(text); len(got) != 0 {
			t.Errorf("Find(%q) = %v, want no findings", text, got)
		}
	}
}

func TestSecretsCheck(t *testing.T) {
	t.Parallel()
	input := json.RawMessage(`{"command":"curl -H 'Authorization: Bearer ` + fakeBearer + `' https://x","env":{"GITHUB_TOKEN":"` + fakeGitHub + `"}}`)
	tests := []struct {
		name string
		in   policy.CheckInput
		want policy.CheckResult
	}{
		{
			name: "input",
			in:   policy.CheckInput{Phase: policy.PhaseInput, ToolName: "shell", Input: input},
			want: policy.CheckResult{
				Flagged:    true,
				ReasonCode: "secret_in_input",
				Message:    "the tool input holds likely secrets (bearer_token, github_token)",
				Findings: []policy.Finding{
					at(t, string(input), "bearer_token", fakeBearer),
					at(t, string(input), "github_token", fakeGitHub),
				},
			},
		},
		{
			name: "output",
			in:   policy.CheckInput{Phase: policy.PhaseOutput, ToolName: "read_file", Output: "OPENAI_API_KEY=" + fakeOpenAI + "\n", Input: input},
			want: policy.CheckResult{
				Flagged:    true,
				ReasonCode: "secret_in_output",
				Message:    "the tool output holds likely secrets (openai_key)",
				Findings:   []policy.Finding{at(t, "OPENAI_API_KEY="+fakeOpenAI+"\n", "openai_key", fakeOpenAI)},
			},
		},
		{
			name: "clean input",
			in:   policy.CheckInput{Phase: policy.PhaseInput, ToolName: "shell", Input: json.RawMessage(`{"command":"ls -la"}`)},
		},
		{
			name: "no input",
			in:   policy.CheckInput{Phase: policy.PhaseInput, ToolName: "shell"},
		},
		{
			name: "input phase ignores output",
			in:   policy.CheckInput{Phase: policy.PhaseInput, ToolName: "shell", Output: fakeOpenAI},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := checker.Secrets{}.Check(t.Context(), &tt.in)
			if err != nil {
				t.Fatalf("Check: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Check result (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSecretsRedactInputJSON: redacting raw input JSON with the findings
// keeps it valid JSON and removes every secret.
func TestSecretsRedactInputJSON(t *testing.T) {
	t.Parallel()
	in := map[string]any{
		"command": "curl -H 'Authorization: Bearer " + fakeBearer + "' https://x",
		"files":   map[string]string{"id_rsa": fakePEM, ".env": "OPENAI_API_KEY=" + fakeOpenAI + "\nDB_PASSWORD=Xk9mP2vL7qR4\n"},
		"nested":  `{"token":"` + fakeJWT + `"}`,
	}
	raw, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	found := checker.Secrets{}.Find(string(raw))
	redacted := checker.Redact(string(raw), found)
	if !json.Valid([]byte(redacted)) {
		t.Fatalf("redacted input is not valid JSON: %s", redacted)
	}
	for _, secret := range []string{fakeBearer, "MIIEowIBAAKCAQEA", fakeOpenAI, "Xk9mP2vL7qR4", "SflKxwRJSMeKKF2QT4fw"} {
		if strings.Contains(redacted, secret) {
			t.Errorf("redacted input still holds %q: %s", secret, redacted)
		}
	}
	want := []string{"bearer_token", "private_key", "openai_key", "generic_secret", "jwt"}
	for _, k := range want {
		if !strings.Contains(redacted, "[REDACTED:"+k+"]") {
			t.Errorf("redacted input has no [REDACTED:%s]: %s", k, redacted)
		}
	}
}

// checkFindings fails the test unless found are non-empty-kinded ranges
// within text, sorted and non-overlapping.
func checkFindings(t *testing.T, text string, found []policy.Finding) {
	t.Helper()
	for i, f := range found {
		if f.Kind == "" || f.Start < 0 || f.Start >= f.End || f.End > len(text) {
			t.Fatalf("finding %d %+v is invalid for text of %d bytes", i, f, len(text))
		}
		if i > 0 && found[i-1].End > f.Start {
			t.Fatalf("findings %d %+v and %d %+v overlap or are out of order", i-1, found[i-1], i, f)
		}
	}
	redacted := checker.Redact(text, found)
	wantLen := len(text)
	for _, f := range found {
		wantLen += len("[REDACTED:"+f.Kind+"]") - (f.End - f.Start)
	}
	if len(redacted) != wantLen {
		t.Fatalf("Redact returned %d bytes, want %d", len(redacted), wantLen)
	}
}

func FuzzSecrets(f *testing.F) {
	for _, s := range []string{
		"", "sk-", "\\", `\u00`, "-----BEGIN ", "-----BEGIN RSA PRIVATE KEY-----\\n", "eyJ", "eyJ.eyJ.",
		"Bearer ", "password=", `"token":"`, "token=\\\"", fakeOpenAI, fakeAnthropic, fakeAWSKeyID,
		"aws_secret_access_key=" + fakeAWSSecret, fakeGitHub, fakeGitHubPAT, fakeSlack, fakeGoogle, fakeStripe,
		fakeJWT, fakePEM, jsonString(fakePEM), "Bearer " + fakeBearer, "token=Abc123xyzQ9token=Xyz789abcK3",
		`{"password":"Xk9mP2vL7qR4"}`, "\xff\xfesk-\x80", "AKIA" + strings.Repeat("A", 16) + "\xff",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		found := checker.Secrets{}.Find(text)
		checkFindings(t, text, found)
		for _, phase := range []string{policy.PhaseInput, policy.PhaseOutput} {
			res, err := checker.Secrets{}.Check(t.Context(), &policy.CheckInput{Phase: phase, Input: json.RawMessage(text), Output: text})
			if err != nil {
				t.Fatalf("Check: %v", err)
			}
			if res.Flagged != (len(found) > 0) || len(res.Findings) != len(found) {
				t.Fatalf("Check(%s) = %+v, want findings %v", phase, res, found)
			}
		}
	})
}

// BenchmarkSecrets scans a typical 2 KB tool input: a write_file call
// with Go source and no secret.
func BenchmarkSecrets(b *testing.B) {
	input, err := os.ReadFile(filepath.Join("testdata", "typical_input.json"))
	if err != nil {
		b.Fatal(err)
	}
	in := &policy.CheckInput{Phase: policy.PhaseInput, ToolName: "write_file", Input: input}
	b.SetBytes(int64(len(input)))
	b.ReportAllocs()
	for b.Loop() {
		res, err := checker.Secrets{}.Check(b.Context(), in)
		if err != nil || res.Flagged {
			b.Fatalf("Check = %+v, %v", res, err)
		}
	}
}
