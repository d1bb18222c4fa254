package configure_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/configure"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/webhook"
)

// TestNightlyExample loads examples/support/nightly.yaml (a copy, so its
// data directory lands in the test's) with its secret set: the schedule
// and the webhook are as the file says, and a runtime started from it has
// nightly-digest due at 07:00 Berlin time. Triggered, the fire runs the
// digest agent offline and its result is delivered, signed, to the
// webhook (pointed at a test server instead of 127.0.0.1:8089).
func TestNightlyExample(t *testing.T) {
	secret, err := webhook.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("AGENTRT_DIGEST_SECRET", secret)
	dir := t.TempDir()
	for _, name := range []string{"nightly.yaml", "nightly.replay.yaml", "workspace/orders.md"} {
		b, err := os.ReadFile(filepath.Join("../examples/support", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg, _, err := configure.Load(filepath.Join(dir, "nightly.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if w := cfg.Webhooks["digest"]; len(cfg.Webhooks) != 1 || w.URL != "http://127.0.0.1:8089/digest" || !w.AllowPrivate || w.Secret != secret {
		t.Errorf("Webhooks = %v, want digest at 127.0.0.1:8089 with the secret", cfg.Webhooks)
	}
	if len(cfg.Schedules) != 1 {
		t.Fatalf("Schedules = %+v, want nightly-digest", cfg.Schedules)
	}
	s := cfg.Schedules[0]
	if s.Name != "nightly-digest" || s.Agent != "digest" || s.Kind != "cron" || s.Cron != "0 7 * * *" || s.TimeZone != "Europe/Berlin" ||
		string(s.Params) != `{"team":"support"}` || s.Overlap != "skip" || s.CatchupWindow != "1h" || s.PauseAfterFailures != 3 || s.Webhook != "digest" ||
		!strings.Contains(s.Input, "{{.FireTime}}") || !strings.Contains(s.Input, "{{.Params.team}}") {
		t.Errorf("schedule = %+v, want nightly-digest as the example declares it", s)
	}

	type delivery struct {
		body []byte
		err  error
	}
	got := make(chan delivery, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		key, err := webhook.ParseSecret(secret)
		if err == nil {
			err = webhook.Verify(key, r.Header, body, time.Now(), 5*time.Minute)
		}
		select {
		case got <- delivery{body, err}:
		default:
		}
	}))
	defer srv.Close()
	w := cfg.Webhooks["digest"]
	w.URL = srv.URL + "/digest"
	cfg.Webhooks["digest"] = w

	rt, err := agentrt.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := rt.Stop(context.Background()); err != nil {
			t.Errorf("Stop: %v", err)
		}
	}()
	ctx := context.Background()
	page, err := rt.ListSchedules(ctx, &apitype.ListSchedulesParams{})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Schedules) != 1 || page.Schedules[0].NextFireAt == nil {
		t.Fatalf("schedules = %+v, want nightly-digest with its next fire", page.Schedules)
	}
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	if next := page.Schedules[0].NextFireAt.In(berlin); next.Hour() != 7 || next.Minute() != 0 {
		t.Errorf("next fire at %s, want 07:00 in Berlin", next)
	}

	fire, err := rt.TriggerSchedule(ctx, &apitype.TriggerScheduleParams{ScheduleID: page.Schedules[0].ScheduleID})
	if err != nil {
		t.Fatal(err)
	}
	if fire.TurnID == "" {
		t.Fatalf("fire = %+v, want it started", fire)
	}
	turn, err := rt.WaitTurn(ctx, runtype.Owner{}, fire.TurnID)
	if err != nil {
		t.Fatal(err)
	}
	if turn.Status != runtype.StatusCompleted {
		t.Fatalf("the fire's turn is %s (%s), want completed", turn.Status, turn.StatusReason)
	}
	select {
	case d := <-got:
		if d.err != nil {
			t.Fatalf("the delivery's signature: %v", d.err)
		}
		var body struct {
			Type string `json:"type"`
			Data struct {
				ScheduleName string `json:"scheduleName"`
				Result       string `json:"result"`
			} `json:"data"`
		}
		if err := json.Unmarshal(d.body, &body); err != nil {
			t.Fatalf("delivery body %s: %v", d.body, err)
		}
		if body.Type != "schedule.fire.completed" || body.Data.ScheduleName != "nightly-digest" || !strings.Contains(body.Data.Result, "order 1042") {
			t.Errorf("delivery = %s, want the completed fire of nightly-digest with the digest", d.body)
		}
	case <-time.After(time.Minute):
		t.Fatal("no delivery within a minute")
	}
}
