package anthropic

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/packages/param"

	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/runtype"
)

// reminderPrefix marks a runtime reminder sent as user text, so the model
// can tell it from what the user wrote.
const reminderPrefix = "[runtime] "

// params maps req to the SDK's request parameters.
func (p *Provider) params(req *model.Request) (anthropic.MessageNewParams, error) {
	maxTokens := p.cfg.MaxOutputTokens
	if req.MaxOutputTokens > 0 {
		maxTokens = req.MaxOutputTokens
	}
	params := anthropic.MessageNewParams{
		Model:     anthropic.Model(p.cfg.Model),
		MaxTokens: int64(maxTokens),
		System:    system(req),
		Messages:  messages(req.Messages),
	}
	switch {
	case p.cfg.ThinkingBudget > 0:
		if p.cfg.ThinkingBudget >= maxTokens {
			return params, &model.Error{Kind: model.ErrInvalidRequest, Message: fmt.Sprintf(
				"max output tokens %d must exceed the thinking budget %d", maxTokens, p.cfg.ThinkingBudget)}
		}
		params.Thinking = anthropic.ThinkingConfigParamOfEnabled(int64(p.cfg.ThinkingBudget))
	case p.cfg.Temperature != nil:
		params.Temperature = anthropic.Float(*p.cfg.Temperature)
	}
	for _, t := range req.Tools {
		schema := t.InputSchema
		if len(bytes.TrimSpace(schema)) == 0 {
			schema = json.RawMessage(`{"type":"object"}`)
		}
		if !json.Valid(schema) {
			return params, &model.Error{Kind: model.ErrInvalidRequest, Message: fmt.Sprintf(
				"tool %q: the input schema is not valid JSON", t.Name)}
		}
		tool := anthropic.ToolParam{
			Name: t.Name,
			// Override sends the schema as given: the SDK's schema type
			// would keep only properties and required.
			InputSchema: param.Override[anthropic.ToolInputSchemaParam](schema),
		}
		if t.Description != "" {
			tool.Description = anthropic.String(t.Description)
		}
		params.Tools = append(params.Tools, anthropic.ToolUnionParam{OfTool: &tool})
	}
	markCache(&params, req.Messages)
	return params, nil
}

// markCache sets the prompt cache breakpoints (cache_control ephemeral; the
// API allows four): the last tool definition, the last system block, the
// boundary message that opens a compacted conversation, and the last
// message, so each hop reads the conversation so far from the cache and
// writes it for the next. The API renders tools, then system, then
// messages, and caches the prefix up to each breakpoint; a prefix shorter
// than the model's minimum is simply not cached.
func markCache(params *anthropic.MessageNewParams, msgs []runtype.Message) {
	ephemeral := anthropic.NewCacheControlEphemeralParam()
	if n := len(params.Tools); n > 0 {
		params.Tools[n-1].OfTool.CacheControl = ephemeral
	}
	if n := len(params.System); n > 0 {
		params.System[n-1].CacheControl = ephemeral
	}
	// A boundary (a compaction summary or a reset handoff) opens the
	// conversation and stays put until the next compaction.
	switch {
	case len(msgs) == 0 || msgs[0].Boundary == nil || msgs[0].Content == "":
	case msgs[0].Role == runtype.RoleSystem:
		// It joined the system prompt as its last block, marked above; the
		// instructions before it get their own breakpoint, so they stay
		// cached when the next compaction replaces it.
		if n := len(params.System); n > 1 {
			params.System[n-2].CacheControl = ephemeral
		}
	case len(params.Messages) > 0:
		for _, b := range params.Messages[0].Content {
			if b.OfText != nil && b.OfText.Text == msgs[0].Content {
				b.OfText.CacheControl = ephemeral
				break
			}
		}
	}
	if n := len(params.Messages); n > 0 {
		markLast(params.Messages[n-1].Content, ephemeral)
	}
}

// markLast sets cc on the last block of a turn that can carry it: thinking
// blocks cannot, so a turn of thinking only is left unmarked.
func markLast(blocks []anthropic.ContentBlockParamUnion, cc anthropic.CacheControlEphemeralParam) {
	for i := len(blocks) - 1; i >= 0; i-- {
		if blocks[i].OfThinking != nil || blocks[i].OfRedactedThinking != nil {
			continue
		}
		if p := blocks[i].GetCacheControl(); p != nil {
			*p = cc
			return
		}
	}
}

