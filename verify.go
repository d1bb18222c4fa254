package agentrt

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

// VerifySession checks a session's evidence chain: every receipt's hash
// covers its body and its predecessor's hash, the sequence has no gaps,
// and every sealed event of the session still reads back as its receipt
// recorded it (and has one, from the session's first receipt on; events
// before it, recorded before receipts existed, are counted as Unsealed).
// It reports the first problem it finds.
//
// The session may be running while it is verified. A receipt is written in
// the same transaction as its event, so the events are read first and the
// receipts after: every event read then has its receipt among those read.
// Receipts of events appended in between are matched against the events
// read after the first pass; sealed events that arrive later still are
// left for the next verification.
func (rt *Runtime) VerifySession(ctx context.Context, owner runtype.Owner, sessionID string) (*apitype.VerifyResult, error) {
	owner = ownerOrDefault(owner)
	if _, err := rt.store.SessionGet(ctx, &store.SessionGetParams{TenantID: owner.TenantID, ID: sessionID}); err != nil {
		return nil, fmt.Errorf("reading session %s: %w", sessionID, err)
	}
	filter := event.Filter{TenantID: owner.TenantID, SessionID: sessionID}
	sealed, cursor, err := rt.sealedEvents(ctx, filter, 0)
	if err != nil {
		return nil, err
	}
	var receipts []*runtype.Receipt
	for after := int64(0); ; {
		page, err := rt.store.ReceiptList(ctx, &store.ReceiptListParams{TenantID: owner.TenantID, SessionID: sessionID, AfterSeq: after, Limit: store.MaxListLimit})
		if err != nil {
			return nil, fmt.Errorf("reading receipts: %w", err)
		}
		receipts = append(receipts, page...)
		if len(page) < store.MaxListLimit {
			break
		}
		after = page[len(page)-1].Seq
	}
	res := &apitype.VerifyResult{SessionID: sessionID, Receipts: len(receipts), OK: true}
	if n := len(receipts); n > 0 {
		res.Head = receipts[n-1].Hash
	}
	fail := func(seq int64, eventID, problem string) (*apitype.VerifyResult, error) {
		res.OK, res.Seq, res.EventID, res.Problem = false, seq, eventID, problem
		return res, nil
	}
	if err := store.VerifyReceipts(receipts); err != nil {
		var re *store.ReceiptError
		if errors.As(err, &re) {
			return fail(re.Seq, re.EventID, re.Reason)
		}
		return nil, err
	}
	byEvent := make(map[string]*runtype.Receipt, len(receipts))
	for _, r := range receipts {
		byEvent[r.EventID] = r
	}
	// matches reports whether e reads back as its receipt sealed it.
	matches := func(e *event.Event, r *runtype.Receipt) (bool, error) {
		body, err := e.JSON()
		if err != nil {
			return false, fmt.Errorf("encoding event %s: %w", e.EventID, err)
		}
		return bytes.Equal(body, r.Body), nil
	}
	sealing := false // a sealed event with a receipt was seen: every later one needs one
	for _, e := range sealed {
		r := byEvent[e.EventID]
		switch {
		case r == nil && !sealing:
			res.Unsealed++ // recorded before the session had receipts
			continue
		case r == nil:
			return fail(0, e.EventID, fmt.Sprintf("%s event %s has no receipt", e.Type, e.EventID))
		}
		sealing = true
		if ok, err := matches(e, r); err != nil {
			return nil, err
		} else if !ok {
			return fail(r.Seq, e.EventID, fmt.Sprintf("the stored %s event differs from what its receipt sealed", e.Type))
		}
		delete(byEvent, e.EventID)
	}
	if len(byEvent) > 0 {
		// Events appended between the two reads: their receipts were read.
		later, _, err := rt.sealedEvents(ctx, filter, cursor)
		if err != nil {
			return nil, err
		}
		for _, e := range later {
			r := byEvent[e.EventID]
			if r == nil {
				continue // appended after the receipts were read
			}
			if ok, err := matches(e, r); err != nil {
				return nil, err
			} else if !ok {
				return fail(r.Seq, e.EventID, fmt.Sprintf("the stored %s event differs from what its receipt sealed", e.Type))
			}
			delete(byEvent, e.EventID)
		}
	}
	for _, r := range receipts {
		if byEvent[r.EventID] != nil {
			return fail(r.Seq, r.EventID, fmt.Sprintf("the %s event the receipt seals is missing", r.EventType))
		}
	}
	return res, nil
}

// sealedEvents reads the sealed events matching filter after cursor, in
// log order, and the cursor of the last event read (sealed or not).
func (rt *Runtime) sealedEvents(ctx context.Context, filter event.Filter, cursor int64) ([]*event.Event, int64, error) {
	var sealed []*event.Event
	for {
		events, err := rt.store.EventListAfter(ctx, &store.EventListAfterParams{Filter: filter, AfterCursor: cursor, Limit: store.MaxListLimit})
		if err != nil {
			return nil, 0, fmt.Errorf("reading events: %w", err)
		}
		for _, e := range events {
			if store.Sealed(e.Type) {
				sealed = append(sealed, e)
			}
		}
		if len(events) > 0 {
			cursor = events[len(events)-1].Cursor
		}
		if len(events) < store.MaxListLimit {
			return sealed, cursor, nil
		}
	}
}
