package output_test

import (
	"bytes"
	"errors"
	"io/fs"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/agentrt/agentrt/output"
)

// pieces are what randomText assembles texts from: secrets of every
// kind, near misses and the constructs whose decisions need lookahead
// (escapes, PEM blocks, JWTs, "Bearer", long words and lines).
var pieces = func() []string {
	longBody := strings.Repeat("QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo0NTY3ODkw\n", 200) // ~9 KiB
	return []string{
		"the ", "quick ", "brown ", "fox. ", "\n", "\r\n", "\t", " ", "», ", "été ", "日本語 ", "(42) ", "x=1; ", "/usr/bin/env ",
		"550e8400-e29b-41d4-a716-446655440000 ", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 ",
		fakeOpenAI, fakeOpenAIProj, fakeAnthropic, fakeAWSKeyID, fakeAWSSTS, fakeGitHub, fakeGitHubApp, fakeGitHubPAT,
		fakeSlack, fakeSlackUser, fakeGoogle, fakeStripe, fakeStripeRK, fakeJWT, fakeJWE, fakePEM, jsonString(fakePEM),
		"Authorization: Bearer " + fakeBearer, "bearer  " + fakeBearer + "==", "Bearer ", "Bearer " + fakeJWT,
		"sk-", "sk-ant-", "ghp_", "github_pat_", "AKIA", "AIza", "xoxb-", "eyJ", "eyJhbGciOiJIUzI1NiJ9.", ".", "-", "--", "-----",
		"-----BEGIN ", "-----BEGIN RSA PRIVATE KEY-----", "-----BEGIN RSA PRIVATE KEY-----\n" + fakePEMBody,
		"-----END RSA PRIVATE KEY-----", "-----END ", "-----BEGIN PRIVATE KEY-----\n" + longBody + "-----END PRIVATE KEY-----",
		"-----BEGIN EC PRIVATE KEY-----\nAbCd\n" + strings.Repeat(" \n", 600) + "AbCd\n-----END EC PRIVATE KEY-----",
		`\`, `\\`, `\n`, `\u00e9`, `\u00`, `\"`, `\/`,
		"hunter2-db-pass", "hunter2-db-pass-but-longer", "hunter2", "db-pass", "pass",
		"acct-123456", "acct-12", "pin: 1234", "INTERNAL-host",
		"password: ", `"api_key":"`, `\"token\":\"`, "--secret=", "AWS_SECRET_ACCESS_KEY=", "pageToken=", "Xk9mP2vL7qR4",
		"wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCYEXAMPLEKEY", "'", `"`, "=", ": ", fakeAgentrt, "art_",
		strings.Repeat("abcdefghij", 300), strings.Repeat("Ab1", 200),
		strings.Repeat("w", 70<<10), // a line longer than a pattern's piece
	}
}()

// randomText returns a text of n pieces, mostly short ones.
func randomText(rng *rand.Rand, n int) string {
	var b strings.Builder
	for range n {
		p := pieces[rng.IntN(len(pieces))]
		if len(p) > 4<<10 && rng.IntN(8) != 0 {
			continue // keep the long pieces rare
		}
		b.WriteString(p)
	}
	return b.String()
}

var streamConfigs = map[string]output.RedactorConfig{
	"shapes": {},
	"all": {
		Secrets: []string{"hunter2-db-pass", "hunter2-db-pass-but-longer", "db-pass", "abc"},
		Patterns: []*regexp.Regexp{
			regexp.MustCompile(`acct-[0-9]{6}`), regexp.MustCompile(`^pin: \d+$`), regexp.MustCompile(`(?i)internal-[a-z]+`),
		},
	},
	"secrets only": {NoTokenShapes: true, Secrets: []string{"hunter2-db-pass", "db-pass", "pass"}},
}

