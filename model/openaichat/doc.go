// Package openaichat implements the model provider for OpenAI's Chat
// Completions API (kind "openai_chat"), on the official openai-go SDK.
// Package openaicompat reuses it, through a Dialect, for other servers that
// speak the same protocol.
//
// # Request mapping
//
// The agent's instructions become the first system message. The
// conversation follows in order: system messages (runtime reminders) stay
// system messages where they are, user messages user messages, assistant
// messages carry their text (left out when empty and the message has tool
// calls) and their tool calls as function calls with the arguments text
// sent verbatim, and tool results become tool messages answering their
// call id. Chat Completions has no flag for a failed tool result, so
// IsError is not sent; the result text has to say it. Tools are function
// tools whose parameters are the input schema as written. The output cap
// is sent as max_completion_tokens, and the configured temperature and
// reasoning effort when set. Reasoning blocks of earlier assistant
// messages are not sent: the API takes none.
//
// # Responses
//
// Responses are streamed (unless Config.NoStream), with
// stream_options.include_usage so that the last chunk reports usage.
// Streamed text reaches Request.Stream in order; tool calls are
// accumulated by their stream index, and their arguments are returned as
// the model wrote them, valid JSON or not. A refusal is returned as text,
// with the finish reason content_filter. Usage counts prompt_tokens as
// input (cached tokens included), prompt_tokens_details.cached_tokens as
// cached input and completion_tokens_details.reasoning_tokens as
// reasoning. The API exposes no reasoning text, so Response.Reasoning
// stays empty unless the Dialect names fields that carry it.
//
// A stream must end with its [DONE] event; one that stops before it
// fails with a model.ErrNetwork error, and an event that does not parse
// with a model.ErrServer error. Error events inside the stream and HTTP
// error responses are classified by model.HTTPError. A call that receives
// nothing for Config.IdleTimeout fails as a model.ErrTimeout, and so does
// one that outlasts Config.Timeout; when the caller's context ends first,
// Generate returns the context's error. The SDK's own retries are off:
// the coordinator retries.
//
// # Credentials
//
// The API key comes from Config.APIKey only. The SDK's client would read
// OPENAI_API_KEY, OPENAI_BASE_URL and other OPENAI_* variables from the
// environment; this package builds its SDK service from explicit options,
// so the environment never changes what is sent. The key is removed from
// every error message and from Response.Raw.
//
// # Limits
//
// Only text is sent and received: no images, audio, structured output
// formats, logprobs or several choices.
package openaichat
