package anthropic

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
	"github.com/anthropics/anthropic-sdk-go/packages/param"

	"github.com/agentrt/agentrt/model"
)

// Kind is the provider kind a Provider reports in its Info.
const Kind = "anthropic_messages"

// Defaults of Config, besides model.DefaultTimeout and
// model.DefaultIdleTimeout.
const (
	DefaultBaseURL         = "https://api.anthropic.com/"
	DefaultMaxOutputTokens = 4096
)

// minThinkingBudget is the smallest thinking budget the API accepts.
const minThinkingBudget = 1024

// Config configures a Provider. Model and APIKey are required. Its
// Endpoint's BaseURL is DefaultBaseURL when empty, and its MaxOutputTokens
// is max_tokens for requests that set none (the API requires it),
// DefaultMaxOutputTokens when zero. Headers can carry anthropic-beta.
type Config struct {
	model.Endpoint
	// ThinkingBudget turns on extended thinking with this many tokens
	// (at least 1024, and less than the request's max_tokens); zero leaves
	// thinking off. Temperature must then stay unset.
	ThinkingBudget int
}

// WithDefaults returns c with its zero fields set to their defaults.
func (c Config) WithDefaults() Config {
	c.Endpoint = c.Endpoint.WithDefaults(DefaultBaseURL)
	c.MaxOutputTokens = cmp.Or(c.MaxOutputTokens, DefaultMaxOutputTokens)
	return c
}

// validate reports the first problem of a Config that WithDefaults has
// filled in.
func (c *Config) validate() error {
	if err := c.Endpoint.Validate(true); err != nil {
		return err
	}
	switch {
	case c.ThinkingBudget == 0:
		return nil
	case c.ThinkingBudget < minThinkingBudget:
		return fmt.Errorf("thinking budget %d is below the api's minimum of %d", c.ThinkingBudget, minThinkingBudget)
	case c.ThinkingBudget >= c.MaxOutputTokens:
		return fmt.Errorf("thinking budget %d must be less than max output tokens %d", c.ThinkingBudget, c.MaxOutputTokens)
	case c.Temperature != nil:
		return errors.New("temperature cannot be set when thinking is on")
	}
	return nil
}

// Provider calls the Anthropic Messages API. It implements model.Provider
// and is safe for concurrent use.
type Provider struct {
	cfg    Config
	client anthropic.Client
}

var (
	_ model.Provider = (*Provider)(nil)
	_ model.Prober   = (*Provider)(nil)
)

// New returns a Provider for cfg, with defaults applied.
func New(cfg Config) (*Provider, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("configuring the anthropic provider: %w", err)
	}
	opts := []option.RequestOption{
		// Without this marker NewClient reads ANTHROPIC_API_KEY,
		// ANTHROPIC_BASE_URL, profiles and more from the environment.
		option.WithoutEnvironmentDefaults(),
		option.WithAPIKey(cfg.APIKey),
		option.WithBaseURL(cfg.BaseURL),
		option.WithHTTPClient(cfg.HTTPClient),
		// The coordinator retries, with its own backoff, fallback and events.
		option.WithMaxRetries(0),
	}
	for _, k := range slices.Sorted(maps.Keys(cfg.Headers)) {
		opts = append(opts, option.WithHeader(k, cfg.Headers[k]))
	}
	return &Provider{cfg: cfg, client: anthropic.NewClient(opts...)}, nil
}

// Info returns the kind "anthropic_messages" and the configured model.
func (p *Provider) Info() model.Info { return model.Info{Kind: Kind, Model: p.cfg.Model} }

