package openaichat

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/respjson"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/runtype"
)

// builder accumulates a response from stream chunks (or from a whole
// response) and passes text and reasoning on to the caller's callback.
type builder struct {
	dialect   *Dialect
	stream    func(model.Delta)
	text      strings.Builder
	refusal   bool
	reasoning strings.Builder
	calls     []runtype.MessageToolCall
	callAt    map[int64]int // the index a tool call streams under → its place in calls
	finish    string
	usage     *openai.CompletionUsage
	model     string
}

func (b *builder) emit(kind model.DeltaKind, text string) {
	if text == "" {
		return
	}
	switch kind {
	case model.DeltaText:
		b.text.WriteString(text)
	case model.DeltaReasoning:
		b.reasoning.WriteString(text)
	}
	if b.stream != nil {
		b.stream(model.Delta{Kind: kind, Text: text})
	}
}

// chunk adds one streamed chunk.
func (b *builder) chunk(c *openai.ChatCompletionChunk) {
	b.model = cmp.Or(b.model, c.Model)
	// The usage of the whole response comes in a late chunk; servers that
	// report running totals on every chunk are counted once this way.
	if c.JSON.Usage.Valid() {
		b.usage = &c.Usage
	}
	for i := range c.Choices {
		ch := &c.Choices[i]
		if ch.Index != 0 {
			continue // n is never set, so there is one choice
		}
		d := &ch.Delta
		b.emit(model.DeltaReasoning, b.reasoningText(d.JSON.ExtraFields))
		b.emit(model.DeltaText, d.Content)
		if d.Refusal != "" {
			b.refusal = true
			b.emit(model.DeltaText, d.Refusal)
		}
		for j := range d.ToolCalls {
			b.toolCallDelta(&d.ToolCalls[j])
		}
		b.finish = cmp.Or(ch.FinishReason, b.finish)
	}
}

// toolCallDelta adds a piece of a streamed tool call: the id and name come
// in the call's first piece, the arguments in many.
func (b *builder) toolCallDelta(d *openai.ChatCompletionChunkChoiceDeltaToolCall) {
	if b.callAt == nil {
		b.callAt = make(map[int64]int)
	}
	at, ok := b.callAt[d.Index]
	if !ok {
		at = len(b.calls)
		b.callAt[d.Index] = at
		b.calls = append(b.calls, runtype.MessageToolCall{})
	}
	c := &b.calls[at]
	c.ID = cmp.Or(d.ID, c.ID)
	c.Name += d.Function.Name
	c.Arguments += d.Function.Arguments
}

// reasoningText returns the text of the first of the dialect's reasoning
// fields present in fields.
func (b *builder) reasoningText(fields map[string]respjson.Field) string {
	for _, name := range b.dialect.ReasoningFields {
		f, ok := fields[name]
		if !ok {
			continue
		}
		var s string
		if json.Unmarshal([]byte(f.Raw()), &s) == nil && s != "" {
			return s
		}
	}
	return ""
}

// response returns the accumulated response.
func (b *builder) response() *model.Response {
	r := &model.Response{Text: b.text.String(), ToolCalls: b.calls, Model: b.model}
	if b.reasoning.Len() > 0 {
		r.Reasoning = []runtype.Reasoning{{Provider: b.dialect.Kind, Text: b.reasoning.String()}}
	}
	r.FinishReason = finishReason(b.finish, len(b.calls) > 0)
	if b.refusal {
		r.FinishReason = model.FinishContentFilter
	}
	if u := b.usage; u != nil {
		r.Usage = runtype.Usage{
			InputTokens:       u.PromptTokens,
			CachedInputTokens: u.PromptTokensDetails.CachedTokens,
			OutputTokens:      u.CompletionTokens,
			ReasoningTokens:   u.CompletionTokensDetails.ReasoningTokens,
		}
	}
	return r
}

// finishReason normalizes a Chat Completions finish_reason.
func finishReason(reason string, toolCalls bool) model.FinishReason {
	switch reason {
	case "stop":
		return model.FinishStop
	case "tool_calls", "function_call":
		return model.FinishToolCalls
	case "length":
		return model.FinishLength
	case "content_filter":
		return model.FinishContentFilter
	}
	if toolCalls {
		return model.FinishToolCalls
	}
	return model.FinishStop
}