// system returns the system prompt: the instructions, then a RoleSystem
// message that opens the conversation.
func system(req *model.Request) []anthropic.TextBlockParam {
	var blocks []anthropic.TextBlockParam
	if req.Instructions != "" {
		blocks = append(blocks, anthropic.TextBlockParam{Text: req.Instructions})
	}
	if len(req.Messages) > 0 && req.Messages[0].Role == runtype.RoleSystem && req.Messages[0].Content != "" {
		blocks = append(blocks, anthropic.TextBlockParam{Text: req.Messages[0].Content})
	}
	return blocks
}

// conversation folds messages into alternating user and assistant turns.
type conversation struct {
	out []anthropic.MessageParam
	// results and user are the user turn being built; the API wants its
	// tool_result blocks before anything else.
	results, user []anthropic.ContentBlockParamUnion
}

func messages(msgs []runtype.Message) []anthropic.MessageParam {
	var c conversation
	for i := range msgs {
		m := &msgs[i]
		switch m.Role {
		case runtype.RoleUser:
			c.userText(m.Content)
		case runtype.RoleSystem:
			if i > 0 && m.Content != "" { // the first is part of the system prompt
				c.userText(reminderPrefix + m.Content)
			}
		case runtype.RoleTool:
			c.results = append(c.results, toolResult(m))
		case runtype.RoleAssistant:
			c.assistant(assistantBlocks(m))
		}
	}
	c.flushUser()
	return c.out
}

func (c *conversation) userText(text string) {
	if text != "" {
		c.user = append(c.user, anthropic.NewTextBlock(text))
	}
}

func (c *conversation) flushUser() {
	if len(c.results)+len(c.user) == 0 {
		return
	}
	c.out = append(c.out, anthropic.NewUserMessage(append(c.results, c.user...)...))
	c.results, c.user = nil, nil
}

func (c *conversation) assistant(blocks []anthropic.ContentBlockParamUnion) {
	if len(blocks) == 0 {
		return
	}
	c.flushUser()
	if n := len(c.out); n > 0 && c.out[n-1].Role == anthropic.MessageParamRoleAssistant {
		c.out[n-1].Content = append(c.out[n-1].Content, blocks...)
		return
	}
	c.out = append(c.out, anthropic.NewAssistantMessage(blocks...))
}

func toolResult(m *runtype.Message) anthropic.ContentBlockParamUnion {
	b := anthropic.ToolResultBlockParam{ToolUseID: m.ToolCallID}
	if m.Content != "" {
		b.Content = []anthropic.ToolResultBlockParamContentUnion{{OfText: &anthropic.TextBlockParam{Text: m.Content}}}
	}
	if m.IsError {
		b.IsError = anthropic.Bool(true)
	}
	return anthropic.ContentBlockParamUnion{OfToolResult: &b}
}

func assistantBlocks(m *runtype.Message) []anthropic.ContentBlockParamUnion {
	var blocks []anthropic.ContentBlockParamUnion
	for _, r := range m.Reasoning {
		switch {
		case r.Provider != Kind:
			// Another provider's reasoning means nothing to this API.
		case r.Redacted != "":
			blocks = append(blocks, anthropic.NewRedactedThinkingBlock(r.Redacted))
		case r.Signature != "":
			// The API rejects thinking without its signature, so an
			// unsigned block is left out.
			blocks = append(blocks, anthropic.NewThinkingBlock(r.Signature, r.Text))
		}
	}
	if m.Content != "" {
		blocks = append(blocks, anthropic.NewTextBlock(m.Content))
	}
	for _, tc := range m.ToolCalls {
		blocks = append(blocks, anthropic.NewToolUseBlock(tc.ID, toolInput(tc.Arguments), tc.Name))
	}
	return blocks
}

// toolInput returns a call's arguments as the JSON object the API wants,
// or {} when they are not one.
func toolInput(args string) json.RawMessage {
	var obj map[string]json.RawMessage
	if json.Unmarshal([]byte(args), &obj) != nil || obj == nil {
		return json.RawMessage(`{}`)
	}
	return json.RawMessage(args)
}
