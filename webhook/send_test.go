package webhook_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/agentrt/agentrt/webhook"
)

type testBundle struct {
	text   string // the secret as a receiver configures it
	secret webhook.Secret
	sender *webhook.Sender
}

// setup returns a Sender that may reach httptest's loopback servers.
func setup(t *testing.T) *testBundle {
	t.Helper()
	text, secret := testSecret(t)
	s := &webhook.Sender{AllowPrivate: true}
	return &testBundle{text: text, secret: secret, sender: s}
}

// serve starts a receiver; it is closed when the test ends.
func serve(t *testing.T, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

func (b *testBundle) request(url string) *webhook.Request {
	return &webhook.Request{URL: url, MsgID: "msg_01JD", Body: []byte(`{"type":"task.completed"}`), Secret: b.secret}
}

// ignoreDuration: Results are compared without their Duration.
var ignoreDuration = cmpopts.IgnoreFields(webhook.Result{}, "Duration")

// TestSendDelivers: a delivery reaches the receiver with the Standard
// Webhooks headers, and both the library and Verify accept it.
func TestSendDelivers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	lib, err := standardwebhooks.NewWebhook(b.text)
	if err != nil {
		t.Fatal(err)
	}
	type seen struct {
		method, contentType, userAgent, id, auth string
		body                                     string
		libErr, verifyErr, handErr               error
	}
	got := make(chan seen, 2)
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got <- seen{
			method: r.Method, contentType: r.Header.Get("Content-Type"), userAgent: r.Header.Get("User-Agent"),
			id: r.Header.Get("webhook-id"), auth: r.Header.Get("Authorization"), body: string(body),
			libErr:    lib.Verify(body, r.Header),
			verifyErr: webhook.Verify(b.secret, r.Header, body, time.Now(), 0),
			handErr:   verifyByHand(b.secret, r, body),
		}
		w.WriteHeader(http.StatusNoContent)
	})
	req := b.request(srv.URL + "/hook")
	req.Header = map[string]string{"Authorization": "Bearer receiver-token", "webhook-id": "overridden"}

	for range 2 { // a retry carries the same webhook-id
		res := b.sender.Send(context.Background(), req)
		if diff := cmp.Diff(webhook.Result{Status: http.StatusNoContent}, res, ignoreDuration); diff != "" {
			t.Errorf("Send (-want +got):\n%s", diff)
		}
		if res.Duration <= 0 {
			t.Errorf("Duration = %s, want > 0", res.Duration)
		}
		want := seen{method: "POST", contentType: "application/json", userAgent: "agentrt-webhook/1",
			id: "msg_01JD", auth: "Bearer receiver-token", body: `{"type":"task.completed"}`}
		if diff := cmp.Diff(want, <-got, cmp.AllowUnexported(seen{}), cmpopts.EquateErrors()); diff != "" {
			t.Errorf("the receiver saw (-want +got):\n%s", diff)
		}
	}
}

// verifyByHand is the receiver of docs/webhooks.md "Verifying a delivery".
func verifyByHand(key []byte, r *http.Request, body []byte) error {
	id, ts := r.Header.Get("webhook-id"), r.Header.Get("webhook-timestamp")
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || time.Since(time.Unix(sec, 0)).Abs() > 5*time.Minute {
		return errors.New("stale or missing timestamp")
	}
	m := hmac.New(sha256.New, key)
	fmt.Fprintf(m, "%s.%s.%s", id, ts, body)
	want := "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
	for _, sig := range strings.Fields(r.Header.Get("webhook-signature")) {
		if hmac.Equal([]byte(sig), []byte(want)) { // constant time
			return nil
		}
	}
	return errors.New("no matching signature")
}

