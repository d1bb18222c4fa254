package apitype

import "io"

// Output is stored content opened for reading: the whole output of a
// tool call whose event carried an outputRef, a raw model response
// (model.completed refs.rawResponse) or a tool input a hook rewrote
// (updatedInputRef). Close it when done.
type Output struct {
	// Ref is the content's ref: "sha256:" and the hex SHA-256 of its bytes.
	Ref string
	// MediaType is what the content is: text/plain; charset=utf-8 for a
	// tool's output, application/json or text/event-stream for a raw
	// model response.
	MediaType string
	// Size is the content's length in bytes.
	Size int64
	// Source is where the runtime keeps it: "blob" (in the store) or
	// "output_store" (spilled to the data directory's outputs/).
	Source string
	io.ReadCloser
}

// Output sources.
const (
	OutputSourceBlob  = "blob"
	OutputSourceStore = "output_store"
)
