package webhook_test

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/webhook"
)

func encodeKey(n int) string {
	return webhook.SecretPrefix + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0xA5}, n))
}

func TestParseSecret(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, in string
		size     int    // the key's size when valid
		wantErr  string // a part of the message when invalid
	}{
		{name: "24 bytes", in: encodeKey(24), size: 24},
		{name: "32 bytes", in: encodeKey(32), size: 32},
		{name: "64 bytes", in: encodeKey(64), size: 64},
		{name: "white space around", in: " " + encodeKey(32) + "\n", size: 32},
		{name: "empty", in: "", wantErr: "empty"},
		{name: "no prefix", in: base64.StdEncoding.EncodeToString(make([]byte, 32)), wantErr: `must start with "whsec_"`},
		{name: "not base64", in: "whsec_%%%not-base64%%%", wantErr: "decoding the base64"},
		{name: "23 bytes", in: encodeKey(23), wantErr: "the key is 23 bytes, want 24 to 64"},
		{name: "16 bytes", in: encodeKey(16), wantErr: "the key is 16 bytes, want 24 to 64"},
		{name: "65 bytes", in: encodeKey(65), wantErr: "the key is 65 bytes, want 24 to 64"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, err := webhook.ParseSecret(tc.in)
			if tc.wantErr == "" {
				if err != nil || len(s) != tc.size {
					t.Fatalf("ParseSecret = %d bytes, %v; want %d bytes", len(s), err, tc.size)
				}
				return
			}
			if !errors.Is(err, webhook.ErrInvalidSecret) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("ParseSecret error = %v, want ErrInvalidSecret saying %q", err, tc.wantErr)
			}
			if enc := strings.TrimPrefix(strings.TrimSpace(tc.in), "whsec_"); enc != "" && strings.Contains(err.Error(), enc) {
				t.Errorf("the error %q quotes the secret", err)
			}
		})
	}
}

func TestNewSecret(t *testing.T) {
	t.Parallel()
	a, err := webhook.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	b, err := webhook.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	if a == b {
		t.Errorf("two new secrets are both %q", a)
	}
	key, err := webhook.ParseSecret(a)
	if err != nil || len(key) != 32 {
		t.Fatalf("ParseSecret(NewSecret()) = %d bytes, %v; want 32 bytes", len(key), err)
	}
}

// TestSecretNeverShown prints, marshals and logs a Secret and a Request
// holding one, every way a program might, and looks for the key.
func TestSecretNeverShown(t *testing.T) {
	t.Parallel()
	text, err := webhook.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	secret, err := webhook.ParseSecret(text)
	if err != nil {
		t.Fatal(err)
	}
	req := &webhook.Request{URL: "https://example.com/hook", MsgID: "msg_1", Body: []byte(`{}`), Secret: secret}
	forms := map[string][]byte{
		"raw":    secret,
		"base64": []byte(strings.TrimPrefix(text, webhook.SecretPrefix)),
		"hex":    []byte(hex.EncodeToString(secret)),
		"bytes":  []byte(fmt.Sprint([]byte(secret))),
	}

	outputs := map[string]string{}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%x", "%X", "%q", "%d"} {
		outputs["Secret "+verb] = fmt.Sprintf(verb, secret)
		outputs["Request "+verb] = fmt.Sprintf(verb, req)
		outputs["*Request "+verb] = fmt.Sprintf(verb, *req)
	}
	outputs["Sprint"] = fmt.Sprint(secret, req, *req)
	outputs["String"] = secret.String()
	for name, v := range map[string]any{"Secret": secret, "Request": req} {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("json.Marshal(%s): %v", name, err)
		}
		outputs["JSON "+name] = string(b)
	}
	var logs bytes.Buffer
	for _, h := range []slog.Handler{slog.NewTextHandler(&logs, nil), slog.NewJSONHandler(&logs, nil)} {
		l := slog.New(h)
		l.Info("delivering", "secret", secret, "request", req, "value", *req)
		l.Info("grouped", slog.Group("g", slog.Any("secret", secret)))
	}
	outputs["slog"] = logs.String()

	for name, out := range outputs {
		for form, b := range forms {
			if bytes.Contains([]byte(out), b) {
				t.Errorf("%s shows the key (%s form): %s", name, form, out)
			}
		}
	}
	if got := outputs["Secret %v"]; got != "whsec_…redacted" {
		t.Errorf("fmt.Sprintf(%%v, secret) = %q, want whsec_…redacted", got)
	}
	if got := outputs["JSON Secret"]; got != `"whsec_…redacted"` {
		t.Errorf("json.Marshal(secret) = %s, want \"whsec_…redacted\"", got)
	}
	if !strings.Contains(outputs["slog"], "whsec_…redacted") {
		t.Errorf("the log does not show the redacted secret: %s", outputs["slog"])
	}
}