// TestSendTimestamp: the webhook-timestamp is the Sender's clock.
func TestSendTimestamp(t *testing.T) {
	t.Parallel()
	b := setup(t)
	at := time.Unix(1_800_000_000, 0)
	b.sender.Now = func() time.Time { return at }
	got := make(chan error, 1)
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if ts := r.Header.Get("webhook-timestamp"); ts != "1800000000" {
			got <- errors.New("webhook-timestamp " + ts)
			return
		}
		got <- webhook.Verify(b.secret, r.Header, body, at, 0)
	})
	if res := b.sender.Send(context.Background(), b.request(srv.URL)); res.Err != "" {
		t.Fatalf("Send: %+v", res)
	}
	if err := <-got; err != nil {
		t.Errorf("the receiver: %v", err)
	}
}

// TestSendClassifiesStatus: 408, 429 and 5xx are worth retrying; other
// 4xx and every redirect are permanent, and a redirect is not followed.
func TestSendClassifiesStatus(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		status    int
		retryable bool
		errHas    string
	}{
		{status: 500, retryable: true, errHas: "status 500 Internal Server Error: boom"},
		{status: 502, retryable: true, errHas: "status 502 Bad Gateway"},
		{status: 503, retryable: true, errHas: "status 503 Service Unavailable"},
		{status: 429, retryable: true, errHas: "status 429 Too Many Requests"},
		{status: 408, retryable: true, errHas: "status 408 Request Timeout"},
		{status: 400, errHas: "status 400 Bad Request: boom"},
		{status: 401, errHas: "status 401 Unauthorized"},
		{status: 404, errHas: "status 404 Not Found"},
		{status: 410, errHas: "status 410 Gone"},
		{status: 301, errHas: "redirect refused"},
		{status: 302, errHas: "redirect refused"},
		{status: 307, errHas: "redirect refused"},
		{status: 308, errHas: "redirect refused"},
	} {
		t.Run(strconv.Itoa(tc.status), func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			var mu sync.Mutex
			var paths []string
			srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				paths = append(paths, r.URL.Path)
				mu.Unlock()
				if tc.status >= 300 && tc.status < 400 {
					w.Header().Set("Location", "/elsewhere")
				}
				w.WriteHeader(tc.status)
				_, _ = io.WriteString(w, "boom\n")
			})
			res := b.sender.Send(context.Background(), b.request(srv.URL+"/hook"))
			if res.Status != tc.status || res.Retryable != tc.retryable || !strings.Contains(res.Err, tc.errHas) {
				t.Errorf("Send = %+v, want status %d, retryable %v, an error with %q", res, tc.status, tc.retryable, tc.errHas)
			}
			mu.Lock()
			defer mu.Unlock()
			if diff := cmp.Diff([]string{"/hook"}, paths); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSendRetryAfter(t *testing.T) {
	t.Parallel()
	b := setup(t)
	at := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	b.sender.Now = func() time.Time { return at }
	for _, tc := range []struct {
		status int
		header string
		want   time.Duration
	}{
		{status: 429, header: "120", want: 2 * time.Minute},
		{status: 503, header: at.Add(90 * time.Second).Format(http.TimeFormat), want: 90 * time.Second},
		{status: 503, header: "soon"},
		{status: 500},
		{status: 404, header: "120"}, // permanent: no retry to schedule
	} {
		srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
			if tc.header != "" {
				w.Header().Set("Retry-After", tc.header)
			}
			w.WriteHeader(tc.status)
		})
		if res := b.sender.Send(context.Background(), b.request(srv.URL)); res.RetryAfter != tc.want {
			t.Errorf("status %d, Retry-After %q: RetryAfter = %s, want %s", tc.status, tc.header, res.RetryAfter, tc.want)
		}
	}
}

// TestSendConnectionRefused: nothing listening is worth retrying.
func TestSendConnectionRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	res := b.sender.Send(context.Background(), b.request("http://"+addr+"/hook"))
	if res.Status != 0 || !res.Retryable || !strings.Contains(res.Err, "connection refused") {
		t.Errorf("Send = %+v, want a retryable connection refused", res)
	}
}

