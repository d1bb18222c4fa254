package openairesponses

import (
	"cmp"
	"encoding/json"
	"fmt"

	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"

	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/runtype"
)

// params maps a request to the Responses API's parameters. Requests are
// stateless (store=false): the whole conversation is sent every time, with
// reasoning carried as encrypted items.
func (p *Provider) params(req *model.Request) (responses.ResponseNewParams, error) {
	params := responses.ResponseNewParams{
		Model: p.cfg.Model,
		Store: param.NewOpt(false),
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: input(req.Messages)},
	}
	if req.Instructions != "" {
		params.Instructions = param.NewOpt(req.Instructions)
	}
	if req.SessionID != "" {
		// The API routes requests by a hash of the prompt's start and this
		// key: one key a session sends its hops to the machine that holds
		// its conversation in the prompt cache.
		params.PromptCacheKey = param.NewOpt(req.SessionID)
	}
	if n := cmp.Or(req.MaxOutputTokens, p.cfg.MaxOutputTokens); n > 0 {
		params.MaxOutputTokens = param.NewOpt(int64(n))
	}
	if p.cfg.Temperature != nil {
		params.Temperature = param.NewOpt(*p.cfg.Temperature)
	}
	if p.cfg.reasoning() {
		params.Reasoning = shared.ReasoningParam{
			Effort:  shared.ReasoningEffort(p.cfg.ReasoningEffort),
			Summary: shared.ReasoningSummary(p.cfg.ReasoningSummary),
		}
		// Without store, the encrypted content is the only way to hand
		// the model its earlier reasoning.
		params.Include = []responses.ResponseIncludable{responses.ResponseIncludableReasoningEncryptedContent}
	}
	for _, t := range req.Tools {
		schema := map[string]any{}
		if len(t.InputSchema) > 0 {
			if err := json.Unmarshal(t.InputSchema, &schema); err != nil {
				return params, &model.Error{
					Kind:    model.ErrInvalidRequest,
					Message: fmt.Sprintf("decoding the input schema of tool %q: %v", t.Name, err),
					Err:     err,
				}
			}
		} else {
			schema = map[string]any{"type": "object", "properties": map[string]any{}}
		}
		fn := &responses.FunctionToolParam{
			Name:       t.Name,
			Parameters: schema,
			// Strict mode would reject the optional properties and open
			// objects ordinary JSON Schemas use.
			Strict: param.NewOpt(false),
		}
		if t.Description != "" {
			fn.Description = param.NewOpt(t.Description)
		}
		params.Tools = append(params.Tools, responses.ToolUnionParam{OfFunction: fn})
	}
	return params, nil
}

// input maps the conversation to input items.
func input(msgs []runtype.Message) responses.ResponseInputParam {
	var items responses.ResponseInputParam
	for _, m := range msgs {
		switch m.Role {
		case runtype.RoleUser:
			items = append(items, inputMessage(responses.EasyInputMessageRoleUser, m.Content))
		case runtype.RoleSystem:
			// The agent's system prompt travels as instructions; system
			// messages in the conversation are runtime reminders, which
			// the API takes from the developer role.
			items = append(items, inputMessage(responses.EasyInputMessageRoleDeveloper, m.Content))
		case runtype.RoleAssistant:
			items = append(items, assistant(m)...)
		case runtype.RoleTool:
			// The API has no error flag for tool output; an error result
			// reaches the model as its text.
			items = append(items, responses.ResponseInputItemUnionParam{
				OfFunctionCallOutput: &responses.ResponseInputItemFunctionCallOutputParam{
					CallID: param.NewOpt(m.ToolCallID),
					Output: responses.ResponseInputItemFunctionCallOutputOutputUnionParam{OfString: param.NewOpt(m.Content)},
				},
			})
		}
	}
	return items
}

// inputMessage is a user or developer message with one text part.
func inputMessage(role responses.EasyInputMessageRole, text string) responses.ResponseInputItemUnionParam {
	return responses.ResponseInputItemUnionParam{OfMessage: &responses.EasyInputMessageParam{
		Type: responses.EasyInputMessageTypeMessage,
		Role: role,
		Content: responses.EasyInputMessageContentUnionParam{OfInputItemContentList: responses.ResponseInputMessageContentListParam{
			{OfInputText: &responses.ResponseInputTextParam{Text: text}},
		}},
	}}
}

// assistant maps an assistant message to its items in the order the API
// produced them: reasoning, text, then function calls.
func assistant(m runtype.Message) []responses.ResponseInputItemUnionParam {
	var items []responses.ResponseInputItemUnionParam
	for _, r := range m.Reasoning {
		// Only this API's own items can be sent back. Requests are not
		// stored (store: false), so an item is only worth sending with its
		// encrypted content: by id alone the API looks it up, finds
		// nothing and rejects the request.
		if r.Provider != Kind || r.ID == "" || r.Encrypted == "" {
			continue
		}
		// The API requires the summary list even when it is empty.
		summary := []responses.ResponseReasoningItemSummaryParam{}
		if r.Text != "" {
			summary = append(summary, responses.ResponseReasoningItemSummaryParam{Text: r.Text})
		}
		item := &responses.ResponseReasoningItemParam{ID: r.ID, Summary: summary, EncryptedContent: param.NewOpt(r.Encrypted)}
		items = append(items, responses.ResponseInputItemUnionParam{OfReasoning: item})
	}
	if m.Content != "" {
		items = append(items, responses.ResponseInputItemUnionParam{OfOutputMessage: &responses.ResponseOutputMessageParam{
			Content: []responses.ResponseOutputMessageContentUnionParam{
				{OfOutputText: &responses.ResponseOutputTextParam{Text: m.Content}},
			},
		}})
	}
	for _, c := range m.ToolCalls {
		items = append(items, responses.ResponseInputItemUnionParam{OfFunctionCall: &responses.ResponseFunctionToolCallParam{
			CallID:    c.ID,
			Name:      c.Name,
			Arguments: c.Arguments,
		}})
	}
	return items
}
