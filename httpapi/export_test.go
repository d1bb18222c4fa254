package httpapi

import (
	"net"
	"net/netip"
	"strings"
	"time"
)

// RouteInfo is one entry of the route table, exported to the external
// tests so that they hold the table and the OpenAPI document together.
type RouteInfo struct {
	Method, Path string
	Auth         bool
	// Roles may call the route; Own names the parameters whose record a
	// submitter must own (its x-agentrt-own).
	Roles []string
	Own   []string
}

// Routes returns the server's route table.
func (s *Server) Routes() []RouteInfo {
	var out []RouteInfo
	for _, r := range s.routes() {
		method, path, _ := strings.Cut(r.pattern, " ")
		ri := RouteInfo{Method: method, Path: path, Auth: !r.access.public()}
		for _, role := range r.access.roles {
			ri.Roles = append(ri.Roles, string(role))
		}
		for _, p := range r.access.own {
			ri.Own = append(ri.Own, p.name)
		}
		out = append(out, ri)
	}
	return out
}

// RouteTable is the route table every server has.
func RouteTable() []RouteInfo { return (&Server{}).Routes() }

// RetryAfterSeconds is the Retry-After value of an *apitype.OverloadedError's
// RetryAfter.
func RetryAfterSeconds(d time.Duration) int { return retryAfterSeconds(d) }

// LimitListenerNotify is LimitListener that sends on released each client
// address whose count of open connections went down, once it has.
func LimitListenerNotify(ln net.Listener, perClient int, released chan<- netip.Addr) net.Listener {
	l := LimitListener(ln, perClient, nil).(*limitListener)
	l.released = released
	return l
}
