package replay_test

import (
	"os"
	"regexp"
	"testing"
	"testing/synctest"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/model/replay"
)

// TestFormatDocExamples keeps docs/replay-format.md honest: every YAML
// example in it is a valid script, and the complete example plays as the
// page says.
func TestFormatDocExamples(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../../docs/replay-format.md")
	if err != nil {
		t.Fatalf("reading the format doc: %v", err)
	}
	blocks := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllSubmatch(doc, -1)
	if len(blocks) < 3 {
		t.Fatalf("found %d YAML examples in the format doc, want at least 3", len(blocks))
	}
	var last *replay.Script
	for i, b := range blocks {
		s, err := replay.Parse("support.replay.yaml", b[1])
		if err != nil {
			t.Errorf("example %d does not parse:\n%v", i+1, err)
			continue
		}
		last = s
	}
	if last == nil {
		return
	}

	// The example has a delay; a synctest bubble plays it without waiting.
	synctest.Test(t, func(t *testing.T) { playCompleteExample(t, last) })
}

func playCompleteExample(t *testing.T, s *replay.Script) {
	p := replay.New(s)
	var kinds []model.ErrorKind
	var finishes []model.FinishReason
	var lastErr error
	for range 5 {
		resp, err := p.Generate(t.Context(), &model.Request{SessionID: "ses_doc"})
		if err != nil {
			kinds = append(kinds, model.AsError(err).Kind)
			lastErr = err
			continue
		}
		finishes = append(finishes, resp.FinishReason)
	}
	wantKinds := []model.ErrorKind{model.ErrRateLimit, model.ErrScriptExhausted}
	wantFinishes := []model.FinishReason{model.FinishToolCalls, model.FinishToolCalls, model.FinishToolCalls}
	if diff := cmp.Diff(wantKinds, kinds); diff != "" {
		t.Errorf("complete example: error kinds mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantFinishes, finishes); diff != "" {
		t.Errorf("complete example: finish reasons mismatch (-want +got):\n%s", diff)
	}
	want := `model script_exhausted: replay script "support.replay.yaml" has no response 5 for this session (it holds 4)`
	if lastErr == nil || lastErr.Error() != want {
		t.Errorf("complete example: fifth call error = %v, want %s", lastErr, want)
	}
	if got := p.Info(); got.Model != "support-bot-v1" {
		t.Errorf("complete example: model = %q, want support-bot-v1", got.Model)
	}
}
