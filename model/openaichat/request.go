package openaichat

import (
	"encoding/json"
	"fmt"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/shared"

	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/runtype"
)

// params maps req to the SDK's request parameters.
func (p *Provider) params(req *model.Request) (openai.ChatCompletionNewParams, error) {
	params := openai.ChatCompletionNewParams{Model: p.cfg.Model}
	if req.Instructions != "" {
		params.Messages = append(params.Messages, openai.SystemMessage(req.Instructions))
	}
	for i := range req.Messages {
		m, err := message(&req.Messages[i])
		if err != nil {
			return params, fmt.Errorf("mapping message %d: %w", i, err)
		}
		params.Messages = append(params.Messages, m)
	}
	for _, t := range req.Tools {
		tool, err := toolParam(t)
		if err != nil {
			return params, err
		}
		params.Tools = append(params.Tools, tool)
	}
	if n := int64(req.MaxOutputTokens); n > 0 || p.cfg.MaxOutputTokens > 0 {
		if n <= 0 {
			n = int64(p.cfg.MaxOutputTokens)
		}
		if p.cfg.Dialect.MaxTokens {
			params.MaxTokens = param.NewOpt(n)
		} else {
			params.MaxCompletionTokens = param.NewOpt(n)
		}
	}
	if p.cfg.Temperature != nil {
		params.Temperature = param.NewOpt(*p.cfg.Temperature)
	}
	if p.cfg.ReasoningEffort != "" {
		params.ReasoningEffort = shared.ReasoningEffort(p.cfg.ReasoningEffort)
	}
	if !p.cfg.NoStream && !p.cfg.NoStreamUsage {
		params.StreamOptions.IncludeUsage = param.NewOpt(true)
	}
	return params, nil
}

// message maps one conversation message. Chat Completions has no field
// for a failed tool result, so a tool message's IsError is not sent: the
// content is expected to say what went wrong.
func message(m *runtype.Message) (openai.ChatCompletionMessageParamUnion, error) {
	switch m.Role {
	case runtype.RoleSystem:
		return openai.SystemMessage(m.Content), nil
	case runtype.RoleUser:
		return openai.UserMessage(m.Content), nil
	case runtype.RoleTool:
		return openai.ToolMessage(m.Content, m.ToolCallID), nil
	case runtype.RoleAssistant:
		a := &openai.ChatCompletionAssistantMessageParam{}
		// An assistant message needs content unless it has tool calls.
		if m.Content != "" || len(m.ToolCalls) == 0 {
			a.Content.OfString = param.NewOpt(m.Content)
		}
		for _, c := range m.ToolCalls {
			a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
				OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
					ID: c.ID,
					Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{
						Name:      c.Name,
						Arguments: c.Arguments,
					},
				},
			})
		}
		return openai.ChatCompletionMessageParamUnion{OfAssistant: a}, nil
	}
	return openai.ChatCompletionMessageParamUnion{}, fmt.Errorf("unknown role %q", m.Role)
}

// toolParam maps a tool definition. The schema's top-level members are
// kept as raw JSON, so the schema reaches the API as written below them.
func toolParam(t model.ToolDefinition) (openai.ChatCompletionToolUnionParam, error) {
	def := shared.FunctionDefinitionParam{Name: t.Name}
	if t.Description != "" {
		def.Description = param.NewOpt(t.Description)
	}
	if len(t.InputSchema) > 0 {
		var members map[string]json.RawMessage
		if err := json.Unmarshal(t.InputSchema, &members); err != nil {
			return openai.ChatCompletionToolUnionParam{}, fmt.Errorf("decoding the input schema of tool %q: %w", t.Name, err)
		}
		def.Parameters = make(shared.FunctionParameters, len(members))
		for k, v := range members {
			def.Parameters[k] = v
		}
	}
	return openai.ChatCompletionFunctionTool(def), nil
}
