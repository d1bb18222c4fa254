package openaicompat

import (
	"errors"
	"net/http"
	"time"

	"github.com/agentrt/agentrt/model/openaichat"
)

// Kind is the provider kind the providers of this package report.
const Kind = "openai_compatible"

// Config configures a provider for an OpenAI-compatible server. Fields
// mean what openaichat.Config's fields of the same name mean, except as
// noted.
type Config struct {
	// Model is the model to call, as the server names it (llama3.2,
	// qwen3:8b, …). Required.
	Model string
	// APIKey is sent as a bearer token when set; empty sends no
	// Authorization header.
	APIKey string
	// BaseURL is the server's Chat Completions base URL, ending before
	// /chat/completions, such as http://localhost:11434/v1. Required.
	BaseURL         string
	HTTPClient      *http.Client
	Timeout         time.Duration
	IdleTimeout     time.Duration
	MaxOutputTokens int
	Temperature     *float64
	ReasoningEffort string
	Headers         map[string]string
	NoStream        bool
	NoStreamUsage   bool
}

// dialect is how compatible servers differ from OpenAI's API.
var dialect = openaichat.Dialect{
	Kind:            Kind,
	OptionalAPIKey:  true,
	MaxTokens:       true,
	ReasoningFields: []string{"reasoning_content", "reasoning"},
}

// New returns a provider for the server at cfg.BaseURL. It is an
// *openaichat.Provider whose Info reports the kind "openai_compatible".
func New(cfg Config) (*openaichat.Provider, error) {
	if cfg.BaseURL == "" {
		return nil, errors.New("invalid openai_compatible config: BaseURL is required (for example http://localhost:11434/v1)")
	}
	return openaichat.New(openaichat.Config{
		Model:           cfg.Model,
		APIKey:          cfg.APIKey,
		BaseURL:         cfg.BaseURL,
		HTTPClient:      cfg.HTTPClient,
		Timeout:         cfg.Timeout,
		IdleTimeout:     cfg.IdleTimeout,
		MaxOutputTokens: cfg.MaxOutputTokens,
		Temperature:     cfg.Temperature,
		ReasoningEffort: cfg.ReasoningEffort,
		Headers:         cfg.Headers,
		NoStream:        cfg.NoStream,
		NoStreamUsage:   cfg.NoStreamUsage,
		Dialect:         dialect,
	})
}
