package agentrt

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

// outputRefLen is the length of a content ref: "sha256:" and 64 hex digits.
const outputRefLen = len("sha256:") + 64

// checkOutputRef returns an *InvalidError unless ref is "sha256:" and 64
// lowercase hex digits. A long ref is not quoted back.
func checkOutputRef(ref string) error {
	const want = "must be sha256: followed by 64 lowercase hex digits"
	if len(ref) > outputRefLen {
		return invalid("ref", "%s, got %d bytes", want, len(ref))
	}
	sum, ok := strings.CutPrefix(ref, "sha256:")
	if !ok || len(sum) != 64 || strings.Trim(sum, "0123456789abcdef") != "" {
		return invalid("ref", "%s, got %q", want, ref)
	}
	return nil
}

// OpenOutput opens the content ref names, if owner's tenant holds it: a
// blob of the tenant's, or a spilled output one of the tenant's tool
// calls produced (the output store keeps no tenant; the call does).
// Another tenant's content answers ErrNotFound, as missing content does;
// a malformed ref is an *InvalidError.
func (rt *Runtime) OpenOutput(ctx context.Context, owner runtype.Owner, ref string) (*apitype.Output, error) {
	if err := checkOutputRef(ref); err != nil {
		return nil, err
	}
	tenant := tenantOf(owner)
	blob, err := rt.store.BlobGet(ctx, &store.BlobGetParams{TenantID: tenant, Ref: ref})
	switch {
	case err == nil:
		return &apitype.Output{Ref: ref, MediaType: blob.MediaType, Size: int64(len(blob.Data)), Source: apitype.OutputSourceBlob,
			ReadCloser: io.NopCloser(bytes.NewReader(blob.Data))}, nil
	case !errors.Is(err, store.ErrNotFound):
		return nil, fmt.Errorf("reading output %s: %w", ref, err)
	}
	if _, err := rt.store.ToolCallGetByOutputRef(ctx, &store.ToolCallGetByOutputRefParams{TenantID: tenant, Ref: ref}); err != nil {
		return nil, fmt.Errorf("reading output %s: %w", ref, err)
	}
	if rt.outputs == nil {
		return nil, fmt.Errorf("reading output %s: this runtime has no output store: %w", ref, apitype.ErrNotFound)
	}
	rc, err := rt.outputs.Open(ref)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		// Recorded, but the file is gone: a runtime without a data
		// directory removes its outputs when it stops.
		return nil, fmt.Errorf("reading output %s: no longer stored: %w", ref, apitype.ErrNotFound)
	case err != nil:
		return nil, fmt.Errorf("reading output %s: %w", ref, err)
	}
	var size int64
	if f, ok := rc.(interface{ Stat() (fs.FileInfo, error) }); ok {
		fi, err := f.Stat()
		if err != nil {
			rc.Close()
			return nil, fmt.Errorf("reading output %s: %w", ref, err)
		}
		size = fi.Size()
	}
	return &apitype.Output{Ref: ref, MediaType: "text/plain; charset=utf-8", Size: size, Source: apitype.OutputSourceStore, ReadCloser: rc}, nil
}
