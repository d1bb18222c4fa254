package openaichat

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/agentrt/agentrt/model"
)

// Kind is the provider kind a Provider reports in its Info, unless its
// Dialect names another.
const Kind = "openai_chat"

// Config configures a Provider. Its Endpoint's BaseURL defaults to
// https://api.openai.com/v1/. The APIKey is sent as a bearer token; it is
// required unless Dialect.OptionalAPIKey is set, and an empty key then
// sends no Authorization header.
type Config struct {
	model.Endpoint
	// ReasoningEffort is sent as reasoning_effort when set: minimal, low,
	// medium or high (and the other values the SDK knows: none, xhigh,
	// max).
	ReasoningEffort string
	// NoStream asks for the whole response at once instead of streaming
	// it; Request.Stream then gets the text and reasoning in one piece
	// each, after the response arrived.
	NoStream bool
	// NoStreamUsage leaves out stream_options.include_usage, for servers
	// that reject it. Streamed responses then report no usage.
	NoStreamUsage bool
	// Dialect adapts the adapter to servers that differ from OpenAI's API;
	// the zero value is OpenAI's API. Package openaicompat sets it.
	Dialect Dialect
}

// Dialect describes how a Chat Completions server differs from OpenAI's
// own API. It exists so that package openaicompat can reuse this adapter
// rather than copy it.
type Dialect struct {
	// Kind replaces Kind in Info and in the Provider of Reasoning blocks.
	Kind string
	// OptionalAPIKey allows an empty Config.APIKey.
	OptionalAPIKey bool
	// MaxTokens sends the output cap as max_tokens, which older servers
	// know, instead of max_completion_tokens.
	MaxTokens bool
	// ReasoningFields names non-standard fields of a streamed delta (or a
	// message) that carry reasoning text, in order of preference: the
	// first one present in a delta is used, since some servers send the
	// same text under two names.
	ReasoningFields []string
}

// reasoningEfforts are the reasoning_effort values the SDK knows.
var reasoningEfforts = []shared.ReasoningEffort{
	shared.ReasoningEffortNone, shared.ReasoningEffortMinimal, shared.ReasoningEffortLow,
	shared.ReasoningEffortMedium, shared.ReasoningEffortHigh, shared.ReasoningEffortXhigh,
	shared.ReasoningEffortMax,
}

// WithDefaults returns c with zero fields set to their defaults. BaseURL
// stays empty: the SDK's default, OpenAI's API, then applies.
func (c Config) WithDefaults() Config {
	c.Endpoint = c.Endpoint.WithDefaults("")
	c.Dialect.Kind = cmp.Or(c.Dialect.Kind, Kind)
	return c
}

// validate reports the first problem of a Config that WithDefaults has
// filled in.
func (c *Config) validate() error {
	err := c.Endpoint.Validate(!c.Dialect.OptionalAPIKey)
	if err == nil && c.ReasoningEffort != "" && !slices.Contains(reasoningEfforts, shared.ReasoningEffort(c.ReasoningEffort)) {
		err = fmt.Errorf("reasoning effort %q is not one of %v", c.ReasoningEffort, reasoningEfforts)
	}
	if err != nil {
		return fmt.Errorf("invalid %s config: %w", c.Dialect.Kind, err)
	}
	return nil
}

// Provider calls the Chat Completions API. It implements model.Provider
// and is safe for concurrent use.
type Provider struct {
	cfg    Config
	info   model.Info
	svc    openai.ChatCompletionService
	models openai.ModelService
}

var (
	_ model.Provider = (*Provider)(nil)
	_ model.Prober   = (*Provider)(nil)
)

// New returns a Provider for cfg, or an error naming the first problem of
// cfg.
func New(cfg Config) (*Provider, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	// The service is built from explicit options only: openai.NewClient
	// would add OPENAI_API_KEY, OPENAI_BASE_URL and the other OPENAI_*
	// variables of the environment, and the key must come from cfg alone.
	opts := []option.RequestOption{
		option.WithEnvironmentProduction(),
		option.WithHTTPClient(cfg.HTTPClient),
		// The coordinator retries, with its own backoff, fallback and events.
		option.WithMaxRetries(0),
	}
	if cfg.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(cfg.BaseURL))
	}
	if cfg.APIKey != "" {
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	}
	for _, k := range slices.Sorted(maps.Keys(cfg.Headers)) {
		opts = append(opts, option.WithHeader(k, cfg.Headers[k]))
	}
	return &Provider{
		cfg:    cfg,
		info:   model.Info{Kind: cfg.Dialect.Kind, Model: cfg.Model},
		svc:    openai.NewChatCompletionService(opts...),
		models: openai.NewModelService(opts...),
	}, nil
}

