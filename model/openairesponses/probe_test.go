package openairesponses_test

import (
	"testing"

	"github.com/agentrt/agentrt/internal/probetest"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/model/openairesponses"
)

// TestProbe: Probe lists the endpoint's models with the key Generate
// sends and says whether the configured model is among them; a refused
// key is an auth error without the key in its message, an endpoint that
// is down a network error, a wrong base URL an invalid request (404).
func TestProbe(t *testing.T) {
	t.Parallel()
	api := probetest.OpenAI(probetest.ReadFile(t, "../openaichat/testdata/models.json"))
	probetest.Check(t, api, func(base, m string) (model.Prober, error) {
		return openairesponses.New(openairesponses.Config{Endpoint: model.Endpoint{Model: m, APIKey: probetest.Key, BaseURL: base + "/v1/"}})
	}, "gpt-4o", "gpt-5", 3)
}
