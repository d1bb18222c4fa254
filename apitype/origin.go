package apitype

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// ParseOrigin checks an origin of the CORS allow-list (the server's
// cors_origins): a scheme (http or https), a host and maybe a port,
// nothing else. It returns it as a browser sends it.
func ParseOrigin(s string) (string, error) {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return "", fmt.Errorf("%q is not an origin: %v", s, err)
	case u.Scheme != "http" && u.Scheme != "https":
		return "", fmt.Errorf("%q is not an origin: want http:// or https:// and a host, such as https://console.example.com", s)
	case u.Host == "" || u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "":
		return "", fmt.Errorf("%q is not an origin: want a scheme and a host with no path, such as https://console.example.com", s)
	}
	if p := u.Port(); p != "" {
		if _, err := strconv.ParseUint(p, 10, 16); err != nil {
			return "", fmt.Errorf("%q is not an origin: bad port %q", s, p)
		}
	}
	return strings.ToLower(u.Scheme + "://" + u.Host), nil
}
