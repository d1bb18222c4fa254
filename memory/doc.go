// Package memory is agents' long-term memory: text that outlives a
// thread, kept per tenant and agent with the provenance of who wrote it
// (runtype.Memory), in any store that implements store.Memories.
//
// It provides the built-in tools memory_save, memory_search and
// memory_forget, which run under policy like any tool, and Recaller,
// which finds the memories a turn's input matches so that the
// coordinator can put them before the turn's message (recorded as
// context.resolved).
//
// # Untrusted content
//
// A model that read a hostile web page or file can be talked into saving
// its instructions, to be recalled into later turns. memory_save cannot
// tell what the model copied from a tool's output: the model's own word
// (its source argument) is what a hijacked model would lie about. So
// every memory a model saves passes the prompt-injection checker
// (policy/checker.PromptInjection), whatever source it claims; content it
// flags is refused with an error result the model sees, and nothing is
// saved. The source argument is kept as provenance: "tool_output" says
// the model took the content from a tool's output.
package memory
