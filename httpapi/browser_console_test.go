package httpapi_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/evidence"
	"github.com/agentrt/agentrt/internal/browsertest"
	"github.com/agentrt/agentrt/runtype"
)

// The browser tests of the console wait for the page, never for time:
// each step polls the DOM (chromedp.Poll) until what it expects is
// there, within pollTimeout.
const pollTimeout = 30 * time.Second

// waitFor polls a JavaScript expression until it is truthy and returns
// its value.
func waitFor[T any](t *testing.T, ctx context.Context, what, expr string) T {
	t.Helper()
	var v T
	var err error
	for deadline := time.Now().Add(pollTimeout); ; {
		v, err = chromedp.Run(ctx, chromedp.Poll[T](expr, chromedp.WithPollingTimeout(time.Until(deadline))))
		// A poll does not survive a navigation: poll the new page.
		if err == nil || time.Now().After(deadline) || !navigated(err) {
			break
		}
	}
	if err != nil {
		html, _ := chromedp.Run(ctx, chromedp.OuterHTML("main"))
		t.Fatalf("waiting for %s: %v\nthe page's main:\n%s", what, err, html)
	}
	return v
}

// navigated reports whether err is a poll's page going away.
func navigated(err error) bool {
	for _, s := range []string{"Cannot find context", "Execution context was destroyed", "navigated or closed"} {
		if strings.Contains(err.Error(), s) {
			return true
		}
	}
	return false
}

// checkLabelled fails t if a control of the page has no label a screen
// reader would read: a <label>, aria-label or aria-labelledby, or a
// button's text.
func checkLabelled(t *testing.T, ctx context.Context, page string) {
	t.Helper()
	bare := waitFor[[]string](t, ctx, "the page's controls", `[...document.querySelectorAll('input:not([type=hidden]), select, textarea, button')]
		.filter(e => !(e.labels && e.labels.length) && !e.getAttribute('aria-label') && !e.getAttribute('aria-labelledby') && !(e.tagName === 'BUTTON' && e.textContent.trim()))
		.map(e => e.outerHTML.slice(0, 120)).concat([''])`)
	if len(bare) > 1 {
		t.Errorf("the %s page has controls without a label: %q", page, bare[:len(bare)-1])
	}
}

// setValue sets the value of the control sel selects as typing would,
// with its input event.
func setValue(sel, v string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		_, err := chromedp.Run(ctx, chromedp.Evaluate[bool](fmt.Sprintf(`(() => {
			const e = document.querySelector(%q);
			e.value = %q;
			e.dispatchEvent(new Event('input', {bubbles: true}));
			return true;
		})()`, sel, v)))
		return err
	})
}

