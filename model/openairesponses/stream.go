package openairesponses

import (
	"cmp"
	"maps"
	"slices"
	"strings"

	"github.com/openai/openai-go/v3/responses"

	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/runtype"
)

// summarySep separates reasoning summary parts, in Reasoning.Text and
// in the reasoning deltas alike.
const summarySep = "\n\n"

// accumulator builds a response from stream events. The terminal event's
// response is authoritative; the items gathered from the events before it
// stand in when it lists no output.
type accumulator struct {
	stream func(model.Delta)
	items  map[int64]*item // by output index
	model  string
	// final is the terminal event's response and status its event type
	// (response.completed, response.incomplete or response.failed).
	final  *responses.Response
	status string
	// lastSummary is the reasoning part that got the last reasoning
	// delta, so that a new part is streamed after a separator.
	lastSummary [2]int64
	reasoned    bool
}

// item is one output item: a message, a function call or a reasoning
// item (other kinds are kept but ignored).
type item struct {
	kind      string
	id        string
	callID    string
	name      string
	args      strings.Builder
	text      strings.Builder
	summary   []string // by summary index
	encrypted string
}

func newAccumulator(stream func(model.Delta)) *accumulator {
	return &accumulator{stream: stream, items: make(map[int64]*item)}
}

// item returns the item at an output index, creating it as kind.
func (a *accumulator) item(index int64, kind string) *item {
	it := a.items[index]
	if it == nil {
		it = &item{kind: kind}
		a.items[index] = it
	}
	return it
}

func (a *accumulator) emit(kind model.DeltaKind, text string) {
	if a.stream != nil && text != "" {
		a.stream(model.Delta{Kind: kind, Text: text})
	}
}

// add takes in one event. It reports whether the event was terminal, or
// returns the error an error event reports.
func (a *accumulator) add(ev responses.ResponseStreamEventUnion) (bool, error) {
	switch ev.Type {
	case "response.created", "response.in_progress":
		a.model = ev.Response.Model
	case "response.output_item.added":
		it := a.item(ev.OutputIndex, ev.Item.Type)
		it.kind, it.id = ev.Item.Type, cmp.Or(it.id, ev.Item.ID)
		it.callID, it.name = cmp.Or(it.callID, ev.Item.CallID), cmp.Or(it.name, ev.Item.Name)
	case "response.output_text.delta", "response.refusal.delta":
		// A refusal is the model's answer too: the caller sees it as text.
		a.item(ev.OutputIndex, "message").text.WriteString(ev.Delta)
		a.emit(model.DeltaText, ev.Delta)
	case "response.reasoning_summary_text.delta":
		it := a.item(ev.OutputIndex, "reasoning")
		for int64(len(it.summary)) <= ev.SummaryIndex {
			it.summary = append(it.summary, "")
		}
		it.summary[ev.SummaryIndex] += ev.Delta
		if ev.Delta != "" {
			part := [2]int64{ev.OutputIndex, ev.SummaryIndex}
			if a.reasoned && part != a.lastSummary {
				a.emit(model.DeltaReasoning, summarySep)
			}
			a.lastSummary, a.reasoned = part, true
			a.emit(model.DeltaReasoning, ev.Delta)
		}
	case "response.function_call_arguments.delta":
		it := a.item(ev.OutputIndex, "function_call")
		it.id = cmp.Or(it.id, ev.ItemID)
		it.args.WriteString(ev.Delta)
	case "response.function_call_arguments.done":
		it := a.item(ev.OutputIndex, "function_call")
		it.id = cmp.Or(it.id, ev.ItemID)
		it.args.Reset()
		it.args.WriteString(ev.Arguments)
	case "response.output_item.done":
		a.items[ev.OutputIndex] = fromOutput(ev.Item)
	case "response.completed", "response.incomplete", "response.failed":
		r := ev.Response
		a.final, a.status = &r, ev.Type
		return true, nil
	case "error":
		return true, model.StreamError(ev.Code, ev.Message)
	}
	return false, nil
}

// fromOutput converts a finished output item.
func fromOutput(o responses.ResponseOutputItemUnion) *item {
	it := &item{kind: o.Type, id: o.ID}
	switch o.Type {
	case "message":
		for _, c := range o.Content {
			it.text.WriteString(c.Text)
			it.text.WriteString(c.Refusal)
		}
	case "function_call":
		fc := o.AsFunctionCall()
		it.callID, it.name = fc.CallID, fc.Name
		it.args.WriteString(fc.Arguments)
	case "reasoning":
		for _, s := range o.Summary {
			it.summary = append(it.summary, s.Text)
		}
		it.encrypted = o.EncryptedContent
	}
	return it
}

// response returns the response the stream carried, or the error it
// ended with.
func (a *accumulator) response() (*model.Response, error) {
	if a.final == nil {
		return nil, &model.Error{Kind: model.ErrNetwork, Message: "the stream ended before the response was complete"}
	}
	f := a.final
	if a.status == "response.failed" {
		return nil, model.StreamError(cmp.Or(string(f.Error.Code), f.Error.Type), f.Error.Message)
	}
	items := make([]*item, 0, len(a.items))
	if len(f.Output) > 0 {
		for _, o := range f.Output {
			items = append(items, fromOutput(o))
		}
	} else {
		for _, i := range slices.Sorted(maps.Keys(a.items)) {
			items = append(items, a.items[i])
		}
	}

	res := &model.Response{
		Model: cmp.Or(f.Model, a.model),
		Usage: runtype.Usage{
			InputTokens:       f.Usage.InputTokens,
			CachedInputTokens: f.Usage.InputTokensDetails.CachedTokens,
			OutputTokens:      f.Usage.OutputTokens,
			ReasoningTokens:   f.Usage.OutputTokensDetails.ReasoningTokens,
		},
	}
	var text strings.Builder
	for _, it := range items {
		switch it.kind {
		case "message":
			text.WriteString(it.text.String())
		case "function_call":
			res.ToolCalls = append(res.ToolCalls, runtype.MessageToolCall{ID: it.callID, Name: it.name, Arguments: it.args.String()})
		case "reasoning":
			res.Reasoning = append(res.Reasoning, runtype.Reasoning{
				Provider:  Kind,
				ID:        it.id,
				Text:      strings.Join(slices.DeleteFunc(slices.Clone(it.summary), func(s string) bool { return s == "" }), summarySep),
				Encrypted: it.encrypted,
			})
		}
	}
	res.Text = text.String()

	switch {
	case a.status == "response.incomplete":
		switch f.IncompleteDetails.Reason {
		case "max_output_tokens":
			res.FinishReason = model.FinishLength
		case "content_filter":
			res.FinishReason = model.FinishContentFilter
		default:
			res.FinishReason = model.FinishError
		}
	case len(res.ToolCalls) > 0:
		res.FinishReason = model.FinishToolCalls
	default:
		res.FinishReason = model.FinishStop
	}
	return res, nil
}
