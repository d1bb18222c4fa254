package httpapi_test

import (
	"bytes"
	"fmt"
	"html/template"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/internal/browsertest"
)

// crossOriginPage is a front end on another origin: it asks the API for
// a stream ticket with its bearer token (a CORS request with a
// preflight), then follows a session's events with an EventSource that
// carries only the ticket, and writes what happened into #out.
var crossOriginPage = template.Must(template.New("page").Parse(`<!doctype html>
<title>another front end</title>
<pre id="out">running</pre>
<script>
const api = {{.API}}, token = {{.Token}}, session = {{.Session}};
const out = document.getElementById('out');
async function run() {
  let ticket;
  try {
    const r = await fetch(api + '/v1/stream-tickets', {method: 'POST', headers: {Authorization: 'Bearer ' + token}});
    ticket = (await r.json()).ticket;
  } catch (e) {
    out.textContent = 'ticket refused: ' + e.name;
    return;
  }
  const es = new EventSource(api + '/v1/events?sessionId=' + session + '&ticket=' + encodeURIComponent(ticket));
  const seen = [];
  for (const type of ['turn.started', 'turn.completed']) {
    es.addEventListener(type, () => {
      seen.push(type);
      if (type === 'turn.completed') { es.close(); out.textContent = 'events: ' + seen.join(' '); }
    });
  }
  es.onerror = () => { es.close(); out.textContent = 'stream failed after: ' + seen.join(' '); };
}
run();
</script>`))

// TestBrowserCrossOrigin: in headless Chromium, a page on an origin of
// server.cors_origins gets a stream ticket over CORS (the browser's
// preflight included) and follows a turn with EventSource and the
// ticket; the same page on an origin not in the list cannot.
func TestBrowserCrossOrigin(t *testing.T) {
	t.Parallel()
	var body []byte
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write(body)
	}))
	t.Cleanup(page.Close)
	other := httptest.NewServer(page.Config.Handler)
	t.Cleanup(other.Close)

	b := setup(t, setupOpts{corsOrigins: []string{page.URL}})
	ctx := browsertest.New(t) // after the servers: it closes before them
	res := b.submit(t, apitype.SubmitTurnRequest{Input: "hi"})
	b.wait(t, res.TurnID)
	var buf bytes.Buffer
	if err := crossOriginPage.Execute(&buf, map[string]string{"API": b.server.URL, "Token": testToken, "Session": res.SessionID}); err != nil {
		t.Fatal(err)
	}
	body = buf.Bytes()

	for _, tc := range []struct {
		name, url, want string
	}{
		{"Allowed", page.URL, "events: turn.started turn.completed"},
		{"NotAllowed", other.URL, "ticket refused: TypeError"},
	} {
		if err := chromedp.Do(ctx, chromedp.Navigate(tc.url)); err != nil {
			t.Fatal(err)
		}
		got, err := chromedp.Run(ctx, chromedp.Poll[string](
			`(() => { const t = document.getElementById('out').textContent; return t !== 'running' && t; })()`,
			chromedp.WithPollingTimeout(30*time.Second)))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got != tc.want {
			t.Errorf("%s: the page says %q, want %q", tc.name, got, tc.want)
		}
		browsertest.Screenshot(t, ctx, fmt.Sprintf("cross-origin-%s", tc.name))
	}
}
