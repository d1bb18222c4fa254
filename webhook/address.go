package webhook

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"syscall"
)

var (
	// ErrInvalidURL is returned, wrapped, by [ValidateURL] for a URL a
	// webhook cannot be sent to.
	ErrInvalidURL = errors.New("invalid webhook url")
	// ErrPrivateAddress is returned, wrapped, for an address on a private
	// network when private addresses are not allowed: by [ValidateURL] for
	// an IP literal, and by the Sender's dialer for the address a host
	// name resolved to.
	ErrPrivateAddress = errors.New("webhook address refused")
)

// blocked lists the address ranges a webhook may reach only when private
// addresses are allowed, with the reason given in the error.
var blocked = []struct {
	prefix netip.Prefix
	why    string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "a \"this network\" address"},
	{netip.MustParsePrefix("100.64.0.0/10"), "a shared (carrier-grade NAT) address"},
	{netip.MustParsePrefix("::/128"), "an unspecified address"},
}

// refusal says why addr is refused, or "" when a webhook may reach it.
func refusal(addr netip.Addr) string {
	addr = addr.Unmap().WithZone("")
	switch {
	case addr.IsUnspecified():
		return "an unspecified address"
	case addr.IsLoopback():
		return "a loopback address"
	case addr.IsPrivate():
		return "a private address"
	case addr.IsLinkLocalUnicast(), addr.IsLinkLocalMulticast():
		return "a link-local address"
	case addr.IsInterfaceLocalMulticast():
		return "an interface-local address"
	}
	for _, b := range blocked {
		if b.prefix.Contains(addr) {
			return b.why
		}
	}
	return ""
}

func privateError(addr netip.Addr, why string) error {
	return fmt.Errorf("%w: %s is %s (private addresses are not allowed)", ErrPrivateAddress, addr, why)
}

// ValidateURL checks a webhook URL when it is configured: the scheme must
// be http or https, the host present, and the URL must carry no user name
// or password. Unless allowPrivate is set, an IP-literal host on a
// loopback, private, link-local, shared or unspecified network is refused
// with [ErrPrivateAddress]; a host name is checked later, when the Sender
// connects, against the addresses it resolves to. Other errors wrap
// [ErrInvalidURL]. Errors never quote the URL, whose path or query may
// hold a token.
func ValidateURL(raw string, allowPrivate bool) error {
	u, err := url.Parse(raw)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("%w: parsing: %w", ErrInvalidURL, err)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("%w: the scheme is %q, want http or https", ErrInvalidURL, u.Scheme)
	case u.User != nil:
		// Not echoed: the user info may hold a password.
		return fmt.Errorf("%w: the url must not carry a user name or password (use a header)", ErrInvalidURL)
	case u.Hostname() == "":
		return fmt.Errorf("%w: no host", ErrInvalidURL)
	}
	if allowPrivate {
		return nil
	}
	if addr, err := netip.ParseAddr(u.Hostname()); err == nil {
		if why := refusal(addr); why != "" {
			return privateError(addr, why)
		}
	}
	return nil
}

// dialControl is a net.Dialer ControlContext that refuses to connect to
// the addresses [ValidateURL] refuses. It runs after name resolution, for
// each address tried, so it also catches host names (and DNS rebinding)
// that lead to a private network.
func dialControl(_ context.Context, _, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: cannot check the address %q: %w", ErrPrivateAddress, address, err)
	}
	if why := refusal(ap.Addr()); why != "" {
		return privateError(ap.Addr(), why)
	}
	return nil
}