// readStream builds the response from the server-sent event stream of
// x.resp, which must end with the data: [DONE] event.
func (p *Provider) readStream(x *exchange, stream func(model.Delta)) (*model.Response, error) {
	b := &builder{dialect: &p.cfg.Dialect, stream: stream}
	dec := ssestream.NewDecoder(x.resp)
	for dec.Next() {
		ev := dec.Event()
		data := bytes.TrimSpace(ev.Data)
		if bytes.Equal(data, []byte("[DONE]")) {
			return b.response(), nil
		}
		if ev.Type == "error" {
			return nil, streamError(data)
		}
		var c openai.ChatCompletionChunk
		if err := json.Unmarshal(data, &c); err != nil {
			return nil, model.MalformedResponse("decoding stream event %q: %v", clip(data), err)
		}
		if f, ok := c.JSON.ExtraFields["error"]; ok && f.Raw() != "null" {
			return nil, streamError(data)
		}
		b.chunk(&c)
	}
	if err := dec.Err(); err != nil {
		return nil, err
	}
	return nil, &model.Error{Kind: model.ErrNetwork, Message: "the stream ended before the response was complete"}
}

// readJSON builds the response from the whole JSON body of x.resp.
func (p *Provider) readJSON(x *exchange, stream func(model.Delta)) (*model.Response, error) {
	body, err := io.ReadAll(x.resp.Body)
	if err != nil {
		return nil, err
	}
	var cc openai.ChatCompletion
	if err := json.Unmarshal(body, &cc); err != nil {
		return nil, model.MalformedResponse("decoding the response: %v", err)
	}
	i := slices.IndexFunc(cc.Choices, func(c openai.ChatCompletionChoice) bool { return c.Index == 0 })
	if i < 0 {
		return nil, model.MalformedResponse("the response has no choice")
	}
	b := &builder{dialect: &p.cfg.Dialect, stream: stream, model: cc.Model, finish: cc.Choices[i].FinishReason}
	if cc.JSON.Usage.Valid() {
		b.usage = &cc.Usage
	}
	m := &cc.Choices[i].Message
	b.emit(model.DeltaReasoning, b.reasoningText(m.JSON.ExtraFields))
	b.emit(model.DeltaText, m.Content)
	if m.Refusal != "" {
		b.refusal = true
		b.emit(model.DeltaText, m.Refusal)
	}
	for _, c := range m.ToolCalls {
		b.calls = append(b.calls, runtype.MessageToolCall{ID: c.ID, Name: c.Function.Name, Arguments: c.Function.Arguments})
	}
	return b.response(), nil
}

// streamError classifies an error the server sent inside the stream.
func streamError(data []byte) *model.Error {
	code, message := errorFields(data)
	e := model.StreamError(code, message)
	if message == "" {
		e.Message = fmt.Sprintf("the stream reported an error: %s", clip(data))
	}
	return e
}

// errorFields reads the code (or else type) and message of an error body:
// OpenAI's {"error":{"code":…,"type":…,"message":…}}, a bare
// {"error":"message"}, or the top-level fields vLLM uses.
func errorFields(body []byte) (code, message string) {
	type fields struct {
		Code    any    `json:"code"`
		Type    string `json:"type"`
		Message string `json:"message"`
	}
	var v struct {
		Error json.RawMessage `json:"error"`
		fields
	}
	if json.Unmarshal(body, &v) != nil {
		return "", ""
	}
	f := v.fields
	if len(v.Error) > 0 {
		f = fields{}
		if json.Unmarshal(v.Error, &f) != nil {
			_ = json.Unmarshal(v.Error, &f.Message)
		}
	}
	// Some servers put the HTTP status in code, as a number.
	c, _ := f.Code.(string)
	return cmp.Or(c, f.Type), f.Message
}

// clip shortens b for an error message.
func clip(b []byte) string {
	const n = 200
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}
