package cli

import (
	"fmt"
	"maps"
	"slices"

	"github.com/spf13/cobra"

	"github.com/agentrt/agentrt/internal/storecopy"
)

func newMigrateStoreCmd() *cobra.Command {
	var from, to string
	cmd := &cobra.Command{
		Use:   "migrate-store --from DIR --to URL",
		Short: "Copy a data directory's SQLite store into a new PostgreSQL database",
		Long: `Copy the SQLite store of data directory DIR (DIR/agentrt.db) into the PostgreSQL database
at URL (postgres://user@host:port/database), so that agentrt nodes can share it: the database is
migrated to agentrt's PostgreSQL schema, then every table is copied in one transaction, rows as
they are: events with their cursors and sequences, blobs, receipts (the evidence chains verify
on the copy as on the source), tasks, approvals, schedules, memories and the rest. Identity
sequences continue after the copied rows. The source is only read (a consistent snapshot, even
of a store in use), and left as it is.

The target must be a new, empty database; one that holds data is refused. The source must be
at the SQLite schema this agentrt writes (the PostgreSQL schema mirrors that one): open it
with this agentrt first (any command on it migrates it, agentrt health for one) if an older
one last used it.
Stop the daemons using DIR before copying, or what they write after the snapshot is not
copied.

Put the password in PGPASSWORD or ~/.pgpass rather than in URL, where other users of the
machine can read it in the process list. The URL is printed without its password.

Exit codes: 0 copied, 1 refused or failed (nothing is written to the target but its schema),
2 usage error.`,
		Example: `  createdb agentrt
  PGPASSWORD=… agentrt migrate-store --from .agentrt --to postgres://agentrt@db.internal/agentrt`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case from == "":
				return usageErr("--from is required: the data directory to copy")
			case to == "":
				return usageErr("--to is required: the PostgreSQL database URL (postgres://…)")
			}
			counts, err := storecopy.FromSQLite(commandContext(cmd), from, to)
			if err != nil {
				return &exitError{code: ExitFailed, err: fmt.Errorf("migrate-store: %w", err)}
			}
			out := cmd.OutOrStdout()
			var rows int64
			for _, t := range slices.Sorted(maps.Keys(counts)) {
				fmt.Fprintf(out, "%-22s %d\n", t, counts[t])
				rows += counts[t]
			}
			fmt.Fprintf(out, "copied %d rows of %d tables from %s to %s\n", rows, len(counts), from, storecopy.Redacted(to))
			return nil
		},
	}
	cmd.Flags().StringVar(&from, "from", "", "the data directory whose SQLite store to copy")
	cmd.Flags().StringVar(&to, "to", "", "the PostgreSQL database URL to copy into (postgres://…)")
	return cmd
}
