package openairesponses_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

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
	const key = "sk-probe-test-0123456789abcdef"
	srv := probetest.Serve(t, probetest.OpenAI(probetest.ReadFile(t, "../openaichat/testdata/models.json")), key)
	probe := func(base, m string) (*model.ProbeResult, error) {
		t.Helper()
		p, err := openairesponses.New(openairesponses.Config{Endpoint: model.Endpoint{Model: m, APIKey: key, BaseURL: base + "/v1/"}})
		if err != nil {
			t.Fatal(err)
		}
		return p.Probe(context.Background())
	}
	for _, tt := range []struct {
		name, base, model string
		want              *model.ProbeResult
	}{
		{"listed", srv.Up, "gpt-4o", &model.ProbeResult{Models: 3, Listed: true}},
		{"not listed", srv.Up, "gpt-5", &model.ProbeResult{Models: 3}},
	} {
		got, err := probe(tt.base, tt.model)
		if err != nil {
			t.Fatalf("%s: Probe: %v", tt.name, err)
		}
		if d := cmp.Diff(tt.want, got); d != "" {
			t.Errorf("%s: Probe (-want +got):\n%s", tt.name, d)
		}
	}
	for _, tt := range []struct {
		name, base string
		kind       model.ErrorKind
		status     int
	}{
		{"refused", srv.Refusing, model.ErrAuth, 401},
		{"down", srv.Down, model.ErrNetwork, 0},
		{"wrong base url", srv.Up + "/nowhere", model.ErrInvalidRequest, 404},
	} {
		_, err := probe(tt.base, "gpt-4o")
		var me *model.Error
		if !errors.As(err, &me) || me.Kind != tt.kind || me.StatusCode != tt.status {
			t.Errorf("%s: Probe = %v, want a %s error (status %d)", tt.name, err, tt.kind, tt.status)
			continue
		}
		if strings.Contains(me.Error(), key) {
			t.Errorf("%s: the error shows the key: %v", tt.name, me)
		}
	}
}
