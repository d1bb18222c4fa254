package httpapi

import (
	"strings"
	"time"
)

// RouteInfo is one entry of the route table, exported to the external
// tests so that they hold the table and the OpenAPI document together.
type RouteInfo struct {
	Method, Path string
	Auth         bool
}

// Routes returns the server's route table.
func (s *Server) Routes() []RouteInfo {
	var out []RouteInfo
	for _, r := range s.routes() {
		method, path, _ := strings.Cut(r.pattern, " ")
		out = append(out, RouteInfo{Method: method, Path: path, Auth: r.auth})
	}
	return out
}

// RetryAfterSeconds is the Retry-After value of an *agentrt.OverloadedError's
// RetryAfter.
func RetryAfterSeconds(d time.Duration) int { return retryAfterSeconds(d) }