// TestSendTimeout: a receiver that does not answer within Timeout is
// worth retrying.
func TestSendTimeout(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.sender.Timeout = 50 * time.Millisecond
	release := make(chan struct{})
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // then the server notices a closed connection
		select {
		case <-r.Context().Done(): // the sender gave up
		case <-release:
		}
	})
	t.Cleanup(func() { close(release) }) // before srv.Close, which waits for handlers
	res := b.sender.Send(context.Background(), b.request(srv.URL))
	if diff := cmp.Diff(webhook.Result{Err: "timed out after 50ms without a response", Retryable: true}, res, ignoreDuration); diff != "" {
		t.Errorf("Send (-want +got):\n%s", diff)
	}
}

// TestSendCancelled: a cancelled ctx (a stopping runtime) is no fault of
// the receiver's: retry later.
func TestSendCancelled(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, cancel := context.WithCancel(context.Background())
	release := make(chan struct{})
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		cancel()
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	t.Cleanup(func() { close(release) })
	res := b.sender.Send(ctx, b.request(srv.URL))
	if res.Status != 0 || !res.Retryable || !strings.HasPrefix(res.Err, "cancelled") {
		t.Errorf("Send = %+v, want a retryable cancellation", res)
	}
}

// TestSendCutsResponse: Err quotes at most 200 bytes of a long body.
func TestSendCutsResponse(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.sender.MaxResponse = 1 << 10
	long := strings.Repeat("é", 64<<10) // two bytes each, so a cut may split one
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, "x"+long)
	})
	res := b.sender.Send(context.Background(), b.request(srv.URL))
	quoted, ok := strings.CutPrefix(res.Err, "status 400 Bad Request: ")
	if !ok || res.Retryable {
		t.Fatalf("Send = %+v, want a permanent 400", res)
	}
	want := "x" + long[:198] + "…" // 199 bytes: "é" does not fit in the 200th
	if quoted != want {
		t.Errorf("Err quotes %d bytes %q…, want %d bytes", len(quoted), quoted[:min(len(quoted), 20)], len(want))
	}
}

// TestSendScrubsEcho: a receiver that echoes its request headers does
// not put the signature into Err.
func TestSendScrubsEcho(t *testing.T) {
	t.Parallel()
	b := setup(t)
	sigs := make(chan string, 1)
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		sigs <- r.Header.Get("webhook-signature")
		w.WriteHeader(http.StatusInternalServerError)
		_ = r.Header.Write(w)
	})
	res := b.sender.Send(context.Background(), b.request(srv.URL))
	sig := <-sigs
	if sig == "" || strings.Contains(res.Err, strings.TrimPrefix(sig, "v1,")) || !strings.Contains(res.Err, "[redacted]") {
		t.Errorf("Err = %q; want the signature %q redacted", res.Err, sig)
	}
}

// TestSendRefusesPrivate: without AllowPrivate, a loopback IP literal is
// refused before any connection, and a host name that resolves to
// loopback is refused when connecting; neither is worth retrying.
func TestSendRefusesPrivate(t *testing.T) {
	t.Parallel()
	_, secret := testSecret(t)
	var mu sync.Mutex
	hits := 0
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits++
		mu.Unlock()
	})
	_, port, err := net.SplitHostPort(srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	for _, url := range []string{srv.URL, "http://localhost:" + port + "/hook"} {
		s := &webhook.Sender{}
		res := s.Send(context.Background(), &webhook.Request{URL: url, MsgID: "msg_1", Secret: secret})
		if res.Status != 0 || res.Retryable || !strings.Contains(res.Err, "127.0.0.1 is a loopback address (private addresses are not allowed)") {
			t.Errorf("Send to %s = %+v, want a permanent refusal of a loopback address", url, res)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if hits != 0 {
		t.Errorf("the receiver got %d requests, want none", hits)
	}
}

// TestSendInvalidRequest: a request no attempt could deliver fails for
// good, before any connection.
func TestSendInvalidRequest(t *testing.T) {
	t.Parallel()
	b := setup(t)
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("the receiver got a request for %s", r.URL)
	})
	for _, tc := range []struct {
		name   string
		change func(*webhook.Request)
		errHas string
	}{
		{"dot in id", func(r *webhook.Request) { r.MsgID = "msg.1" }, "message id"},
		{"empty id", func(r *webhook.Request) { r.MsgID = "" }, "message id is 0 bytes"},
		{"short secret", func(r *webhook.Request) { r.Secret = r.Secret[:16] }, "the key is 16 bytes, want 24 to 64"},
		{"bad header name", func(r *webhook.Request) { r.Header = map[string]string{"a b": "x"} }, `header name "a b"`},
		{"header value newline", func(r *webhook.Request) { r.Header = map[string]string{"X-A": "a\r\nX-B: b"} }, "control character"},
		{"scheme", func(r *webhook.Request) { r.URL = "ftp://example.com/" }, "the scheme is \"ftp\""},
	} {
		req := b.request(srv.URL)
		tc.change(req)
		res := b.sender.Send(context.Background(), req)
		if res.Retryable || !strings.HasPrefix(res.Err, "invalid request: ") || !strings.Contains(res.Err, tc.errHas) {
			t.Errorf("%s: Send = %+v, want a permanent invalid request saying %q", tc.name, res, tc.errHas)
		}
	}
}

