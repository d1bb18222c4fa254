package cli

import (
	"context"
	"errors"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/config"
	"github.com/agentrt/agentrt/store/pgstore"
)

// storeFlagUsage is the help of --store.
const storeFlagUsage = "the store's URL (postgres://USER@HOST:PORT/DATABASE); overrides $" + config.StoreURLEnv +
	" and the config's store.url (default: the SQLite file in the data directory)"

// selectStore is the store a command opens: --store when given, else
// $AGENTRT_STORE_URL when set, else the config's store section. Its
// max_conns and statement_timeout apply whichever URL wins. A URL of
// the flag or the variable is checked as the config's is; no error quotes
// it.
func selectStore(flag string, file config.Store) (config.Store, error) {
	sel, where := file, ""
	switch {
	case flag != "":
		sel.URL, where = flag, "--store"
	case os.Getenv(config.StoreURLEnv) != "":
		sel.URL, where = os.Getenv(config.StoreURLEnv), "$"+config.StoreURLEnv
	}
	if where != "" {
		if _, err := config.ParseStoreURL(sel.URL); err != nil {
			return config.Store{}, usageErr("%s: %v", where, err)
		}
	}
	return sel, nil
}

// openStore opens the selected store into cfg: for a PostgreSQL URL it
// connects, sets cfg.Store (the runtime migrates it as it does any
// store) and cfg.StoreLocation, and adds the URL's passwords to what the
// runtime redacts. The SQLite default opens nothing: the runtime opens
// the data directory's file. Close the store after the runtime has
// stopped.
func openStore(ctx context.Context, sel config.Store, cfg *agentrt.Config) (closeStore func(), err error) {
	if sel.URL == "" {
		return func() {}, nil
	}
	s, err := pgstore.Open(ctx, sel.URL, pgstore.Options{MaxConns: sel.MaxConns, StatementTimeout: sel.StatementTimeout})
	if err != nil {
		// The driver's error names the server (its URL redacted).
		return nil, &exitError{code: ExitFailed, err: scrubStoreErr(err, sel.URL)}
	}
	cfg.Store, cfg.StoreLocation = s, config.StoreLocation(sel.URL)
	cfg.Redact.Secrets = append(cfg.Redact.Secrets, config.StoreSecrets(sel.URL)...)
	return func() { s.Close() }, nil
}

// scrubStoreErr is err without the URL or its passwords: a driver's
// error should not quote them, and this makes sure none reaches a log.
func scrubStoreErr(err error, rawURL string) error {
	msg := err.Error()
	clean := strings.ReplaceAll(msg, rawURL, config.StoreLocation(rawURL))
	for _, s := range config.StoreSecrets(rawURL) {
		clean = strings.ReplaceAll(clean, s, "xxxxx")
	}
	if clean == msg {
		return err
	}
	return errors.New(clean)
}

// registerStoreFlag adds --store to cmd.
func registerStoreFlag(cmd *cobra.Command, dst *string) {
	cmd.Flags().StringVar(dst, "store", "", storeFlagUsage)
}
