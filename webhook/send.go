package webhook

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"
)

// Defaults of a [Sender].
const (
	// DefaultTimeout bounds one attempt; the specification recommends 15
	// to 30 seconds.
	DefaultTimeout = 30 * time.Second
	// DefaultMaxResponse is how much of a response body is read.
	DefaultMaxResponse = 64 << 10
)

// UserAgent is the User-Agent header of every delivery.
const UserAgent = "agentrt-webhook/1"

// maxExcerpt is how much of a response body a Result's Err quotes.
const maxExcerpt = 200

// Request is one message to deliver.
type Request struct {
	// URL is the receiver's endpoint, checked with [ValidateURL].
	URL string
	// MsgID is the webhook-id: unique per message and the same for every
	// attempt to deliver it. It is 1 to 255 printable ASCII characters
	// without "." (which would make the signed content ambiguous).
	MsgID string
	// Body is sent as is, with content-type application/json.
	Body []byte
	// Secret signs the message; it must be 24 to 64 bytes.
	Secret Secret
	// Header holds extra request headers, such as an Authorization the
	// receiver wants. The content-type, user-agent and webhook-* headers
	// are the Sender's and override these.
	Header map[string]string
}

// LogValue logs the receiver's host, the message id, the body's size and
// the names of the extra headers: never the body, the header values, the
// URL's path and query (which may hold a token), or the secret.
func (r Request) LogValue() slog.Value {
	host := ""
	if u, err := url.Parse(r.URL); err == nil {
		host = u.Host
	}
	names := make([]string, 0, len(r.Header))
	for k := range r.Header {
		names = append(names, k)
	}
	slices.Sort(names)
	return slog.GroupValue(
		slog.String("host", host),
		slog.String("msgId", r.MsgID),
		slog.Int("bodyBytes", len(r.Body)),
		slog.Any("headers", names),
		slog.Any("secret", r.Secret),
	)
}

// Result is the outcome of one delivery attempt.
type Result struct {
	// Status is the response's HTTP status, 0 when there was none.
	Status int
	// Err is "" when the message was delivered (a 2xx status), and
	// otherwise says why not, quoting at most 200 bytes of the response
	// body. It never holds the secret or the signature.
	Err string
	// Retryable reports a failure worth retrying later: a 408, 429 or 5xx
	// status, a network error, a timeout, or a cancelled ctx. Any other
	// failure is permanent: retrying the same request cannot succeed.
	Retryable bool
	// RetryAfter is the receiver's Retry-After on a retryable status, 0
	// when it sent none; a scheduler should wait at least this long.
	RetryAfter time.Duration
	// Duration is how long the attempt took.
	Duration time.Duration
}

// Sender sends webhook requests, one attempt per [Sender.Send]. Set its
// fields before the first Send; a Sender is safe for concurrent use and
// must not be copied after its first use.
type Sender struct {
	// Client sends the requests. When nil, the Sender uses a client of its
	// own on [NewTransport], which refuses private addresses unless
	// AllowPrivate is set. A Client given here is used with its own
	// transport (keep the guard by building it on NewTransport), but never
	// follows redirects.
	Client *http.Client
	// Now is the clock of the webhook-timestamp header; nil is time.Now.
	Now func() time.Time
	// Timeout bounds one attempt, from dialing to the response's status;
	// 0 is DefaultTimeout.
	Timeout time.Duration
	// MaxResponse is how many bytes of a response body are read; 0 is
	// DefaultMaxResponse.
	MaxResponse int64
	// AllowPrivate lets deliveries reach loopback, private, link-local and
	// other internal addresses. Leave it off when users choose the URLs.
	AllowPrivate bool

	once   sync.Once
	client *http.Client // set once, from Client or NewTransport
}

// errTimedOut is the cause of an attempt's context when Timeout passes.
var errTimedOut = errors.New("webhook attempt timed out")