// do runs browser steps and fails t on an error.
func do(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// signInBrowser signs in on /ui/login with token.
func signInBrowser(t *testing.T, ctx context.Context, base, token string) {
	t.Helper()
	do(t, ctx, "signing in",
		chromedp.Navigate(base+"/ui/login"),
		chromedp.WaitVisible("#token"),
		chromedp.SendKeys("#token", token),
		chromedp.Submit("#token"),
	)
	waitFor[bool](t, ctx, "the overview after signing in", `document.querySelector('main#main[data-page=overview]') !== null`)
}

// askTwiceScript asks to read a file in each of two turns.
const askTwiceScript = `responses:
  - {tool_calls: [{name: read_file, input: {path: x.md}}]}
  - {text: "done"}
  - {tool_calls: [{name: read_file, input: {path: z.md}}]}
  - {text: "done again"}
`

// TestBrowserConsole drives the console in headless Chromium as an
// operator would: sign in; a governed turn parks and its approval
// appears in the open queue without a reload; an edit that breaks the
// tool's schema is refused with the reason in the form; the fixed edit
// is approved; the request's open timeline shows the completion live;
// the evidence bundle downloads and verifies. Screenshots of each page
// go to browsertest.ScreenshotDir.
func TestBrowserConsole(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{script: askTwiceScript, policy: askKernel(t), builtins: []string{"read_file"}})
	ctx := browsertest.New(t) // after setup: it closes before the server
	base := b.server.URL

	signInBrowser(t, ctx, base, testToken)
	browsertest.Screenshot(t, ctx, "console-overview")

	// The queue is open, and empty, when the turn parks.
	do(t, ctx, "opening the approvals", chromedp.Navigate(base+"/ui/approvals"), chromedp.WaitVisible("#approvals"))
	res := b.submit(t, apitype.SubmitTurnRequest{Input: "go"})
	actionID := waitFor[string](t, ctx, "the approval to appear live",
		`(() => { const a = document.querySelector('article.action[data-tool=read_file]'); return a && a.dataset.actionId; })()`)
	browsertest.Screenshot(t, ctx, "console-approvals")
	checkLabelled(t, ctx, "approvals")
	// The approve button is reachable with the keyboard alone.
	for i := 0; ; i++ {
		if i == 60 {
			t.Fatal("60 presses of Tab did not reach the approve button")
		}
		do(t, ctx, "pressing Tab", chromedp.KeyEvent("\t"))
		if waitFor[string](t, ctx, "the focus", `(document.activeElement && document.activeElement.id) || "-"`) == "approve-"+actionID {
			break
		}
	}

	// An edit that breaks the schema: the path is required. The form
	// refuses it with the reason, in the browser (the control's
	// validation message) or from the server (#edit-error-ID).
	field := "#edit-" + actionID + "-path"
	do(t, ctx, "editing with a schema error",
		chromedp.Click(fmt.Sprintf(`article.action[data-action-id=%q] details.edit > summary`, actionID)),
		chromedp.WaitVisible(field),
		setValue(field, ""),
		chromedp.Click("#edit-submit-"+actionID),
	)
	reason := waitFor[string](t, ctx, "the edit's refusal", fmt.Sprintf(`(() => {
		const p = document.getElementById('edit-error-%[1]s');
		if (p && p.textContent.trim()) return 'server: ' + p.textContent.trim();
		const bad = document.querySelector('#edit-%[1]s :invalid');
		return bad && bad.validationMessage && 'browser: ' + bad.name + ': ' + bad.validationMessage;
	})()`, actionID))
	if !strings.Contains(reason, "path") {
		t.Errorf("the refusal %q does not name the property", reason)
	}
	if a, err := b.rt.ListActions(t.Context(), &apitype.ListActionsParams{Status: runtype.ActionPending}); err != nil || len(a) != 1 {
		t.Fatalf("after the refused edit: %d pending actions (%v), want the one", len(a), err)
	}
	browsertest.Screenshot(t, ctx, "console-approvals-edit-refused")

	// The fixed edit.
	do(t, ctx, "editing right",
		setValue(field, "y.md"),
		chromedp.Click("#edit-submit-"+actionID),
	)
	waitFor[bool](t, ctx, "the action to leave the queue", fmt.Sprintf(`document.querySelector('article.action[data-action-id=%q]') === null`, actionID))
	turn := b.wait(t, res.TurnID)
	if turn.Status != runtype.StatusCompleted {
		t.Fatalf("the turn after the edit: %s", turn.Status)
	}
	act, err := b.rt.GetAction(t.Context(), runtype.Owner{}, actionID)
	if err != nil || act.Status != runtype.ActionApproved || act.Decision != "edit" {
		t.Errorf("the action after the edit: %+v, %v", act, err)
	}

	// A second turn parks; its timeline, open while it is answered,
	// shows the completion live.
	res2 := b.submit(t, apitype.SubmitTurnRequest{Input: "again", SessionID: res.SessionID})
	if turn := b.wait(t, res2.TurnID); turn.Status != runtype.StatusWaitingPermission {
		t.Fatalf("the second turn: %s", turn.Status)
	}
	do(t, ctx, "opening the timeline", chromedp.Navigate(base+"/ui/requests/"+res2.TurnID), chromedp.WaitVisible("#timeline"))
	pending, err := b.rt.ListActions(t.Context(), &apitype.ListActionsParams{Status: runtype.ActionPending})
	if err != nil || len(pending) != 1 {
		t.Fatalf("pending: %v %v", pending, err)
	}
	// Where the page's first cards are before the turn goes on: live
	// cards are added below them, and nothing above moves.
	const tops = `[...document.querySelectorAll('#request, #timeline li.card')].slice(0, 6).map(e => Math.round(e.getBoundingClientRect().top + window.scrollY)).join(' ') || 'none'`
	before := waitFor[string](t, ctx, "the cards' places", tops)
	if _, err := b.rt.RespondAction(t.Context(), &apitype.RespondActionParams{ActionID: pending[0].ActionID, Decision: "approve", Owner: runtype.Owner{PrincipalID: "operator"}, Role: runtype.APIRoleAdmin}); err != nil {
		t.Fatal(err)
	}
	waitFor[bool](t, ctx, "the completion on the open timeline", `document.querySelector('#timeline li.card[data-type="turn.completed"]') !== null`)
	if after := waitFor[string](t, ctx, "the cards' places", tops); after != before {
		t.Errorf("the cards moved while the timeline streamed: tops %s, then %s", before, after)
	}
	// The summary above took the request's new status.
	if st := waitFor[string](t, ctx, "the summary's status", `document.querySelector('#request').dataset.status + ' ' + document.querySelector('#request-status .badge').textContent`); st != "completed completed" {
		t.Errorf("the summary says %q after the completion, want completed", st)
	}
	browsertest.Screenshot(t, ctx, "console-request")

	// The evidence bundle, downloaded by the browser, verifies.
	dir := t.TempDir()
	if _, err := chromedp.CallBrowser(ctx, browser.SetDownloadBehavior, browser.SetDownloadBehaviorParams{
		Behavior: browser.SetDownloadBehaviorBehaviorAllow, DownloadPath: dir,
	}); err != nil {
		t.Fatal(err)
	}
	do(t, ctx, "downloading the evidence", chromedp.Click("#evidence"))
	var bundle []byte
	for deadline := time.Now().Add(pollTimeout); ; {
		files, _ := filepath.Glob(filepath.Join(dir, "*.tar.gz"))
		if len(files) == 1 {
			if bundle, err = os.ReadFile(files[0]); err == nil && len(bundle) > 0 && evidence.Verify(bytes.NewReader(bundle), nil).OK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no verified evidence bundle in %s: %v", dir, files)
		}
		if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`new Promise(r => setTimeout(() => r(true), 100))`)); err != nil {
			t.Fatal(err)
		}
	}

	// The other pages render.
	for _, p := range []struct{ path, page string }{
		{"/ui/requests", "requests"}, {"/ui/sessions", "sessions"}, {"/ui/sessions/" + res.SessionID, "session"},
	} {
		do(t, ctx, "opening "+p.path, chromedp.Navigate(base+p.path))
		waitFor[bool](t, ctx, p.page, fmt.Sprintf(`document.querySelector('main#main[data-page=%s]') !== null`, p.page))
		checkLabelled(t, ctx, p.page)
		browsertest.Screenshot(t, ctx, "console-"+p.page)
	}
	// At a phone's width.
	do(t, ctx, "a phone's width", chromedp.EmulateViewport(390, 844), chromedp.Navigate(base+"/ui/requests/"+res.TurnID), chromedp.WaitVisible("#timeline"))
	if wide := waitFor[float64](t, ctx, "the page's width", `document.documentElement.scrollWidth || 1`); wide > 390 {
		t.Errorf("at 390 px the page is %v px wide: it scrolls sideways", wide)
	}
	browsertest.Screenshot(t, ctx, "console-request-phone")
}

