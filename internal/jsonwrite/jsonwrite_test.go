package jsonwrite

import (
	"bytes"
	"encoding/json"
	"testing"
)

var samples = []string{
	"", "plain", `quote " backslash \ slash /`, "\x00\x01\x1f\x7f", "\b\f\n\r\t",
	"<html> & </html>", "bad \xff utf8 \xc3", "line\u2028para\u2029sep", "héllo wörld 日本語 🙂",
}

// want is encoding/json's encoding of s, with or without HTML escaping.
func want(t testing.TB, s string, escapeHTML bool) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(escapeHTML)
	if err := enc.Encode(s); err != nil {
		t.Fatal(err)
	}
	return string(bytes.TrimSuffix(b.Bytes(), []byte("\n")))
}

func TestAppendStringMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	for _, s := range samples {
		for _, html := range []bool{true, false} {
			if got, w := string(AppendString([]byte("x"), s, html)), "x"+want(t, s, html); got != w {
				t.Errorf("AppendString(%q, escapeHTML=%v) = %s, want %s", s, html, got, w)
			}
		}
	}
}

func FuzzAppendString(f *testing.F) {
	for _, s := range samples {
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, s string, html bool) {
		if got, w := string(AppendString(nil, s, html)), want(t, s, html); got != w {
			t.Errorf("AppendString(%q, escapeHTML=%v) = %s, want %s", s, html, got, w)
		}
	})
}