// NewTransport returns the HTTP transport a [Sender] uses when it has no
// Client: its dialer refuses loopback, private, link-local, shared and
// unspecified addresses (after name resolution) unless allowPrivate is
// set, and it ignores proxy settings from the environment, since the guard
// must see the receiver's own address. It keeps no idle connections:
// deliveries are few and far between, and a Sender made per delivery
// leaves nothing behind.
func NewTransport(allowPrivate bool) *http.Transport {
	d := &net.Dialer{Timeout: 10 * time.Second}
	if !allowPrivate {
		d.ControlContext = dialControl
	}
	return &http.Transport{
		DialContext:           d.DialContext,
		ForceAttemptHTTP2:     true,
		DisableKeepAlives:     true,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
}

func (s *Sender) httpClient() *http.Client {
	s.once.Do(func() {
		c := s.Client
		if c == nil {
			c = &http.Client{Transport: NewTransport(s.AllowPrivate)}
		}
		cc := *c
		cc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		s.client = &cc
	})
	return s.client
}

// Send makes one attempt to deliver req: a POST of its body with the
// content-type, user-agent and Standard Webhooks headers, signed at the
// Sender's Now. It never follows a redirect. See [Result] for how the
// outcome is classified; an invalid request is a permanent failure.
func (s *Sender) Send(ctx context.Context, req *Request) Result {
	start := time.Now()
	res := s.send(ctx, req)
	res.Duration = time.Since(start)
	return res
}

func (s *Sender) send(ctx context.Context, req *Request) Result {
	if err := s.check(req); err != nil {
		return Result{Err: "invalid request: " + err.Error()}
	}
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	ts := now()
	sig := Sign(req.Secret, req.MsgID, ts, req.Body)
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	actx, cancel := context.WithTimeoutCause(ctx, timeout, errTimedOut)
	defer cancel()
	hreq, err := http.NewRequestWithContext(actx, http.MethodPost, req.URL, bytes.NewReader(req.Body))
	if err != nil {
		return Result{Err: "invalid request: building it: " + err.Error()}
	}
	for k, v := range req.Header {
		hreq.Header.Set(k, v)
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("User-Agent", UserAgent)
	hreq.Header.Set(HeaderID, req.MsgID)
	hreq.Header.Set(HeaderTimestamp, strconv.FormatInt(ts.Unix(), 10))
	hreq.Header.Set(HeaderSignature, sig)

	resp, err := s.httpClient().Do(hreq)
	if err != nil {
		return failure(ctx, actx, timeout, err)
	}
	defer resp.Body.Close()
	max := s.MaxResponse
	if max <= 0 {
		max = DefaultMaxResponse
	}
	body := readAtMost(resp.Body, max)
	return classify(resp, excerpt(body, scrubber(req.Secret, sig)), ts)
}

// check refuses a request that no attempt could deliver.
func (s *Sender) check(req *Request) error {
	if err := ValidateURL(req.URL, s.AllowPrivate); err != nil {
		return err
	}
	if n := len(req.MsgID); n == 0 || n > 255 {
		return fmt.Errorf("the message id is %d bytes, want 1 to 255", n)
	}
	for _, c := range []byte(req.MsgID) {
		if c <= ' ' || c > '~' || c == '.' {
			return fmt.Errorf("the message id %q has a character other than printable ASCII without \".\"", req.MsgID)
		}
	}
	if !req.Secret.valid() {
		return fmt.Errorf("%w: the key is %d bytes, want %d to %d", ErrInvalidSecret, len(req.Secret), MinSecretSize, MaxSecretSize)
	}
	for k, v := range req.Header {
		if !validHeaderName(k) {
			return fmt.Errorf("the header name %q is not an HTTP token", k)
		}
		if strings.ContainsFunc(v, func(r rune) bool { return r < ' ' && r != '\t' || r == 0x7f }) {
			return fmt.Errorf("the value of header %q has a control character", k)
		}
	}
	return nil
}

func validHeaderName(name string) bool {
	if name == "" {
		return false
	}
	for _, c := range []byte(name) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

// failure classifies an attempt that got no response.
func failure(ctx, actx context.Context, timeout time.Duration, err error) Result {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err // the url may hold a token; the caller knows it
	}
	switch {
	case errors.Is(err, ErrPrivateAddress):
		return Result{Err: "connecting: " + err.Error()}
	case ctx.Err() != nil:
		return Result{Err: "cancelled: " + context.Cause(ctx).Error(), Retryable: true}
	case errors.Is(context.Cause(actx), errTimedOut):
		return Result{Err: fmt.Sprintf("timed out after %s without a response", timeout), Retryable: true}
	}
	return Result{Err: "sending: " + err.Error(), Retryable: true}
}

// classify turns a response into a Result; body is its quoted excerpt.
func classify(resp *http.Response, body string, now time.Time) Result {
	code := resp.StatusCode
	r := Result{Status: code}
	status := fmt.Sprintf("status %d %s", code, http.StatusText(code))
	if body != "" {
		status += ": " + body
	}
	switch {
	case code >= 200 && code <= 299:
	case code >= 300 && code <= 399:
		r.Err = "redirect refused (update the webhook url): " + status
		if loc := resp.Header.Get("Location"); loc != "" {
			r.Err += " (location " + cut(loc) + ")"
		}
	case code == http.StatusRequestTimeout || code == http.StatusTooManyRequests || code >= 500:
		r.Err, r.Retryable = status, true
		r.RetryAfter = retryAfter(resp.Header.Get("Retry-After"), now)
	default:
		r.Err = status
	}
	return r
}

// retryAfter reads a Retry-After header: delay seconds or an HTTP date.
func retryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n <= 0 {
			return 0
		}
		return time.Duration(min(n, int64(24*time.Hour/time.Second))) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return min(t.Sub(now), 24*time.Hour)
	}
	return 0
}

// readAtMost reads up to max bytes of r; a read error ends the body early.
func readAtMost(r io.Reader, max int64) []byte {
	b, _ := io.ReadAll(io.LimitReader(r, max))
	return b
}

// scrubber returns the strings a response must not echo into an Err: the
// signature header, its base64 part and the encoded key.
func scrubber(secret Secret, sig string) *strings.Replacer {
	const mark = "[redacted]"
	b64 := strings.TrimPrefix(sig, "v1,")
	key := base64.StdEncoding.EncodeToString(secret)
	return strings.NewReplacer(sig, mark, b64, mark, key, mark)
}

// excerpt is the quotable start of a response body: secrets scrubbed,
// white space collapsed, at most maxExcerpt bytes of valid UTF-8.
func excerpt(body []byte, scrub *strings.Replacer) string {
	s := scrub.Replace(strings.ToValidUTF8(string(body), "\uFFFD"))
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
	return cut(strings.Join(strings.Fields(s), " "))
}

// cut shortens s to at most maxExcerpt bytes, on a rune boundary.
func cut(s string) string {
	if len(s) <= maxExcerpt {
		return s
	}
	n := maxExcerpt
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
