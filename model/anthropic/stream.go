package anthropic

import (
	"strings"

	"github.com/anthropics/anthropic-sdk-go"

	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/runtype"
)

// accumulator builds a Response from a message stream's events. The SDK's
// Message.Accumulate is not used because it replaces tool input that does
// not parse with {}, and the coordinator needs it verbatim.
type accumulator struct {
	stream func(model.Delta) // nil when the caller wants no deltas

	model  string
	blocks map[int64]*block
	order  []int64 // block indexes in the order they started
	stop   anthropic.StopReason
	done   bool // message_stop arrived

	input, cacheRead, cacheCreation, output, thinking int64
}

// block is one content block as streamed so far.
type block struct {
	kind      string          // text, thinking, redacted_thinking, tool_use, …
	text      strings.Builder // text, or thinking text
	signature strings.Builder
	data      string // redacted_thinking
	id, name  string // tool_use
	input     string // tool_use input as content_block_start gave it
	args      strings.Builder
}

// add applies one event. It returns a *model.Error for an event that does
// not fit the stream so far. (The SDK turns `event: error` frames into
// stream errors itself.)
func (a *accumulator) add(ev anthropic.MessageStreamEventUnion) error {
	switch ev.Type {
	case "message_start":
		a.model = string(ev.Message.Model)
		u := ev.Message.Usage
		a.input, a.cacheRead, a.cacheCreation, a.output = u.InputTokens, u.CacheReadInputTokens, u.CacheCreationInputTokens, u.OutputTokens
	case "content_block_start":
		if _, dup := a.blocks[ev.Index]; dup {
			return model.MalformedResponse("content block %d started twice", ev.Index)
		}
		cb := ev.ContentBlock
		b := &block{kind: cb.Type, data: cb.Data, id: cb.ID, name: cb.Name, input: cb.JSON.Input.Raw()}
		b.signature.WriteString(cb.Signature)
		if a.blocks == nil {
			a.blocks = make(map[int64]*block)
		}
		a.blocks[ev.Index] = b
		a.order = append(a.order, ev.Index)
		switch cb.Type {
		case "text":
			a.text(b, model.DeltaText, cb.Text)
		case "thinking":
			a.text(b, model.DeltaReasoning, cb.Thinking)
		}
	case "content_block_delta":
		b, ok := a.blocks[ev.Index]
		if !ok {
			return model.MalformedResponse("content block %d has a delta but never started", ev.Index)
		}
		switch d := ev.Delta; d.Type {
		case "text_delta":
			a.text(b, model.DeltaText, d.Text)
		case "thinking_delta":
			a.text(b, model.DeltaReasoning, d.Thinking)
		case "signature_delta":
			b.signature.WriteString(d.Signature)
		case "input_json_delta":
			b.args.WriteString(d.PartialJSON)
		}
	case "message_delta":
		a.stop = ev.Delta.StopReason
		// The counts are totals for the whole message, not increments.
		u := ev.Usage
		a.output = u.OutputTokens
		if u.JSON.InputTokens.Valid() {
			a.input = u.InputTokens
		}
		if u.JSON.CacheReadInputTokens.Valid() {
			a.cacheRead = u.CacheReadInputTokens
		}
		if u.JSON.CacheCreationInputTokens.Valid() {
			a.cacheCreation = u.CacheCreationInputTokens
		}
		if u.JSON.OutputTokensDetails.Valid() {
			a.thinking = u.OutputTokensDetails.ThinkingTokens
		}
	case "message_stop":
		a.done = true
	}
	return nil
}

func (a *accumulator) text(b *block, kind model.DeltaKind, s string) {
	if s == "" {
		return
	}
	b.text.WriteString(s)
	if a.stream != nil {
		a.stream(model.Delta{Kind: kind, Text: s})
	}
}

// response returns the accumulated Response, without Raw.
func (a *accumulator) response() *model.Response {
	r := &model.Response{
		Model:        a.model,
		FinishReason: finishReason(a.stop),
		Usage: runtype.Usage{
			InputTokens:       a.input + a.cacheRead + a.cacheCreation,
			CachedInputTokens: a.cacheRead,
			OutputTokens:      a.output,
			ReasoningTokens:   a.thinking,
		},
	}
	var text strings.Builder
	for _, i := range a.order {
		b := a.blocks[i]
		switch b.kind {
		case "text":
			text.WriteString(b.text.String())
		case "thinking":
			r.Reasoning = append(r.Reasoning, runtype.Reasoning{Provider: Kind, Text: b.text.String(), Signature: b.signature.String()})
		case "redacted_thinking":
			r.Reasoning = append(r.Reasoning, runtype.Reasoning{Provider: Kind, Redacted: b.data})
		case "tool_use":
			args := b.args.String()
			if args == "" {
				// A call without parameters streams no input deltas.
				args = b.input
			}
			if args == "" {
				args = "{}"
			}
			r.ToolCalls = append(r.ToolCalls, runtype.MessageToolCall{ID: b.id, Name: b.name, Arguments: args})
		}
	}
	r.Text = text.String()
	return r
}

func finishReason(s anthropic.StopReason) model.FinishReason {
	switch s {
	case anthropic.StopReasonToolUse:
		return model.FinishToolCalls
	case anthropic.StopReasonMaxTokens, anthropic.StopReasonModelContextWindowExceeded:
		return model.FinishLength
	case anthropic.StopReasonRefusal:
		return model.FinishContentFilter
	}
	// end_turn, stop_sequence, pause_turn (a server tool paused a long
	// turn; the reply so far is complete) and reasons added after this
	// adapter.
	return model.FinishStop
}
