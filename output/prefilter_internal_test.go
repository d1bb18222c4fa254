package output

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestMayFindNeverMisses: where mayFind says no, the shape scanner finds
// nothing, on texts built from near misses of every shape and
// assignment.
func TestMayFindNeverMisses(t *testing.T) {
	t.Parallel()
	pieces := []string{
		"sk-", "sk-ant-", "rk_live_", "AKIA", "ASIA", "AIza", "ghp_", "github_pat_", "xoxb-", "art_", "eyJ", "ey", "-----BEGIN ",
		"PRIVATE KEY-----", "Bearer ", "bEaReR\t", "token", "api_key", "password", "Secret", "pageToken", "=", ":", `"`, "'", `\"`,
		`\n`, `\u0067`, "\\", " ", "\t", "\n", ".", "aB3", "Xk9mP2vL7qR4", "0123456789", "ABCDEFGHIJKLMNOP", "abcdefghijklmnopqrstuvwxyz",
		"T3BlbkFJaB1cD2eF3gH4iJ5kL6mN7oP8", "QUJDREVGR0hJSktMTU5PUFFSU1RVVldY", "==",
	}
	rng := rand.New(rand.NewPCG(7, 8))
	for range 20000 {
		var b strings.Builder
		for range 1 + rng.IntN(12) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		s := b.String()
		if mayFind(s) {
			continue
		}
		c := Counts{}
		if out, tail, _ := (&shapeScanner{}).redact(nil, s, true, c); len(out) > 0 || tail > 0 || len(c) > 0 {
			t.Fatalf("mayFind(%q) is false, but the scanner found %v", s, c)
		}
	}
}

// TestKeywordTails: keywordTail accepts the end of every keyword.
func TestKeywordTails(t *testing.T) {
	t.Parallel()
	for _, k := range append(keywords, "API_KEY", "client-secret", "apiKey") {
		if !keywordTail(k) {
			t.Errorf("keywordTail(%q) is false", k)
		}
	}
}

// TestWriterDecidesOrdinaryWordsAtOnce: a streaming redactor holds back
// only what may start a secret, not a window of text after every word.
func TestWriterDecidesOrdinaryWordsAtOnce(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	w := NewRedactor(RedactorConfig{}).Writer(&out)
	if _, err := w.Write([]byte("The order shipped on Monday, and then ")); err != nil {
		t.Fatal(err)
	}
	if got, want := out.String(), "The order shipped on Monday, and then "; got != want {
		t.Errorf("written before Close: %q, want %q", got, want)
	}
	if _, err := w.Write([]byte("sk-")); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "sk-") {
		t.Errorf("the start of a key shape was written before it was decided: %q", out.String())
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestCleanCache: texts found clean are remembered by content, never a
// text with a secret, and a text like a clean one but for a secret is
// still redacted; the cache is safe for concurrent use.
func TestCleanCache(t *testing.T) {
	t.Parallel()
	r := NewRedactor(RedactorConfig{Secrets: []string{"hunter2-Zq8x"}})
	clean := strings.Repeat("an ordinary line of text ", 4)
	dirty := clean[:len(clean)-len("hunter2-Zq8x")] + "hunter2-Zq8x"
	done := make(chan struct{})
	for range 4 {
		go func() {
			defer func() { done <- struct{}{} }()
			for range 200 {
				if got, c := r.String(clean); got != clean || c != nil {
					t.Errorf("String(clean) = %q, %v", got, c)
				}
				if got, _ := r.String(dirty); strings.Contains(got, "hunter2") {
					t.Errorf("String(dirty) = %q", got)
				}
			}
		}()
	}
	for range 4 {
		<-done
	}
	if !r.clean.has(clean) || r.clean.has(dirty) {
		t.Errorf("the cache has the clean text: %v, the dirty one: %v", r.clean.has(clean), r.clean.has(dirty))
	}
}
