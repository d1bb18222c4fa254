package webhook

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"strings"
)

// Secret key sizes, in bytes, from the Standard Webhooks specification
// (192 to 512 bits).
const (
	MinSecretSize = 24
	MaxSecretSize = 64
)

// SecretPrefix starts the text form of a [Secret].
const SecretPrefix = "whsec_"

// redacted is what a Secret shows instead of its key.
const redacted = SecretPrefix + "…redacted"

// ErrInvalidSecret is returned, wrapped, by [ParseSecret] for text that is
// not a usable secret. Its message never contains the text.
var ErrInvalidSecret = errors.New("invalid webhook secret")

// Secret is an HMAC-SHA256 signing key. Its String, Format, MarshalJSON,
// MarshalText and LogValue methods never reveal the key, so a Secret (or a
// struct holding one, such as [Request]) is safe to print and log.
type Secret []byte

// ParseSecret decodes a secret in its "whsec_<base64>" form. The key (the
// decoded part) must be 24 to 64 bytes long. Surrounding white space, as
// left by a file or an environment variable, is ignored.
func ParseSecret(s string) (Secret, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, fmt.Errorf("%w: empty", ErrInvalidSecret)
	}
	enc, ok := strings.CutPrefix(s, SecretPrefix)
	if !ok {
		return nil, fmt.Errorf("%w: it must start with %q", ErrInvalidSecret, SecretPrefix)
	}
	key, err := base64.StdEncoding.DecodeString(enc)
	if err != nil {
		// The decoder's error names only an offset, never the data.
		return nil, fmt.Errorf("%w: decoding the base64 after %q: %w", ErrInvalidSecret, SecretPrefix, err)
	}
	if len(key) < MinSecretSize || len(key) > MaxSecretSize {
		return nil, fmt.Errorf("%w: the key is %d bytes, want %d to %d", ErrInvalidSecret, len(key), MinSecretSize, MaxSecretSize)
	}
	return Secret(key), nil
}

// NewSecret returns a new random 32-byte secret in its "whsec_<base64>"
// form, to be shown once to the receiver's owner and stored by the sender.
func NewSecret() (string, error) {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return "", fmt.Errorf("reading random bytes: %w", err)
	}
	return SecretPrefix + base64.StdEncoding.EncodeToString(key), nil
}

// valid reports whether the key has a size the specification allows.
func (s Secret) valid() bool { return len(s) >= MinSecretSize && len(s) <= MaxSecretSize }

// String returns "whsec_…redacted", never the key.
func (s Secret) String() string { return redacted }

// Format prints "whsec_…redacted" for every verb, including %x and %#v.
func (s Secret) Format(f fmt.State, verb rune) {
	if verb == 'q' {
		fmt.Fprintf(f, "%q", redacted)
		return
	}
	_, _ = f.Write([]byte(redacted))
}

// MarshalJSON encodes the secret as the string "whsec_…redacted". A Secret
// does not survive a round trip through JSON, by design.
func (s Secret) MarshalJSON() ([]byte, error) { return []byte(`"` + redacted + `"`), nil }

// MarshalText returns "whsec_…redacted", for encoders that use text
// marshalling (YAML, map keys, slog's text handler).
func (s Secret) MarshalText() ([]byte, error) { return []byte(redacted), nil }

// LogValue logs "whsec_…redacted".
func (s Secret) LogValue() slog.Value { return slog.StringValue(redacted) }