// writeSplit writes text to w in pieces cut at the given points.
func writeSplit(t *testing.T, w *output.RedactWriter, text string, cuts []int) {
	t.Helper()
	from := 0
	for _, c := range append(cuts, len(text)) {
		n, err := w.Write([]byte(text[from:c]))
		if err != nil || n != c-from {
			t.Fatalf("Write = %d, %v; want %d, nil", n, err, c-from)
		}
		from = c
	}
	if err := w.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// TestWriterMatchesString checks the property that makes streaming safe:
// however a text is cut into writes, a RedactWriter writes what String
// returns for the whole text, with the same counts.
func TestWriterMatchesString(t *testing.T) {
	t.Parallel()

	for name, cfg := range streamConfigs {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := output.NewRedactor(cfg)
			rng := rand.New(rand.NewPCG(1, uint64(len(name))))
			for iter := range 200 {
				text := randomText(rng, 1+rng.IntN(60))
				want, wantCounts := r.String(text)
				for split := range 4 {
					var cuts []int
					switch {
					case split == 0 && len(text) < 8<<10:
						for i := 1; i < len(text); i++ {
							cuts = append(cuts, i) // a byte at a time
						}
					default:
						k := rng.IntN(12)
						for range k {
							cuts = append(cuts, rng.IntN(len(text)+1))
						}
						slices.Sort(cuts)
					}
					var got bytes.Buffer
					w := r.Writer(&got)
					writeSplit(t, w, text, cuts)
					if got.String() != want {
						t.Fatalf("iteration %d, split %d (%d writes): the writer's output differs from String's\ntext: %.400q\nwant: %.400q\ngot:  %.400q",
							iter, split, len(cuts)+1, text, want, got.String())
					}
					if diff := cmp.Diff(wantCounts, w.Counts(), cmpopts.EquateEmpty()); diff != "" {
						t.Fatalf("iteration %d, split %d (%d writes): counts (-String +writer):\n%s", iter, split, len(cuts)+1, diff)
					}
				}
			}
		})
	}
}

// TestWriterLongPEM streams a private key far longer than anything the
// writer holds back: it is dropped as it streams, whole.
func TestWriterLongPEM(t *testing.T) {
	t.Parallel()

	r := output.NewRedactor(output.RedactorConfig{})
	var got bytes.Buffer
	w := r.Writer(&got)
	write := func(s string) {
		t.Helper()
		if _, err := w.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	write("before\n-----BEGIN OPENSSH PRIVATE KEY-----\n")
	line := strings.Repeat("b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ", 1) + "\n"
	for range 100_000 { // 4.3 MB
		write(line)
	}
	write("-----END OPENSSH PRIVATE KEY-----\nafter\n")
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff("before\n[REDACTED:private_key]\nafter\n", got.String()); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
}

func TestWriterClosed(t *testing.T) {
	t.Parallel()

	var got bytes.Buffer
	w := output.NewRedactor(output.RedactorConfig{}).Writer(&got)
	if _, err := w.Write([]byte("token " + fakeGitHub[:10])); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := w.Write([]byte("x")); !errors.Is(err, fs.ErrClosed) {
		t.Errorf("Write after Close: %v, want fs.ErrClosed", err)
	}
	if got.String() != "token "+fakeGitHub[:10] {
		t.Errorf("output = %q", got.String())
	}
}

type failWriter struct{ err error }

func (f failWriter) Write([]byte) (int, error) { return 0, f.err }

func TestWriterDestinationError(t *testing.T) {
	t.Parallel()

	boom := errors.New("disk full")
	w := output.NewRedactor(output.RedactorConfig{}).Writer(failWriter{boom})
	// The first write's text is decided only at Close or once more
	// follows.
	text := strings.Repeat("plain text ", 1000)
	_, err1 := w.Write([]byte(text))
	_, err2 := w.Write([]byte(text))
	if !errors.Is(err1, boom) || !errors.Is(err2, boom) {
		t.Errorf("Write errors = %v, %v; want %v", err1, err2, boom)
	}
	if err := w.Close(); !errors.Is(err, boom) {
		t.Errorf("Close = %v, want %v", err, boom)
	}
}
