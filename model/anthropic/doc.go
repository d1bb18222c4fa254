// Package anthropic implements the model provider for Anthropic's Messages
// API (kind "anthropic_messages"), built on the official Go SDK. It always
// streams: the Response is accumulated from the server-sent events, and
// text and thinking reach model.Request.Stream as they arrive.
//
// # Requests
//
// Instructions become the system prompt; a RoleSystem message that opens
// the conversation joins it. The API wants user and assistant turns to
// alternate, so the conversation is folded into that shape:
//
//   - A user message is a user turn with one text block.
//   - Tool results become tool_result blocks (tool_use_id, the result as
//     text, is_error when set). Consecutive results and the user text or
//     reminders that follow them share one user turn, results first.
//   - A later RoleSystem message is a runtime reminder. The API has no
//     system role mid-conversation, so it is sent as user text prefixed
//     with "[runtime] ", merged into the neighbouring user turn.
//   - An assistant message is, in order: the reasoning blocks this provider
//     produced (thinking with its signature, or redacted_thinking), which
//     the API wants back unchanged when thinking is on; the text, unless
//     empty; and one tool_use block a call. Arguments that are not a JSON
//     object are sent as {}: the API accepts only objects, and the call's
//     tool result has already told the model its arguments were invalid.
//     Consecutive assistant messages share one assistant turn.
//
// Empty text is left out (the API rejects empty text blocks), and so is a
// message with nothing left to send. Tools are sent with their input
// schema verbatim.
//
// # Prompt caching
//
// Every request marks prompt cache breakpoints (cache_control ephemeral,
// at most the API's four): the last tool definition, the last system
// block, the boundary message that opens a compacted conversation (its
// summary or a reset's handoff; when it joined the system prompt, the
// instructions block before it too), and the last cacheable block of
// the last turn (not a thinking block), a rolling breakpoint that caches
// the conversation so far for the next hop. Nothing else in a request
// changes between two hops of a session, so each request starts with the
// one before it and reads that prefix from the cache.
//
// Config.ThinkingBudget turns on extended thinking with that budget; the
// API then forbids a temperature, so Config.Temperature must stay unset.
//
// # Responses
//
// Text joins the text blocks; tool_use blocks become ToolCalls with their
// streamed input kept verbatim, even when it is not valid JSON (a stream
// cut by max_tokens ends mid-object). Thinking and redacted_thinking
// blocks become Response.Reasoning. InputTokens adds up input_tokens and
// both cache counters; CachedInputTokens is cache_read_input_tokens (cache
// writes count as ordinary input);
// ReasoningTokens is thinking_tokens when reported. Stop reasons map as
// end_turn, stop_sequence and pause_turn → stop; tool_use → tool_calls;
// max_tokens and model_context_window_exceeded → length; refusal →
// content_filter; anything else → stop.
//
// # Errors and limits
//
// The SDK's retries are off; failures come back as *model.Error for the
// coordinator to retry. HTTP errors and `event: error` frames inside a
// stream are classified by their error type (an in-stream error has no
// HTTP status of its own, so it is classified by the status the API
// documents for its type and reported with StatusCode zero). A stream that
// stops before message_stop is a network error; one that does not parse
// is a malformed response. The API key comes only from Config, never from
// the environment, and is scrubbed from error messages and Response.Raw.
//
// Images, documents, server tools and citations are not mapped: the
// runtime's messages carry text only.
package anthropic