// TestBrowserConsoleViewer: a viewer's approvals page in Chromium has no
// button to act, and the page's own form, forged with the viewer's
// cookie and CSRF token, is refused; a form posted without the CSRF
// token is refused too.
func TestBrowserConsoleViewer(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{script: askScript, policy: askKernel(t), builtins: []string{"read_file"}})
	ctx := browsertest.New(t) // after setup: it closes before the server
	res := b.submit(t, apitype.SubmitTurnRequest{Input: "go"})
	if turn := b.wait(t, res.TurnID); turn.Status != runtype.StatusWaitingPermission {
		t.Fatalf("turn %s", turn.Status)
	}
	pending, err := b.rt.ListActions(t.Context(), &apitype.ListActionsParams{Status: runtype.ActionPending})
	if err != nil || len(pending) != 1 {
		t.Fatalf("pending: %v %v", pending, err)
	}
	id := pending[0].ActionID
	viewer := b.as(t, apitype.DefaultTenant, "val", runtype.APIRoleViewer)

	signInBrowser(t, ctx, b.server.URL, viewer.bearer())
	waitFor[bool](t, ctx, "the waiting request on the overview", `document.querySelector('#attention tr[data-turn-id]') !== null`)
	checkLabelled(t, ctx, "overview")
	browsertest.Screenshot(t, ctx, "console-overview-waiting")
	do(t, ctx, "opening the approvals", chromedp.Navigate(b.server.URL+"/ui/approvals"))
	waitFor[bool](t, ctx, "the action", fmt.Sprintf(`document.querySelector('article.action[data-action-id=%q]') !== null`, id))
	buttons := waitFor[float64](t, ctx, "the buttons", `document.querySelectorAll('#main button[id^=approve-], #main button[id^=deny-], #main button[id^=edit-submit-]').length + 1`)
	if buttons != 1 {
		t.Errorf("a viewer's approvals page has %v buttons to act", buttons-1)
	}
	browsertest.Screenshot(t, ctx, "console-approvals-viewer")

	// A forged POST from the page, with the viewer's cookie and CSRF
	// token, and one without the token.
	post := func(withCSRF bool) int {
		js := fmt.Sprintf(`(async () => {
			const csrf = document.querySelector('form#logout input[name=csrf]').value;
			const body = new URLSearchParams({decision: 'approve'});
			if (%t) body.set('csrf', csrf);
			const r = await fetch('/ui/approvals/%s', {method: 'POST', body});
			return r.status;
		})()`, withCSRF, id)
		st, err := chromedp.Run(ctx, chromedp.Evaluate[float64](js, chromedp.EvalAwaitPromise))
		if err != nil {
			t.Fatal(err)
		}
		return int(st)
	}
	if st := post(true); st != http.StatusForbidden {
		t.Errorf("a viewer's forged approval: %d, want 403", st)
	}
	if st := post(false); st != http.StatusForbidden {
		t.Errorf("an approval without the CSRF token: %d, want 403", st)
	}
	if a, err := b.rt.GetAction(t.Context(), runtype.Owner{}, id); err != nil || a.Status != runtype.ActionPending {
		t.Errorf("the action after the forged posts: %+v, %v", a, err)
	}
}