// Info returns the provider kind (Kind, or the Dialect's) and the
// configured model.
func (p *Provider) Info() model.Info { return p.info }

// Generate sends req and returns the model's response, built from the
// stream (or the whole response when NoStream is set). Failures are
// *model.Error values, except that when ctx ends first Generate returns
// ctx's error (its cause). Tool call arguments are returned as the model
// wrote them, even when they are not valid JSON.
func (p *Provider) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	params, err := p.params(req)
	if err != nil {
		return nil, &model.Error{Kind: model.ErrInvalidRequest, Message: err.Error(), Err: err}
	}
	callCtx, cancel := context.WithTimeout(ctx, p.cfg.Timeout)
	defer cancel()
	callCtx, wd := model.NewWatchdog(callCtx, p.cfg.IdleTimeout)
	defer wd.Stop()

	x := &exchange{}
	opts := []option.RequestOption{
		option.WithMiddleware(x.middleware(wd)),
		option.WithResponseBodyInto(&x.resp),
	}
	if !p.cfg.NoStream {
		opts = append(opts, option.WithJSONSet("stream", true))
	}
	// The body is read here rather than by the SDK: its stream type cannot
	// tell a finished stream from a cut one, and its JSON decoding cannot
	// tell a malformed body from a failed read.
	if _, err := p.svc.New(callCtx, params, opts...); err != nil {
		return nil, p.fail(ctx, callCtx, x, err)
	}
	defer x.resp.Body.Close()

	var resp *model.Response
	if p.cfg.NoStream {
		resp, err = p.readJSON(x, req.Stream)
	} else {
		resp, err = p.readStream(x, req.Stream)
	}
	if err != nil {
		return nil, p.fail(ctx, callCtx, x, err)
	}
	resp.Raw = model.RedactBytes(x.capture.Bytes(), p.cfg.APIKey)
	if !p.cfg.NoStream {
		resp.RawMediaType = "text/event-stream"
	}
	return resp, nil
}

// Probe lists the endpoint's models (GET models under the base URL), with
// the key and headers Generate sends, and reports whether the configured
// model is among them. Failures are classified as Generate's are.
func (p *Provider) Probe(ctx context.Context) (*model.ProbeResult, error) {
	callCtx, cancel := context.WithTimeout(ctx, p.cfg.Timeout)
	defer cancel()
	callCtx, wd := model.NewWatchdog(callCtx, p.cfg.IdleTimeout)
	defer wd.Stop()
	x := &exchange{}
	page, err := p.models.List(callCtx, option.WithMiddleware(x.middleware(wd)))
	if err != nil {
		return nil, p.fail(ctx, callCtx, x, err)
	}
	ids := make([]string, len(page.Data))
	for i, m := range page.Data {
		ids[i] = m.ID
	}
	return model.ProbeOf(p.cfg.Model, ids), nil
}

// exchange is what one Generate call learns about its HTTP response.
type exchange struct {
	resp    *http.Response
	status  int
	header  http.Header
	capture *model.Capture
}

// middleware records the response and routes its body through a capture
// that keeps the raw bytes and kicks the watchdog on every read.
func (x *exchange) middleware(wd *model.Watchdog) option.Middleware {
	return func(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		resp, err := next(req)
		if resp != nil && resp.Body != nil {
			wd.Kick()
			x.status, x.header = resp.StatusCode, resp.Header
			x.capture = model.CaptureBody(resp.Body, wd.Kick)
			resp.Body = x.capture
		}
		return resp, err
	}
}

// fail classifies err, from the call made with callCtx under the caller's
// ctx, and keeps the API key out of its message.
func (p *Provider) fail(ctx, callCtx context.Context, x *exchange, err error) error {
	// A caller's cancellation is reported as such, never as a timeout of
	// ours.
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	status, header := x.status, x.header
	var code, message string
	var apiErr *openai.Error
	if errors.As(err, &apiErr) {
		status, code, message = apiErr.StatusCode, cmp.Or(apiErr.Code, apiErr.Type), apiErr.Message
		if apiErr.Response != nil {
			header = apiErr.Response.Header
		}
	}
	var me *model.Error
	switch {
	case status >= 400:
		// The SDK decodes only {"error":{…}} bodies; other servers answer
		// with other shapes, or the SDK fails to decode the body at all.
		if code == "" && message == "" && x.capture != nil {
			code, message = errorFields(x.capture.Bytes())
		}
		me = model.HTTPError(status, header, code, message)
	case errors.As(err, &me):
	default:
		tErr := model.TransportError(callCtx, err)
		if !errors.As(tErr, &me) {
			return tErr
		}
	}
	me.Message = model.Redact(me.Message, p.cfg.APIKey)
	return me
}
