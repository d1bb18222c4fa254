package webhook_test

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/agentrt/agentrt/webhook"
)

// testSecret returns a new secret in both forms.
func testSecret(t testing.TB) (string, webhook.Secret) {
	t.Helper()
	text, err := webhook.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	s, err := webhook.ParseSecret(text)
	if err != nil {
		t.Fatal(err)
	}
	return text, s
}

func headers(id string, ts time.Time, sig string) http.Header {
	h := http.Header{}
	h.Set(webhook.HeaderID, id)
	h.Set(webhook.HeaderTimestamp, strconv.FormatInt(ts.Unix(), 10))
	h.Set(webhook.HeaderSignature, sig)
	return h
}

// TestSignMatchesLibrary: Sign computes the header the Standard Webhooks
// Go library computes, and each side verifies the other's.
func TestSignMatchesLibrary(t *testing.T) {
	t.Parallel()
	text, secret := testSecret(t)
	lib, err := standardwebhooks.NewWebhook(text)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now() // the library verifies against the real clock
	body := []byte(`{"type":"task.completed","data":{"taskId":"task_1"}}`)

	ours := webhook.Sign(secret, "msg_1", now, body)
	theirs, err := lib.Sign("msg_1", now, body)
	if err != nil {
		t.Fatal(err)
	}
	if ours != theirs {
		t.Errorf("Sign = %q, the library signs %q", ours, theirs)
	}
	if err := lib.Verify(body, headers("msg_1", now, ours)); err != nil {
		t.Errorf("the library refuses our signature: %v", err)
	}
	if err := webhook.Verify(secret, headers("msg_1", now, theirs), body, now, 0); err != nil {
		t.Errorf("Verify refuses the library's signature: %v", err)
	}
}

func TestVerify(t *testing.T) {
	t.Parallel()
	_, secret := testSecret(t)
	_, other := testSecret(t)
	now := time.Unix(1_800_000_000, 0)
	body := []byte(`{"ok":true}`)
	good := webhook.Sign(secret, "msg_1", now, body)

	for _, tc := range []struct {
		name    string
		h       http.Header
		body    string
		now     time.Time
		wantErr error
	}{
		{name: "valid", h: headers("msg_1", now, good)},
		{name: "within tolerance", h: headers("msg_1", now, good), now: now.Add(5 * time.Minute)},
		{name: "one of several", h: headers("msg_1", now, "v1a,c2lnbmF0dXJl v1,"+webhook.Sign(other, "msg_1", now, body)[3:]+" v2,x "+good)},
		{name: "tampered body", h: headers("msg_1", now, good), body: `{"ok":false}`, wantErr: webhook.ErrBadSignature},
		{name: "tampered id", h: headers("msg_2", now, good), wantErr: webhook.ErrBadSignature},
		{name: "tampered timestamp", h: headers("msg_1", now.Add(time.Second), good), wantErr: webhook.ErrBadSignature},
		{name: "another key", h: headers("msg_1", now, webhook.Sign(other, "msg_1", now, body)), wantErr: webhook.ErrBadSignature},
		{name: "not base64", h: headers("msg_1", now, "v1,@@@"), wantErr: webhook.ErrBadSignature},
		{name: "too old", h: headers("msg_1", now, good), now: now.Add(5*time.Minute + time.Second), wantErr: webhook.ErrTimestamp},
		{name: "too new", h: headers("msg_1", now, good), now: now.Add(-5*time.Minute - time.Second), wantErr: webhook.ErrTimestamp},
		{name: "no signature header", h: without(headers("msg_1", now, good), webhook.HeaderSignature), wantErr: webhook.ErrNoSignature},
		{name: "no id header", h: without(headers("msg_1", now, good), webhook.HeaderID), wantErr: webhook.ErrNoSignature},
		{name: "no v1 signature", h: headers("msg_1", now, "v1a,c2lnbmF0dXJl"), wantErr: webhook.ErrNoSignature},
		{name: "no timestamp header", h: without(headers("msg_1", now, good), webhook.HeaderTimestamp), wantErr: webhook.ErrTimestamp},
		{name: "timestamp not a number", h: with(headers("msg_1", now, good), webhook.HeaderTimestamp, "1.8e9"), wantErr: webhook.ErrTimestamp},
		{name: "extreme timestamp", h: with(headers("msg_1", now, good), webhook.HeaderTimestamp, "-9223372036854775808"), wantErr: webhook.ErrTimestamp},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := body
			if tc.body != "" {
				b = []byte(tc.body)
			}
			at := now
			if !tc.now.IsZero() {
				at = tc.now
			}
			err := webhook.Verify(secret, tc.h, b, at, 0)
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
				t.Fatalf("Verify = %v, want %v", err, tc.wantErr)
			}
			if err != nil && strings.Contains(err.Error(), good[3:]) {
				t.Errorf("the error %q quotes the signature", err)
			}
		})
	}
}

func TestVerifyTolerance(t *testing.T) {
	t.Parallel()
	_, secret := testSecret(t)
	now := time.Unix(1_800_000_000, 0)
	h := headers("msg_1", now, webhook.Sign(secret, "msg_1", now, nil))
	if err := webhook.Verify(secret, h, nil, now.Add(time.Minute), 30*time.Second); !errors.Is(err, webhook.ErrTimestamp) {
		t.Errorf("Verify a minute late with a 30s tolerance = %v, want ErrTimestamp", err)
	}
	if err := webhook.Verify(secret, h, nil, now.Add(time.Minute), 2*time.Minute); err != nil {
		t.Errorf("Verify a minute late with a 2m tolerance = %v, want nil", err)
	}
	if err := webhook.Verify(nil, h, nil, now, 0); !errors.Is(err, webhook.ErrBadSignature) {
		t.Errorf("Verify with no secret = %v, want ErrBadSignature", err)
	}
}

func without(h http.Header, key string) http.Header { h.Del(key); return h }

func with(h http.Header, key, value string) http.Header { h.Set(key, value); return h }

// FuzzVerify: Verify never panics, whatever the headers and body, and
// always accepts what Sign signed.
func FuzzVerify(f *testing.F) {
	f.Add("msg_1", "1800000000", "v1,abc", []byte(`{}`), int64(0))
	f.Add("", "", "", []byte(nil), int64(-1))
	f.Add("a.b", "-9223372036854775808", "v1, v1,,, v1a,x", []byte("\x00"), int64(1<<62))
	f.Add("m", "9223372036854775807", "  v1,AAAA====  ", []byte("x"), int64(-1<<62))
	key := make(webhook.Secret, 32)
	f.Fuzz(func(t *testing.T, id, ts, sig string, body []byte, unix int64) {
		h := http.Header{}
		h.Set(webhook.HeaderID, id)
		h.Set(webhook.HeaderTimestamp, ts)
		h.Set(webhook.HeaderSignature, sig)
		at := time.Unix(unix%(1<<40), 0)
		_ = webhook.Verify(key, h, body, at, 0)

		if id == "" {
			return
		}
		h = headers(id, at, webhook.Sign(key, id, at, body))
		if err := webhook.Verify(key, h, body, at, 0); err != nil {
			t.Fatalf("Verify(Sign(id %q)) = %v", id, err)
		}
	})
}
