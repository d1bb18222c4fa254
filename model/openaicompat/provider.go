package openaicompat

import (
	"errors"

	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/model/openaichat"
)

// Kind is the provider kind the providers of this package report.
const Kind = "openai_compatible"

// Config configures a provider for an OpenAI-compatible server. Fields
// mean what openaichat.Config's fields of the same name mean, except that
// the Endpoint's BaseURL is required: the server's Chat Completions base
// URL, ending before /chat/completions, such as
// http://localhost:11434/v1. Its APIKey is optional: it is sent as a
// bearer token when set, and an empty key sends no Authorization header.
type Config struct {
	model.Endpoint
	ReasoningEffort string
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
		return nil, errors.New("invalid openai_compatible config: base url is required (for example http://localhost:11434/v1)")
	}
	return openaichat.New(openaichat.Config{
		Endpoint:        cfg.Endpoint,
		ReasoningEffort: cfg.ReasoningEffort,
		NoStream:        cfg.NoStream,
		NoStreamUsage:   cfg.NoStreamUsage,
		Dialect:         dialect,
	})
}
