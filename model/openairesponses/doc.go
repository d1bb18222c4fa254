// Package openairesponses implements the openai_responses model provider:
// an adapter for the OpenAI Responses API (POST /responses), built on the
// official openai-go SDK.
//
// # Requests
//
// Every request is stateless (store=false) and streamed. The agent's
// instructions go in instructions; the conversation is sent whole as input
// items: user messages as user messages, runtime reminders (system
// messages) as developer messages, assistant text as assistant output_text
// messages, tool calls as function_call items (call_id is the tool call's
// ID, arguments verbatim) and tool results as function_call_output items.
// Reasoning blocks an earlier response of this provider produced go back,
// before their message's text and calls, as reasoning items with their id,
// summary and encrypted content. Tools are function tools with strict
// schemas off. When Config asks for reasoning (ReasoningEffort or
// ReasoningSummary), the request sets reasoning and includes
// reasoning.encrypted_content so that the model's reasoning can be handed
// back in later requests.
//
// The API caches prompt prefixes by itself. Each request of a session
// starts with the one before it (instructions, tools, then the input so
// far, nothing of it varying between hops), and prompt_cache_key is the
// session id, so a session's requests reach the machine that holds its
// prefix. Cache hits come back as usage.input_tokens_details.cached_tokens,
// which is CachedInputTokens.
//
// # Responses
//
// Output text deltas (and refusal deltas) stream as model.DeltaText and
// reasoning summary deltas as model.DeltaReasoning, with summary parts
// separated by a blank line. The terminal event's response gives the text,
// the function calls, the reasoning items and the usage; when it lists no
// output, the items gathered from the output_item.done and argument
// events are used. The finish reason is tool_calls when the model called
// a function, stop otherwise, and length or content_filter for an
// incomplete response (error for an unknown incomplete reason). A failed
// response and an error event are returned as classified *model.Error
// values, a stream that ends before its terminal event as a network error
// and an event that is not JSON as a malformed response.
//
// # Limits
//
// The API has no error flag for tool output, so an error result reaches
// the model only through its text. Reasoning blocks of other providers are
// not sent, and neither are hosted tools, images or files. The API key and
// base URL come from Config only: the SDK's environment variables
// (OPENAI_API_KEY, OPENAI_BASE_URL, …) are ignored.
package openairesponses