func TestValidateURL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		url          string
		allowPrivate bool
		want         error
		errHas       string
	}{
		{url: "https://example.com/hook"},
		{url: "http://93.184.215.14:8080/hook"},
		{url: "https://[2606:2800:21f:cb07:6820:80da:af6b:8b2c]/"},
		{url: "http://localhost/hook"}, // checked when connecting
		{url: "http://127.0.0.1/hook", allowPrivate: true},
		{url: "http://127.0.0.1/hook", want: webhook.ErrPrivateAddress, errHas: "127.0.0.1 is a loopback address"},
		{url: "http://[::1]:9/", want: webhook.ErrPrivateAddress, errHas: "::1 is a loopback address"},
		{url: "http://[::ffff:10.0.0.1]/", want: webhook.ErrPrivateAddress, errHas: "is a private address"},
		{url: "http://192.168.1.10/", want: webhook.ErrPrivateAddress, errHas: "a private address"},
		{url: "http://172.16.0.1/", want: webhook.ErrPrivateAddress, errHas: "a private address"},
		{url: "http://[fd00::1]/", want: webhook.ErrPrivateAddress, errHas: "a private address"},
		{url: "http://169.254.169.254/latest/meta-data", want: webhook.ErrPrivateAddress, errHas: "a link-local address"},
		{url: "http://[fe80::1%25eth0]/", want: webhook.ErrPrivateAddress, errHas: "a link-local address"},
		{url: "http://0.0.0.0/", want: webhook.ErrPrivateAddress, errHas: "an unspecified address"},
		{url: "http://[::]/", want: webhook.ErrPrivateAddress, errHas: "an unspecified address"},
		{url: "http://0.1.2.3/", want: webhook.ErrPrivateAddress, errHas: "\"this network\""},
		{url: "http://100.100.100.100/", want: webhook.ErrPrivateAddress, errHas: "carrier-grade NAT"},
		{url: "ftp://example.com/", want: webhook.ErrInvalidURL, errHas: "want http or https"},
		{url: "example.com/hook", want: webhook.ErrInvalidURL, errHas: "want http or https"},
		{url: "https:///hook", want: webhook.ErrInvalidURL, errHas: "no host"},
		{url: "https://user:hunter2@example.com/", want: webhook.ErrInvalidURL, errHas: "user name or password"},
		{url: "http://exa mple.com/", want: webhook.ErrInvalidURL, errHas: "parsing"},
	} {
		err := webhook.ValidateURL(tc.url, tc.allowPrivate)
		if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.errHas) {
			t.Errorf("ValidateURL(%q, %v) = %v, want %v saying %q", tc.url, tc.allowPrivate, err, tc.want, tc.errHas)
		}
		if err != nil && strings.Contains(err.Error(), "hunter2") {
			t.Errorf("ValidateURL(%q) quotes the password: %v", tc.url, err)
		}
	}
}
