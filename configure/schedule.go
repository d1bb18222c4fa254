package configure

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/config"
	"github.com/agentrt/agentrt/webhook"
)

// webhooksFromFile turns the file's webhooks into the runtime's, reading
// each signing secret from its secret_env now. agentrt.New hands the
// secrets to the redactor.
func webhooksFromFile(f *config.File, cfg *agentrt.Config) error {
	for _, name := range sortedKeys(f.Webhooks) {
		w := f.Webhooks[name]
		secret := os.Getenv(w.SecretEnv)
		if secret == "" {
			return fmt.Errorf("webhook %s: environment variable %s (its secret_env) is not set", name, w.SecretEnv)
		}
		if _, err := webhook.ParseSecret(secret); err != nil {
			return fmt.Errorf("webhook %s: environment variable %s (its secret_env): %w", name, w.SecretEnv, err)
		}
		if cfg.Webhooks == nil {
			cfg.Webhooks = make(map[string]agentrt.Webhook, len(f.Webhooks))
		}
		cfg.Webhooks[name] = agentrt.Webhook{URL: w.URL, Secret: secret, AllowPrivate: w.AllowPrivate, MaxAttempts: w.MaxAttempts, Timeout: w.Timeout}
	}
	return nil
}

// schedulesFromFile turns the file's schedules into the runtime's
// declared schedules. The runtime checks, when it starts, what the file
// could not (the input template, the tools of the agent); its errors name
// the schedule. A schedule's instance must exist by then: the runtime
// refuses to start with a declared schedule of an unknown instance.
func schedulesFromFile(f *config.File, cfg *agentrt.Config) {
	for _, s := range f.Schedules {
		spec := apitype.ScheduleSpec{
			Name: s.Name, Agent: s.Agent, Kind: s.Kind,
			Cron: s.Cron, TimeZone: s.TimeZone, Every: duration(s.Every), At: timestamp(s.At), Start: timestamp(s.Start),
			Input: s.Input, Params: s.Params, InputSchema: s.InputSchema,
			Model: s.Model, Tools: s.Tools, InactivityTimeout: duration(s.InactivityTimeout),
			Overlap: s.Overlap, CatchupWindow: duration(s.CatchupWindow), PauseAfterFailures: s.PauseAfterFailures,
			Webhook: s.Webhook, Instance: s.Instance,
		}
		if p := s.PreRun; p != nil {
			spec.PreRun = &apitype.PreRunSpec{Tool: p.Tool, Input: p.Input}
		}
		cfg.Schedules = append(cfg.Schedules, spec)
	}
}

// duration is d as a ScheduleSpec holds it: "" for zero, and without
// zero units ("1h", not "1h0m0s").
func duration(d time.Duration) string {
	if d == 0 {
		return ""
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// timestamp is t as a ScheduleSpec holds it: RFC 3339, "" for zero.
func timestamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}
