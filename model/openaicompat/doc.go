// Package openaicompat implements the model provider for servers that
// speak OpenAI's Chat Completions protocol at a base URL of their own
// (kind "openai_compatible"): Ollama, vLLM, llama.cpp's server, LM Studio,
// DeepSeek and the like.
//
// It is package openaichat with a Dialect, so requests, streams, usage
// and errors map the same way (see that package's documentation), with
// these differences:
//
//   - Config.BaseURL is required (for example http://localhost:11434/v1
//     for Ollama).
//   - Config.APIKey is optional: many local servers need none, and with an
//     empty key no Authorization header is sent. The key is never taken
//     from the environment (OPENAI_API_KEY and the like).
//   - The output cap is sent as max_tokens, which older servers know,
//     rather than max_completion_tokens.
//   - Reasoning text is read from the non-standard delta (or message)
//     fields "reasoning_content" (DeepSeek, vLLM) and "reasoning" (Ollama,
//     newer vLLM); when a server sends both, reasoning_content is used.
//     It streams as model.DeltaReasoning pieces and is returned as one
//     Response.Reasoning block with Provider "openai_compatible". It is
//     not sent back in later requests, which such servers reject or
//     ignore.
//
// # Limits
//
// Servers differ in what they accept. Usage is reported only by servers
// that honour stream_options.include_usage (Config.NoStreamUsage leaves
// it out for those that reject it); cached and reasoning token counts
// only where a server reports them in OpenAI's fields. A server must end
// its stream with data: [DONE], as the protocol says.
package openaicompat
