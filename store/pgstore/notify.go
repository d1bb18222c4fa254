package pgstore

import (
	"context"
	"database/sql"

	"github.com/agentrt/agentrt/store"
)

// notifyCommit tells the other nodes, in the transaction about to commit,
// what the applied batches changed (pg_notify is delivered at commit).
// The SQL core calls it last before COMMIT.
func notifyCommit(ctx context.Context, tx *sql.Tx, applied []*store.Batch) error {
	return nil
}
