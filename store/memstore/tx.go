package memstore

import (
	"context"
	"errors"

	"github.com/agentrt/agentrt/store"
)

// errTxDone is returned by a Tx used after Commit or Rollback.
var errTxDone = errors.New("transaction already committed or rolled back")

// Tx is a write transaction. It holds the Store's write lock until Commit or
// Rollback and, like a database transaction, belongs to one goroutine.
type Tx struct {
	reader

	s    *Store
	done bool
	log  []undo // reverses what Apply did, newest last
}

var _ store.Tx = (*Tx)(nil)

func (tx *Tx) check() error {
	if tx.done {
		return errTxDone
	}
	return nil
}

// Apply writes b. It checks every uniqueness rule for the whole batch
// before changing anything, so a conflicting batch leaves no trace and the
// Tx may continue.
func (tx *Tx) Apply(_ context.Context, b *store.Batch) error {
	if err := tx.check(); err != nil {
		return err
	}
	if b == nil {
		return nil
	}
	d := tx.s.d
	if err := d.validate(b); err != nil {
		return err
	}
	tx.log = d.apply(b, tx.log)
	return nil
}

// EventLastSequence returns the highest event sequence of a session.
func (tx *Tx) EventLastSequence(_ context.Context, p *store.EventLastSequenceParams) (int64, error) {
	if err := tx.check(); err != nil {
		return 0, err
	}
	if se := tx.s.d.eventsBySession[p.SessionID]; se != nil {
		return se.last, nil
	}
	return 0, nil
}

// Commit keeps what Apply wrote and releases the write lock.
func (tx *Tx) Commit() error {
	if err := tx.check(); err != nil {
		return err
	}
	tx.finish()
	return nil
}

// Rollback reverses what Apply wrote and releases the write lock.
func (tx *Tx) Rollback() error {
	if err := tx.check(); err != nil {
		return err
	}
	for i := len(tx.log) - 1; i >= 0; i-- {
		tx.s.d.revert(&tx.log[i])
	}
	tx.finish()
	return nil
}

// finish ends the transaction, handing its log's memory back to the store
// for the next one.
func (tx *Tx) finish() {
	clear(tx.log)
	tx.s.logBuf, tx.log, tx.done = tx.log[:0], nil, true
	tx.s.mu.Unlock()
}
