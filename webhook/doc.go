// Package webhook delivers a run's result to an HTTP endpoint, signed the
// Standard Webhooks way (https://www.standardwebhooks.com/), so that a
// receiver can check it with any Standard Webhooks library.
//
// # Signing
//
// A delivery carries three headers: webhook-id, a message id that stays the
// same across the retries of one delivery (receivers use it to drop
// duplicates); webhook-timestamp, the attempt's time in unix seconds; and
// webhook-signature, a space-separated list of "v1,<base64 HMAC-SHA256>"
// signatures of id + "." + timestamp + "." + body. [Sign] computes the
// header and [Verify] checks one, for receivers written in Go and for tests.
//
// The key is a [Secret], written as "whsec_" and the base64 of 24 to 64
// random bytes ([ParseSecret], [NewSecret]). A Secret never prints, logs or
// marshals its key: fmt, encoding/json and log/slog all see
// "whsec_…redacted".
//
// # Sending
//
// [Sender.Send] makes one attempt and classifies its [Result]: a 2xx status
// is delivered; 408, 429, 5xx, network errors and timeouts are retryable;
// any other status, a redirect (never followed) or an invalid request is a
// permanent failure. Retrying, with backoff, is the caller's: the runtime's
// scheduler records each attempt on the task. A Result's Err never holds
// the secret or the signature, even when a receiver echoes its request.
//
// # Private addresses
//
// Webhook URLs come from users, so a Sender refuses to connect to loopback,
// private, link-local, shared (carrier-grade NAT) and unspecified addresses
// unless AllowPrivate is set: [ValidateURL] refuses such IP literals when a
// URL is configured, and the Sender's dialer refuses them again at connect
// time, after name resolution, so a hostname that resolves to 127.0.0.1 or
// to a cloud metadata address (169.254.169.254) is refused too.
package webhook
