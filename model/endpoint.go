package model

import (
	"cmp"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// Defaults applied by Endpoint.WithDefaults.
const (
	DefaultTimeout     = 10 * time.Minute
	DefaultIdleTimeout = 60 * time.Second
)

// Endpoint is how an HTTP adapter reaches a model: the settings that every
// adapter's Config embeds. Each adapter documents its default base URL and
// whether it needs a key.
type Endpoint struct {
	// Model is the model to call, as the API names it (gpt-5,
	// claude-sonnet-4-5, qwen3:8b, …). Required.
	Model string
	// APIKey is the secret the requests authenticate with. It is taken
	// from here only, never from the environment (OPENAI_API_KEY,
	// ANTHROPIC_API_KEY and the SDKs' other variables), and it is kept out
	// of errors and raw responses. Required unless the adapter says
	// otherwise.
	APIKey string
	// BaseURL is the API's base URL, an absolute http or https URL; empty
	// means the adapter's default.
	BaseURL string
	// HTTPClient sends the requests; nil means a client with no overall
	// timeout (Timeout and IdleTimeout bound each request instead).
	HTTPClient *http.Client
	// Timeout bounds a whole request, its stream included; zero means
	// DefaultTimeout.
	Timeout time.Duration
	// IdleTimeout bounds the wait for the response's first byte and
	// between two of its chunks; zero means DefaultIdleTimeout.
	IdleTimeout time.Duration
	// MaxOutputTokens caps the output of requests that set no cap of
	// their own; zero means the adapter's default, which is the API's
	// unless the adapter says otherwise.
	MaxOutputTokens int
	// Temperature is the sampling temperature, 0 to 2; nil leaves the
	// API's default.
	Temperature *float64
	// Headers are extra headers sent with every request.
	Headers map[string]string
}

// WithDefaults returns e with its zero durations and nil HTTPClient set to
// their defaults, and an empty BaseURL set to baseURL, the adapter's
// default (empty when the adapter has none of its own).
func (e Endpoint) WithDefaults(baseURL string) Endpoint {
	e.BaseURL = cmp.Or(e.BaseURL, baseURL)
	e.Timeout = cmp.Or(e.Timeout, DefaultTimeout)
	e.IdleTimeout = cmp.Or(e.IdleTimeout, DefaultIdleTimeout)
	if e.HTTPClient == nil {
		e.HTTPClient = &http.Client{}
	}
	return e
}

// Validate returns the first problem of e, or nil. An empty APIKey is a
// problem when keyRequired is set; an empty BaseURL never is. Messages
// name the field at fault and never quote the key.
func (e Endpoint) Validate(keyRequired bool) error {
	switch {
	case e.Model == "":
		return errors.New("model is required")
	case keyRequired && e.APIKey == "":
		return errors.New("api key is required")
	case e.BaseURL != "" && !httpURL(e.BaseURL):
		return fmt.Errorf("base url %q is not an absolute http or https url", e.BaseURL)
	case e.Timeout < 0:
		return fmt.Errorf("timeout %v is negative", e.Timeout)
	case e.IdleTimeout < 0:
		return fmt.Errorf("idle timeout %v is negative", e.IdleTimeout)
	case e.MaxOutputTokens < 0:
		return fmt.Errorf("max output tokens %d is negative", e.MaxOutputTokens)
	case e.Temperature != nil && !(*e.Temperature >= 0 && *e.Temperature <= 2): // NaN too
		return fmt.Errorf("temperature %v is outside 0 to 2", *e.Temperature)
	}
	return nil
}

// httpURL reports whether s is an absolute http or https URL.
func httpURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}
