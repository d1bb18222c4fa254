package configure

import (
	"context"
	"fmt"
	"os"

	"github.com/agentrt/agentrt/config"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/model/anthropic"
	"github.com/agentrt/agentrt/model/openaichat"
	"github.com/agentrt/agentrt/model/openaicompat"
	"github.com/agentrt/agentrt/model/openairesponses"
	"github.com/agentrt/agentrt/model/replay"
)

// provider builds the model provider of a configured model. When the
// model needs an API key that is not set, it returns a provider that
// refuses every call and says why in unavailable.
func provider(m *config.Model) (p model.Provider, unavailable string, err error) {
	if m.Provider == config.ProviderReplay {
		s, err := replay.Load(m.Script)
		if err != nil {
			return nil, "", err
		}
		return replay.New(s), "", nil
	}
	key, missing := APIKey(m)
	if missing != "" {
		return unavailableProvider{info: model.Info{Kind: m.Provider, Model: m.Name}, why: missing}, missing, nil
	}
	ep := model.Endpoint{
		Model: m.Name, APIKey: key, BaseURL: m.BaseURL, Timeout: m.Timeout, IdleTimeout: m.IdleTimeout,
		MaxOutputTokens: m.MaxOutputTokens, Temperature: m.Temperature, Headers: m.Headers,
	}
	switch m.Provider {
	case config.ProviderOpenAIChat:
		p, err = openaichat.New(openaichat.Config{Endpoint: ep, ReasoningEffort: m.ReasoningEffort})
	case config.ProviderOpenAICompatible:
		p, err = openaicompat.New(openaicompat.Config{Endpoint: ep, ReasoningEffort: m.ReasoningEffort})
	case config.ProviderOpenAIResponses:
		p, err = openairesponses.New(openairesponses.Config{
			Endpoint: ep, ReasoningEffort: m.ReasoningEffort, ReasoningSummary: m.ReasoningSummary,
		})
	case config.ProviderAnthropic:
		p, err = anthropic.New(anthropic.Config{Endpoint: ep, ThinkingBudget: m.ThinkingBudget})
	default:
		return nil, "", fmt.Errorf("model provider %q is not supported", m.Provider)
	}
	if err != nil {
		return nil, "", err
	}
	return p, "", nil
}

// APIKey returns the API key a configured model uses, from the file or
// its environment variable. missing says why there is none when the
// model's provider needs one; a provider that needs no key (an
// OpenAI-compatible server without api_key_env) gets an empty key and no
// complaint.
func APIKey(m *config.Model) (key, missing string) {
	switch {
	case m.APIKey != "":
		return m.APIKey, ""
	case m.APIKeyEnv == "":
		return "", ""
	}
	if key = os.Getenv(m.APIKeyEnv); key == "" {
		return "", fmt.Sprintf("its API key is not set: the environment variable %s is empty", m.APIKeyEnv)
	}
	return key, ""
}

// unavailableProvider stands in for a provider that cannot be built; it
// refuses every call. Routing excludes its candidate before it is called.
type unavailableProvider struct {
	info model.Info
	why  string
}

func (p unavailableProvider) Info() model.Info { return p.info }

func (p unavailableProvider) Generate(context.Context, *model.Request) (*model.Response, error) {
	return nil, &model.Error{Kind: model.ErrAuth, Message: "the model is unavailable: " + p.why}
}
