package hook

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
)

// runHTTP POSTs the hook input to an HTTP hook and reads its answer. A
// 2xx body is read as a command's stdout would be; any other status, or
// no response, is a transport failure. As in Claude Code, an HTTP hook
// blocks only with a JSON answer, never with its status.
func (r *Runner) runHTTP(ctx context.Context, h *hook, p Point, body []byte) (effect, *failure) {
	reqCtx, cancel := context.WithTimeoutCause(ctx, h.timeout, errTimedOut)
	defer cancel()
	req, err := http.NewRequestWithContext(reqCtx, http.MethodPost, h.url, bytes.NewReader(body))
	if err != nil {
		return effect{}, &failure{category: categoryStart, message: "building the request: " + err.Error()}
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range h.headers {
		req.Header.Set(k, os.Expand(v, func(name string) string { return h.envMap[name] }))
	}

	resp, err := r.client.Do(req)
	if err != nil {
		return effect{}, transportFailure(ctx, reqCtx, h, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxOutput+1))
	if err != nil {
		return effect{}, transportFailure(ctx, reqCtx, h, fmt.Errorf("reading the response: %w", err))
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		msg := "status " + resp.Status
		if len(bytes.TrimSpace(data)) > 0 {
			msg += ": " + excerpt(data, 0)
		}
		return effect{}, &failure{category: categoryTransport, message: msg}
	}
	if len(data) > maxOutput {
		return effect{}, invalidOutput("response body exceeds %d MiB", maxOutput>>20)
	}
	return parseOutput(h.name, p, data)
}

func transportFailure(ctx, reqCtx context.Context, h *hook, err error) *failure {
	if f := interrupted(ctx, reqCtx, h); f != nil {
		return f
	}
	return &failure{category: categoryTransport, message: err.Error()}
}
