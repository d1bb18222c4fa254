package openairesponses

import (
	"context"
	"fmt"
	"net/http"
	"slices"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/agentrt/agentrt/model"
)

// Kind is the provider kind a Provider reports in its Info and stamps on
// the reasoning blocks it returns.
const Kind = "openai_responses"

// DefaultBaseURL is the OpenAI API's base URL, used when Config.BaseURL is
// empty.
const DefaultBaseURL = "https://api.openai.com/v1/"

// Config configures a Provider. Model and APIKey are required. Its
// Endpoint's BaseURL is DefaultBaseURL when empty; requests go to
// BaseURL + "responses". Reasoning models reject a Temperature.
type Config struct {
	model.Endpoint
	// ReasoningEffort is sent as reasoning.effort: "minimal", "low",
	// "medium" or "high"; empty leaves the model's default.
	ReasoningEffort string
	// ReasoningSummary asks for reasoning summaries (reasoning.summary):
	// "auto", "concise" or "detailed"; empty asks for none.
	ReasoningSummary string
}

// WithDefaults returns c with its zero fields set to their defaults.
func (c Config) WithDefaults() Config {
	c.Endpoint = c.Endpoint.WithDefaults(DefaultBaseURL)
	return c
}

// validate reports the first problem of a Config that WithDefaults has
// filled in.
func (c Config) validate() error {
	if err := c.Endpoint.Validate(true); err != nil {
		return err
	}
	switch {
	case !slices.Contains([]string{"", "minimal", "low", "medium", "high"}, c.ReasoningEffort):
		return fmt.Errorf("reasoning effort %q is not one of minimal, low, medium, high", c.ReasoningEffort)
	case !slices.Contains([]string{"", "auto", "concise", "detailed"}, c.ReasoningSummary):
		return fmt.Errorf("reasoning summary %q is not one of auto, concise, detailed", c.ReasoningSummary)
	}
	return nil
}

// reasoning reports whether the config asks for reasoning settings, and
// so for encrypted reasoning items to carry between requests.
func (c Config) reasoning() bool { return c.ReasoningEffort != "" || c.ReasoningSummary != "" }

// Provider calls the OpenAI Responses API. It implements model.Provider
// and is safe for concurrent use.
type Provider struct {
	cfg     Config
	service responses.ResponseService
	models  openai.ModelService
}

var (
	_ model.Provider = (*Provider)(nil)
	_ model.Prober   = (*Provider)(nil)
)

// New returns a Provider for cfg, or an error naming the first invalid
// field.
func New(cfg Config) (*Provider, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("configuring openai responses provider: %w", err)
	}
	// The service is built from explicit options rather than with
	// openai.NewClient, whose defaults read OPENAI_API_KEY, OPENAI_BASE_URL
	// and other variables from the environment: the key and endpoint come
	// from Config only.
	opts := []option.RequestOption{
		option.WithBaseURL(cfg.BaseURL),
		option.WithAPIKey(cfg.APIKey),
		option.WithHTTPClient(cfg.HTTPClient),
		// The coordinator retries with its own backoff and fallback.
		option.WithMaxRetries(0),
	}
	for k, v := range cfg.Headers {
		opts = append(opts, option.WithHeader(k, v))
	}
	return &Provider{cfg: cfg, service: responses.NewResponseService(opts...), models: openai.NewModelService(opts...)}, nil
}

// Info returns the kind "openai_responses" and the configured model.
func (p *Provider) Info() model.Info { return model.Info{Kind: Kind, Model: p.cfg.Model} }

// Generate streams one response to req and returns it complete. Failures
// are *model.Error values, except that when ctx is cancelled Generate
// returns ctx's cause.
func (p *Provider) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	params, err := p.params(req)
	if err != nil {
		return nil, err
	}
	rctx, cancel := context.WithTimeout(ctx, p.cfg.Timeout)
	defer cancel()
	rctx, wd := model.NewWatchdog(rctx, p.cfg.IdleTimeout)
	defer wd.Stop()

	// capture is written by the middleware, which runs in the SDK call on
	// this goroutine before the stream is read.
	var capture *model.Capture
	keep := option.WithMiddleware(func(r *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		res, err := next(r)
		if err != nil || res == nil || res.Body == nil {
			return res, err
		}
		wd.Kick() // the headers count as the first data
		capture = model.CaptureBody(res.Body, wd.Kick)
		res.Body = capture
		return res, nil
	})
	stream := p.service.NewStreaming(rctx, params, keep)
	defer stream.Close()

	acc := newAccumulator(req.Stream)
	for stream.Next() {
		done, err := acc.add(stream.Current())
		if err != nil {
			return nil, p.fail(ctx, rctx, err)
		}
		if done {
			break
		}
	}
	if err := stream.Err(); err != nil {
		return nil, p.fail(ctx, rctx, err)
	}
	if ctx.Err() != nil {
		return nil, context.Cause(ctx)
	}
	res, err := acc.response()
	if err != nil {
		return nil, p.fail(ctx, rctx, err)
	}
	if capture != nil {
		res.Raw = model.RedactBytes(capture.Bytes(), p.cfg.APIKey)
		res.RawMediaType = "text/event-stream"
	}
	return res, nil
}

// Probe lists the endpoint's models (GET models under the base URL), with
// the key and headers Generate sends, and reports whether the configured
// model is among them. Failures are classified as Generate's are.
func (p *Provider) Probe(ctx context.Context) (*model.ProbeResult, error) {
	rctx, cancel := context.WithTimeout(ctx, p.cfg.Timeout)
	defer cancel()
	rctx, wd := model.NewWatchdog(rctx, p.cfg.IdleTimeout)
	defer wd.Stop()
	page, err := p.models.List(rctx, option.WithMiddleware(func(r *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		res, err := next(r)
		if err == nil && res != nil && res.Body != nil {
			wd.Kick()
			res.Body = model.CaptureBody(res.Body, wd.Kick)
		}
		return res, err
	}))
	if err != nil {
		return nil, p.fail(ctx, rctx, err)
	}
	ids := make([]string, len(page.Data))
	for i, m := range page.Data {
		ids[i] = m.ID
	}
	return model.ProbeOf(p.cfg.Model, ids), nil
}

// fail classifies err and keeps the API key out of its message. A
// cancellation of the caller's ctx wins over everything else, so that it
// is never reported as this request's timeout.
func (p *Provider) fail(ctx, rctx context.Context, err error) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	e := classify(rctx, err)
	me, ok := e.(*model.Error)
	if !ok {
		return e
	}
	c := *me
	c.Message = model.Redact(c.Message, p.cfg.APIKey)
	if c.Message == "" && c.Err != nil {
		// Error() would print Err's text instead.
		c.Message = model.Redact(c.Err.Error(), p.cfg.APIKey)
	}
	return &c
}