// Generate sends req as one streamed Messages call and returns the
// accumulated response. Failures are *model.Error values, except that a
// cancelled ctx returns ctx's cause.
func (p *Provider) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	params, err := p.params(req)
	if err != nil {
		return nil, err
	}
	callCtx, cancel := context.WithTimeout(ctx, p.cfg.Timeout)
	defer cancel()
	callCtx, wd := model.NewWatchdog(callCtx, p.cfg.IdleTimeout)
	defer wd.Stop()

	var capture *model.Capture
	keep := func(r *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		resp, err := next(r)
		if err == nil && resp != nil && resp.Body != nil {
			capture = model.CaptureBody(resp.Body, wd.Kick)
			resp.Body = capture
		}
		return resp, err
	}
	stream := p.client.Messages.NewStreaming(callCtx, params, option.WithMiddleware(keep))
	defer stream.Close()

	acc := accumulator{stream: req.Stream}
	// Checking callCtx stops at once on cancellation, without draining
	// events already buffered.
	for !acc.done && callCtx.Err() == nil && stream.Next() {
		if err := acc.add(stream.Current()); err != nil {
			return nil, p.redact(err)
		}
	}
	if err := stream.Err(); err != nil || !acc.done {
		switch {
		case ctx.Err() != nil:
			// The caller gave up: that is not a provider failure.
			return nil, context.Cause(ctx)
		case err != nil:
			return nil, p.redact(p.classify(callCtx, err))
		case callCtx.Err() != nil:
			return nil, p.redact(model.TransportError(callCtx, callCtx.Err()))
		}
		return nil, &model.Error{Kind: model.ErrNetwork, Message: "the stream ended before the response was complete"}
	}
	resp := acc.response()
	if capture != nil {
		resp.Raw = model.RedactBytes(capture.Bytes(), p.cfg.APIKey)
		resp.RawMediaType = "text/event-stream"
	}
	return resp, nil
}

// Probe lists the API's models (GET v1/models under the base URL, the
// first 1000), with the key and headers Generate sends, and reports
// whether the configured model is among them (a model named by an alias
// may be served without being listed). Failures are classified as
// Generate's are.
func (p *Provider) Probe(ctx context.Context) (*model.ProbeResult, error) {
	callCtx, cancel := context.WithTimeout(ctx, p.cfg.Timeout)
	defer cancel()
	callCtx, wd := model.NewWatchdog(callCtx, p.cfg.IdleTimeout)
	defer wd.Stop()
	page, err := p.client.Models.List(callCtx, anthropic.ModelListParams{Limit: param.NewOpt[int64](1000)},
		option.WithMiddleware(func(r *http.Request, next option.MiddlewareNext) (*http.Response, error) {
			resp, err := next(r)
			if err == nil && resp != nil && resp.Body != nil {
				wd.Kick()
				resp.Body = model.CaptureBody(resp.Body, wd.Kick)
			}
			return resp, err
		}))
	if err != nil {
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		return nil, p.redact(p.classify(callCtx, err))
	}
	ids := make([]string, len(page.Data))
	for i, m := range page.Data {
		ids[i] = m.ID
	}
	return model.ProbeOf(p.cfg.Model, ids), nil
}

// classify turns an error of the SDK's stream into a *model.Error; ctx is
// the call's context, whose stall or deadline makes a timeout.
func (p *Provider) classify(ctx context.Context, err error) error {
	var ae *anthropic.Error
	if errors.As(err, &ae) {
		typ, msg := errorBody(ae.RawJSON())
		if ae.StatusCode >= 400 {
			var h http.Header
			if ae.Response != nil {
				h = ae.Response.Header
			}
			return model.HTTPError(ae.StatusCode, h, typ, msg)
		}
		// The SDK reports an `event: error` frame with the stream's 200.
		return model.StreamError(typ, msg)
	}
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	if errors.As(err, &se) || errors.As(err, &te) {
		return model.MalformedResponse("decoding a stream event: %v", err)
	}
	return model.TransportError(ctx, err)
}

// errorBody returns the type and message of an API error body, or empty
// strings when it is not one.
func errorBody(raw string) (typ, msg string) {
	var body anthropic.ErrorResponse
	if json.Unmarshal([]byte(raw), &body) != nil {
		return "", ""
	}
	return body.Error.Type, body.Error.Message
}

// redact scrubs the API key from a *model.Error's message. Other errors
// (the caller's cancellation cause) are not ours to rewrite.
func (p *Provider) redact(err error) error {
	var me *model.Error
	if errors.As(err, &me) {
		me.Message = model.Redact(me.Message, p.cfg.APIKey)
	}
	return err
}
