package openairesponses

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"time"

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

// Defaults for the Config durations left zero.
const (
	DefaultTimeout     = 10 * time.Minute
	DefaultIdleTimeout = 60 * time.Second
)

// Config configures a Provider. Model and APIKey are required.
type Config struct {
	// Model is the model to ask, such as gpt-5.
	Model string
	// APIKey is the secret the requests authenticate with. It is taken
	// from here only, never from the environment, and kept out of errors
	// and raw responses.
	APIKey string
	// BaseURL is the API's base URL, DefaultBaseURL when empty; requests
	// go to BaseURL + "responses".
	BaseURL string
	// HTTPClient sends the requests; when nil, a client with no overall
	// timeout (Timeout and IdleTimeout bound each request instead).
	HTTPClient *http.Client
	// Timeout bounds a whole request, its stream included; DefaultTimeout
	// when zero.
	Timeout time.Duration
	// IdleTimeout bounds the wait for the response's first byte and
	// between its chunks; DefaultIdleTimeout when zero.
	IdleTimeout time.Duration
	// MaxOutputTokens caps responses whose Request leaves it zero; zero
	// leaves the API's default.
	MaxOutputTokens int
	// Temperature is the sampling temperature (0 to 2); nil leaves the
	// API's default. Reasoning models reject it.
	Temperature *float64
	// Headers are extra headers sent with every request.
	Headers map[string]string
	// ReasoningEffort is sent as reasoning.effort: "minimal", "low",
	// "medium" or "high"; empty leaves the model's default.
	ReasoningEffort string
	// ReasoningSummary asks for reasoning summaries (reasoning.summary):
	// "auto", "concise" or "detailed"; empty asks for none.
	ReasoningSummary string
}

// WithDefaults returns c with its zero durations and base URL set to the
// defaults.
func (c Config) WithDefaults() Config {
	if c.BaseURL == "" {
		c.BaseURL = DefaultBaseURL
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = DefaultIdleTimeout
	}
	return c
}

// validate reports the first problem of a Config that WithDefaults has
// filled in.
func (c Config) validate() error {
	switch {
	case c.Model == "":
		return errors.New("model is required")
	case c.APIKey == "":
		return errors.New("api key is required")
	case c.Timeout < 0:
		return fmt.Errorf("timeout %v is negative", c.Timeout)
	case c.IdleTimeout < 0:
		return fmt.Errorf("idle timeout %v is negative", c.IdleTimeout)
	case c.MaxOutputTokens < 0:
		return fmt.Errorf("max output tokens %d is negative", c.MaxOutputTokens)
	case c.Temperature != nil && (*c.Temperature < 0 || *c.Temperature > 2):
		return fmt.Errorf("temperature %v is outside 0 to 2", *c.Temperature)
	case !slices.Contains([]string{"", "minimal", "low", "medium", "high"}, c.ReasoningEffort):
		return fmt.Errorf("reasoning effort %q is not one of minimal, low, medium, high", c.ReasoningEffort)
	case !slices.Contains([]string{"", "auto", "concise", "detailed"}, c.ReasoningSummary):
		return fmt.Errorf("reasoning summary %q is not one of auto, concise, detailed", c.ReasoningSummary)
	}
	u, err := url.Parse(c.BaseURL)
	if err != nil {
		// The parse error quotes the URL, which is not a secret.
		return fmt.Errorf("parsing base url: %w", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("base url %q is not an absolute http or https url", c.BaseURL)
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
}

var _ model.Provider = (*Provider)(nil)

// New returns a Provider for cfg, or an error naming the first invalid
// field.
func New(cfg Config) (*Provider, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("configuring openai responses provider: %w", err)
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{}
	}
	// The service is built from explicit options rather than with
	// openai.NewClient, whose defaults read OPENAI_API_KEY, OPENAI_BASE_URL
	// and other variables from the environment: the key and endpoint come
	// from Config only.
	opts := []option.RequestOption{
		option.WithBaseURL(cfg.BaseURL),
		option.WithAPIKey(cfg.APIKey),
		option.WithHTTPClient(hc),
		// The coordinator retries with its own backoff and fallback.
		option.WithMaxRetries(0),
	}
	for k, v := range cfg.Headers {
		opts = append(opts, option.WithHeader(k, v))
	}
	return &Provider{cfg: cfg, service: responses.NewResponseService(opts...)}, nil
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
