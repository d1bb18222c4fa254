package model_test

import (
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/agentrt/agentrt/model"
)

func TestEndpointWithDefaults(t *testing.T) {
	t.Parallel()
	t.Run("zero", func(t *testing.T) {
		t.Parallel()
		got := model.Endpoint{Model: "m"}.WithDefaults("https://api.example/v1/")
		want := model.Endpoint{
			Model:       "m",
			BaseURL:     "https://api.example/v1/",
			HTTPClient:  &http.Client{},
			Timeout:     model.DefaultTimeout,
			IdleTimeout: model.DefaultIdleTimeout,
		}
		if diff := cmp.Diff(want, got, cmpopts.IgnoreUnexported(http.Client{})); diff != "" {
			t.Errorf("WithDefaults mismatch (-want +got):\n%s", diff)
		}
	})
	t.Run("set", func(t *testing.T) {
		t.Parallel()
		client := &http.Client{}
		e := model.Endpoint{BaseURL: "http://localhost:8080", HTTPClient: client, Timeout: time.Second, IdleTimeout: time.Millisecond}
		got := e.WithDefaults("https://api.example/v1/")
		if got.BaseURL != e.BaseURL || got.HTTPClient != client || got.Timeout != e.Timeout || got.IdleTimeout != e.IdleTimeout {
			t.Errorf("WithDefaults changed set fields: %+v", got)
		}
	})
	t.Run("no default base url", func(t *testing.T) {
		t.Parallel()
		if got := (model.Endpoint{}).WithDefaults(""); got.BaseURL != "" {
			t.Errorf("BaseURL = %q, want empty", got.BaseURL)
		}
	})
}

func TestEndpointValidate(t *testing.T) {
	t.Parallel()
	const key = "sk-secret-key"
	temp := func(v float64) *float64 { return &v }
	valid := model.Endpoint{Model: "m", APIKey: key}
	tests := []struct {
		name        string
		mod         func(*model.Endpoint)
		keyRequired bool
		want        string // the error; empty for none
	}{
		{"valid", func(*model.Endpoint) {}, true, ""},
		{"full", func(e *model.Endpoint) {
			e.BaseURL, e.Timeout, e.IdleTimeout, e.MaxOutputTokens, e.Temperature = "http://localhost:11434/v1", time.Second, time.Second, 100, temp(2)
		}, true, ""},
		{"no model", func(e *model.Endpoint) { e.Model = "" }, true, "model is required"},
		{"no key", func(e *model.Endpoint) { e.APIKey = "" }, true, "api key is required"},
		{"optional key", func(e *model.Endpoint) { e.APIKey = "" }, false, ""},
		{"relative base url", func(e *model.Endpoint) { e.BaseURL = "api.example/v1" }, true, `base url "api.example/v1" is not an absolute http or https url`},
		{"bad scheme", func(e *model.Endpoint) { e.BaseURL = "ftp://api.example/v1" }, true, `base url "ftp://api.example/v1" is not an absolute http or https url`},
		{"unparsable base url", func(e *model.Endpoint) { e.BaseURL = "http://[::1" }, true, `base url "http://[::1" is not an absolute http or https url`},
		{"negative timeout", func(e *model.Endpoint) { e.Timeout = -1 }, true, "timeout -1ns is negative"},
		{"negative idle timeout", func(e *model.Endpoint) { e.IdleTimeout = -time.Second }, true, "idle timeout -1s is negative"},
		{"negative max tokens", func(e *model.Endpoint) { e.MaxOutputTokens = -5 }, true, "max output tokens -5 is negative"},
		{"negative temperature", func(e *model.Endpoint) { e.Temperature = temp(-0.5) }, true, "temperature -0.5 is outside 0 to 2"},
		{"high temperature", func(e *model.Endpoint) { e.Temperature = temp(2.5) }, true, "temperature 2.5 is outside 0 to 2"},
		{"nan temperature", func(e *model.Endpoint) { e.Temperature = temp(math.NaN()) }, true, "temperature NaN is outside 0 to 2"},
		{"first problem only", func(e *model.Endpoint) { e.Model, e.Timeout = "", -1 }, true, "model is required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := valid
			tt.mod(&e)
			err := e.Validate(tt.keyRequired)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Validate = %v, want nil", err)
			case tt.want == "":
			case err == nil || err.Error() != tt.want:
				t.Errorf("Validate = %v, want %s", err, tt.want)
			case strings.Contains(err.Error(), key):
				t.Errorf("error %q shows the key", err)
			}
		})
	}
}
