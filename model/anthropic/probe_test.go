package anthropic_test

import (
	"testing"

	"github.com/agentrt/agentrt/internal/probetest"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/model/anthropic"
)

// TestProbe: Probe lists the endpoint's models with the key Generate
// sends and says whether the configured model is among them; a refused
// key is an auth error without the key in its message, an endpoint that
// is down a network error, a wrong base URL an invalid request (404).
func TestProbe(t *testing.T) {
	t.Parallel()
	api := probetest.Anthropic(probetest.ReadFile(t, "testdata/models.json"))
	probetest.Check(t, api, func(base, m string) (model.Prober, error) {
		return anthropic.New(anthropic.Config{Endpoint: model.Endpoint{Model: m, APIKey: probetest.Key, BaseURL: base}})
	}, "claude-sonnet-4-5-20250929", "claude-sonnet-4-5", 2)
}
