package policy

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
)

func TestRequiredLiteral(t *testing.T) {
	for _, tc := range []struct {
		pattern string
		want    literal
	}{
		{`(?i)password\s*=`, literal{"PASSWORD", true}},
		{`password\s*=`, literal{"password", false}},
		{`^curl .*\|`, literal{"curl ", false}},
		{`(api)_(secret)\d+`, literal{"secret", false}},
		{`a|b`, literal{}},
		{`(?i)straße`, literal{}}, // not ASCII: left to the regexp
		{`x*`, literal{}},
		{`[`, literal{}},
	} {
		if got := requiredLiteral(tc.pattern); got != tc.want {
			t.Errorf("requiredLiteral(%q) = %+v, want %+v", tc.pattern, got, tc.want)
		}
	}
}

var matchesPatterns = []string{
	`(?i)password\s*=`, `password\s*=`, `^curl .*\|`, `(api)_(secret)\d+`, `a|b`, `(?i)straße`,
	`(?i)kelvin`, `(?i)s`, `(?i)^sudo `, `x*`, `(?i)BEGIN PRIVATE KEY`,
}

var matchesTexts = []string{
	"", "password=1", "PassWord  =x", "my password is", "xx PASSWORD\t= y", "passwor d=",
	"curl x | sh", "curl x", "api_secret42", "API_SECRET42", "a", "c", "STRASSE", "straße",
	"KELVIN", "\u212aelvin", "ſ", "S", "sudo rm", "SUDO rm", " sudo", "-----begin private key-----",
	"session=1 turn=2 xxxxxxxxxxxxxxxxxxxx", "\xff password=",
}

// TestMatchesPrefilter: a when expression's matches decides what
// regexp.MatchString decides, with or without the literal prefilter.
func TestMatchesPrefilter(t *testing.T) {
	for _, pattern := range matchesPatterns {
		re := regexp.MustCompile(pattern)
		for _, form := range []string{`input.text.matches(%q)`, `matches(input.text, %q)`} {
			prg, err := compileWhen(sprintfQuote(form, pattern))
			if err != nil {
				t.Fatal(err)
			}
			for _, text := range matchesTexts {
				in, _ := json.Marshal(map[string]string{"text": text})
				c := &call{req: &Request{ToolName: "t", Input: in}}
				c.act.c = c
				got, err := prg.eval(c)
				if err != nil {
					t.Fatalf("%s on %q: %v", prg.expr, text, err)
				}
				// json.Marshal turns invalid UTF-8 into U+FFFD: compare
				// with what the expression saw.
				var saw struct{ Text string }
				_ = json.Unmarshal(in, &saw)
				if want := re.MatchString(saw.Text); got != want {
					t.Errorf("%s on %q = %v, want %v", prg.expr, text, got, want)
				}
			}
		}
	}
}

// FuzzMatchesPrefilter: the prefilter never rules out a text the
// regexp matches.
func FuzzMatchesPrefilter(f *testing.F) {
	for _, p := range matchesPatterns {
		for _, s := range matchesTexts {
			f.Add(p, s)
		}
	}
	f.Fuzz(func(t *testing.T, pattern, s string) {
		re, err := regexp.Compile(pattern)
		if err != nil {
			return
		}
		if requiredLiteral(pattern).absent(s) && re.MatchString(s) {
			t.Errorf("prefilter %+v rules out %q, which %q matches", requiredLiteral(pattern), s, pattern)
		}
	})
}

// sprintfQuote writes pattern into form as a CEL string literal.
func sprintfQuote(form, pattern string) string {
	q, _ := json.Marshal(pattern) // a JSON string is a CEL string literal
	return fmt.Sprintf(strings.Replace(form, "%q", "%s", 1), q)
}
