package storetest

import (
	"context"
	"testing"

	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

func exerciseBlob(ctx context.Context, t *testing.T, newStore func(*testing.T) store.Store) {
	t.Run("InsertAndGet", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		bl := tb.blob(tenantA, "\x00binary\xff\xfe output")
		empty := tb.blob(tenantA, "")
		tb.apply(t, &store.Batch{Blobs: []*runtype.Blob{bl, empty}})
		for _, want := range []*runtype.Blob{bl, empty} {
			got, err := tb.store.BlobGet(ctx, &store.BlobGetParams{TenantID: tenantA, Ref: want.Ref})
			if err != nil {
				t.Fatalf("BlobGet: %v", err)
			}
			if d := diff(want, got); d != "" {
				t.Errorf("BlobGet (-want +got):\n%s", d)
			}
		}
		_, err := tb.store.BlobGet(ctx, &store.BlobGetParams{TenantID: tenantA, Ref: "sha256:missing"})
		wantNotFound(t, "BlobGet(missing)", err)
	})

	t.Run("InsertIgnoresExistingRef", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		first := tb.blob(tenantA, "tool output")
		tb.apply(t, &store.Batch{Blobs: []*runtype.Blob{first}})
		// The same content again, by another principal, alone and twice in
		// one batch: stored once, the first write wins, no conflict.
		again := *first
		again.PrincipalID, again.MediaType, again.CreatedAt = "someone_else", "text/plain", tb.now()
		tb.apply(t, &store.Batch{Blobs: []*runtype.Blob{&again}})
		tb.apply(t, &store.Batch{Blobs: []*runtype.Blob{&again, &again}})
		got, err := tb.store.BlobGet(ctx, &store.BlobGetParams{TenantID: tenantA, Ref: first.Ref})
		if err != nil {
			t.Fatalf("BlobGet: %v", err)
		}
		if d := diff(first, got); d != "" {
			t.Errorf("BlobGet after re-insert (-want +got):\n%s", d)
		}
	})

	t.Run("KeyedByTenant", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		a, b := tb.blob(tenantA, "same bytes"), tb.blob(tenantB, "same bytes")
		tb.apply(t, &store.Batch{Blobs: []*runtype.Blob{a, b}})
		for _, want := range []*runtype.Blob{a, b} {
			got, err := tb.store.BlobGet(ctx, &store.BlobGetParams{TenantID: want.TenantID, Ref: want.Ref})
			if err != nil {
				t.Fatalf("BlobGet(%s): %v", want.TenantID, err)
			}
			if d := diff(want, got); d != "" {
				t.Errorf("BlobGet(%s) (-want +got):\n%s", want.TenantID, d)
			}
		}
	})
}
