package mcp

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentrt/agentrt/tool"
)

// mcpTool is one tool of a server, as agentrt offers it to the model.
type mcpTool struct {
	m      *Manager
	srv    *server
	remote string // the server's name for it
	spec   tool.Spec
}

// MaxToolName is the longest tool name model providers take.
const MaxToolName = 64

// ToolName is the name the model sees for the server tool name under
// prefix: prefix+name, with characters providers refuse replaced by
// '_', at most MaxToolName long.
func ToolName(prefix, name string) string {
	b := []byte(prefix + name)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			b[i] = '_'
		}
	}
	if len(b) > MaxToolName {
		b = b[:MaxToolName]
	}
	return string(b)
}

func newTool(m *Manager, s *server, t *sdk.Tool) (*mcpTool, error) {
	schema := []byte(`{"type":"object"}`)
	if t.InputSchema != nil {
		b, err := json.Marshal(t.InputSchema)
		if err != nil {
			return nil, fmt.Errorf("MCP server %s: tool %s: input schema: %w", s.cfg.Name, t.Name, err)
		}
		schema = b
	}
	desc := t.Description
	if desc == "" && t.Title != "" {
		desc = t.Title
	}
	spec := tool.Spec{
		Name: ToolName(s.cfg.ToolPrefix, t.Name), Description: desc, InputSchema: schema,
		Annotations: Annotations(t.Annotations), Timeout: s.cfg.CallTimeout, Source: "mcp:" + s.cfg.Name,
		Interactive: true,
	}
	return &mcpTool{m: m, srv: s, remote: t.Name, spec: spec}, nil
}

// Annotations maps an MCP tool's annotations onto agentrt's, with the
// protocol's defaults for hints left out: a tool is not read-only nor
// idempotent unless it says so, and destructive and open-world unless it
// says not.
func Annotations(a *sdk.ToolAnnotations) tool.Annotations {
	if a == nil {
		return tool.Annotations{Destructive: true, OpenWorld: true}
	}
	out := tool.Annotations{ReadOnly: a.ReadOnlyHint, Idempotent: a.IdempotentHint, Destructive: !a.ReadOnlyHint, OpenWorld: true}
	if a.DestructiveHint != nil && !a.ReadOnlyHint {
		out.Destructive = *a.DestructiveHint
	}
	if a.OpenWorldHint != nil {
		out.OpenWorld = *a.OpenWorldHint
	}
	return out
}

func (t *mcpTool) Spec() tool.Spec { return t.spec }

// Remote is the server's own name of the tool.
func (t *mcpTool) Remote() string { return t.remote }

// safeToRepeat says whether the tool may run twice: read-only or
// idempotent, by its server's word.
func (t *mcpTool) safeToRepeat() bool {
	return t.spec.Annotations.ReadOnly || t.spec.Annotations.Idempotent
}

func (t *mcpTool) Call(ctx context.Context, call *tool.Call) (*tool.Result, error) {
	c, err := t.m.session(ctx, t.srv, call)
	if err != nil {
		return nil, err
	}
	c.used(context.WithoutCancel(ctx), call.RunID)
	defer c.armIdle()
	return c.call(ctx, t, call)
}

var tokens atomic.Int64

// call sends the call, once more after a reinitialisation when the
// server forgot the session, and once more after a lost connection when
// the tool is safe to repeat.
func (c *capSession) call(ctx context.Context, t *mcpTool, call *tool.Call) (*tool.Result, error) {
	res, gen, err := c.send(ctx, t, call)
	switch {
	case err == nil:
		return result(res), nil
	case ctx.Err() != nil:
		return nil, err
	case errors.Is(err, sdk.ErrSessionMissing):
		// A 404 for our session id: the server never ran the call.
		if err := c.reinit(ctx, gen, err); err != nil {
			return nil, err
		}
	case answered(err):
		return nil, err // the server answered: an error the model sees
	case !t.safeToRepeat():
		return &tool.Result{IsError: true, EffectUnknown: true, Content: fmt.Sprintf(
			"the connection to MCP server %s was lost while %s ran (%v): it may or may not have taken effect", t.srv.cfg.Name, t.remote, err)}, nil
	default:
		// Lost while it ran, but safe to send again: on a new connection.
		if c.srv.cfg.Transport == "stdio" {
			if err := c.awaitGeneration(ctx, gen); err != nil {
				return nil, fmt.Errorf("MCP server %s: %w", t.srv.cfg.Name, err)
			}
		} else if err := c.reinit(ctx, gen, err); err != nil {
			return nil, err
		}
	}
	res, _, err = c.send(ctx, t, call)
	if err != nil {
		return nil, err
	}
	return result(res), nil
}

