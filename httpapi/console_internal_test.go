package httpapi

import (
	"bytes"
	"strings"
	"testing"
)

// TestRenderCardHoldsNoCR: a card's HTML holds no carriage return, which
// ends a line in Server-Sent Events: a tool's output or a model's text
// with one could otherwise write the live stream's fields (its id, which
// the page resumes after, or an event of its own).
func TestRenderCardHoldsNoCR(t *testing.T) {
	t.Parallel()
	hostile := "done\rid: 999999999\r\revent: card\rdata: <b>x</b>\r\n"
	var w bytes.Buffer
	renderCard(&w, &consoleCard{
		Type: "tool.result", EventID: "evt_1\r", Kind: "tool", Title: "tool\rread_file", Badge: "ok\r",
		Fields: []consoleKV{{"output\r", hostile}}, TextLabel: "output", Text: hostile,
	})
	if got := w.String(); strings.ContainsAny(got, "\r") || !strings.Contains(got, "&#13;id: 999999999") {
		t.Errorf("the card's HTML:\n%q\nwant every CR as &#13;", got)
	}
}
