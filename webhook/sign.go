package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The Standard Webhooks headers.
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
)

// DefaultTolerance is how far a webhook-timestamp may be from the
// receiver's clock, either way, when [Verify] is given no tolerance.
const DefaultTolerance = 5 * time.Minute

// Errors returned, wrapped, by [Verify].
var (
	// ErrNoSignature: the webhook-id or webhook-signature header is
	// missing, or the signature header holds no v1 signature.
	ErrNoSignature = errors.New("no webhook signature")
	// ErrBadSignature: no v1 signature matches the body, id and timestamp.
	ErrBadSignature = errors.New("webhook signature does not match")
	// ErrTimestamp: the webhook-timestamp header is missing, not a number
	// of unix seconds, or outside the tolerance.
	ErrTimestamp = errors.New("webhook timestamp refused")
)

// Sign returns the webhook-signature header value for a message: "v1,"
// and the base64 of HMAC-SHA256(secret, msgID + "." + unix seconds of ts
// + "." + body).
func Sign(secret Secret, msgID string, ts time.Time, body []byte) string {
	return "v1," + base64.StdEncoding.EncodeToString(mac(secret, msgID, ts.Unix(), body))
}

func mac(secret Secret, msgID string, unix int64, body []byte) []byte {
	h := hmac.New(sha256.New, secret)
	h.Write([]byte(msgID))
	h.Write([]byte{'.'})
	h.Write(strconv.AppendInt(nil, unix, 10))
	h.Write([]byte{'.'})
	h.Write(body)
	return h.Sum(nil)
}

// Verify checks a received webhook: its webhook-timestamp must be within
// tolerance of now (DefaultTolerance when tolerance is 0 or less), and one
// of the v1 signatures in webhook-signature must match the body, the
// webhook-id and the timestamp. Signatures of other versions are skipped,
// so a header may also carry them. The comparison takes constant time.
// The error wraps [ErrNoSignature], [ErrBadSignature] or [ErrTimestamp].
//
// Verify does not remember ids: a receiver that must not act twice on one
// message keeps the webhook-id values it has seen for at least the
// tolerance.
func Verify(secret Secret, h http.Header, body []byte, now time.Time, tolerance time.Duration) error {
	if tolerance <= 0 {
		tolerance = DefaultTolerance
	}
	id, sigs, tsText := h.Get(HeaderID), h.Get(HeaderSignature), h.Get(HeaderTimestamp)
	if id == "" {
		return fmt.Errorf("%w: missing the %s header", ErrNoSignature, HeaderID)
	}
	if sigs == "" {
		return fmt.Errorf("%w: missing the %s header", ErrNoSignature, HeaderSignature)
	}
	if tsText == "" {
		return fmt.Errorf("%w: missing the %s header", ErrTimestamp, HeaderTimestamp)
	}
	unix, err := strconv.ParseInt(tsText, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: %s is not a number of unix seconds", ErrTimestamp, HeaderTimestamp)
	}
	// Compare bounds in seconds: a difference with an extreme timestamp
	// would overflow.
	tol := int64(tolerance / time.Second)
	if lo, hi := now.Unix()-tol, now.Unix()+tol; unix < lo || unix > hi {
		return fmt.Errorf("%w: %s is %s, more than %s from now", ErrTimestamp, HeaderTimestamp, tsText, tolerance)
	}
	if len(secret) == 0 {
		return fmt.Errorf("%w: no secret to verify with", ErrBadSignature)
	}
	want := mac(secret, id, unix, body)
	seen := false
	for _, s := range strings.Fields(sigs) {
		enc, ok := strings.CutPrefix(s, "v1,")
		if !ok {
			continue
		}
		seen = true
		got, err := base64.StdEncoding.DecodeString(enc)
		if err == nil && hmac.Equal(got, want) {
			return nil
		}
	}
	if !seen {
		return fmt.Errorf("%w: no v1 signature in the %s header", ErrNoSignature, HeaderSignature)
	}
	return ErrBadSignature
}