// send makes one call on the current connection and returns its
// generation.
func (c *capSession) send(ctx context.Context, t *mcpTool, call *tool.Call) (*sdk.CallToolResult, int, error) {
	tok := call.ID + "/" + strconv.FormatInt(tokens.Add(1), 10)
	c.mu.Lock()
	cs, gen := c.cs, c.rec.Generation
	if cs == nil {
		err := c.lastErr
		c.mu.Unlock()
		return nil, gen, fmt.Errorf("MCP server %s is not connected: %w", t.srv.cfg.Name, cmp.Or[error](err, errors.New("reconnecting")))
	}
	if c.idle != nil {
		c.idle.Stop()
	}
	c.inflight[tok] = call
	c.latest = call
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.inflight, tok)
		if c.latest == call {
			c.latest = nil
		}
		c.mu.Unlock()
	}()
	params := &sdk.CallToolParams{Name: t.remote, Arguments: json.RawMessage(call.Input)}
	params.SetProgressToken(tok)
	res, err := cs.CallTool(ctx, params)
	return res, gen, err
}

// result turns a call's result into agentrt's: text as it is, images and
// audio as artifacts, structured content as JSON beside the text, and
// isError as a tool error the model sees.
func result(r *sdk.CallToolResult) *tool.Result {
	out := &tool.Result{IsError: r.IsError}
	var text []string
	for _, c := range r.Content {
		switch c := c.(type) {
		case *sdk.TextContent:
			text = append(text, c.Text)
		case *sdk.ImageContent:
			out.Artifacts = append(out.Artifacts, tool.Artifact{MediaType: c.MIMEType, Data: c.Data})
			text = append(text, fmt.Sprintf("[image %s, %d bytes, kept as an artifact]", c.MIMEType, len(c.Data)))
		case *sdk.AudioContent:
			out.Artifacts = append(out.Artifacts, tool.Artifact{MediaType: c.MIMEType, Data: c.Data})
			text = append(text, fmt.Sprintf("[audio %s, %d bytes, kept as an artifact]", c.MIMEType, len(c.Data)))
		case *sdk.ResourceLink:
			text = append(text, fmt.Sprintf("[resource %s: %s]", cmp.Or(c.Name, c.Title), c.URI))
		case *sdk.EmbeddedResource:
			if rc := c.Resource; rc != nil {
				if rc.Blob != nil {
					out.Artifacts = append(out.Artifacts, tool.Artifact{MediaType: cmp.Or(rc.MIMEType, "application/octet-stream"), Data: rc.Blob})
					text = append(text, fmt.Sprintf("[resource %s, %d bytes, kept as an artifact]", rc.URI, len(rc.Blob)))
				} else {
					text = append(text, rc.Text)
				}
			}
		default:
			if b, err := json.Marshal(c); err == nil {
				text = append(text, string(b))
			}
		}
	}
	if r.StructuredContent != nil {
		if b, err := json.Marshal(r.StructuredContent); err == nil {
			out.Structured = b
			if len(text) == 0 {
				text = append(text, string(b))
			}
		}
	}
	out.Content = strings.Join(text, "\n")
	return out
}

// answered says whether err is the server's JSON-RPC error answer (the
// call reached it and it refused), not a failure to reach it.
func answered(err error) bool {
	var we *jsonrpc.Error
	return errors.As(err, &we)
}
