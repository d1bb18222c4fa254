package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/config"
	"github.com/agentrt/agentrt/configure"
)

// noSweep keeps a command's runtime from expiring actions on its own. An
// expired action resumes its turn, so a short-lived command would run a
// turn nobody asked it to, and cancel it when it exits. agentrt serve
// expires actions; a response to an expired one expires it too.
const noSweep = time.Duration(math.MaxInt64)

// storeFlags are the flags of the commands that open the config's data
// directory.
type storeFlags struct {
	config  string
	dataDir string
	// store is --store: the store's URL, over the config's.
	store string
	// poll is how often a command following events reads a data
	// directory for those of other processes (--interval); 0 is 1s.
	poll time.Duration
	// create: the command may make the store (token create provisions
	// tokens before a first start); the others need one already.
	create bool
}

func (f *storeFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.config, "config", "agentrt.yaml", "the agentrt.yaml to load")
	cmd.Flags().StringVar(&f.dataDir, "data-dir", "", "override the config's data_dir")
	registerStoreFlag(cmd, &f.store)
}

// loadConfig loads the config with --data-dir applied and the runtime's
// errors logged to standard error.
func (f *storeFlags) loadConfig(cmd *cobra.Command) (agentrt.Config, error) {
	cfg, _, err := f.loadConfigFile(cmd)
	return cfg, err
}

// loadConfigFile is loadConfig that also returns the store the command
// is to open (selectStore).
func (f *storeFlags) loadConfigFile(cmd *cobra.Command) (agentrt.Config, config.Store, error) {
	cfg, file, err := configure.Load(f.config)
	if err != nil {
		return agentrt.Config{}, config.Store{}, configErr(err)
	}
	sel, err := selectStore(f.store, file.Store)
	if err != nil {
		return agentrt.Config{}, config.Store{}, err
	}
	if f.dataDir != "" {
		abs, err := filepath.Abs(f.dataDir)
		if err != nil {
			return agentrt.Config{}, config.Store{}, usageErr("resolving --data-dir: %v", err)
		}
		cfg.DataDir = abs
	}
	cfg.Logger = slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelError}))
	cfg.ActionSweepInterval = noSweep
	return cfg, sel, nil
}

// openReader starts a runtime on the config's data directory for a
// command that only reads, or answers without waiting: its runtime has
// no workers, so it takes up no work of the directory (a daemon's, say)
// and stops at once.
func (f *storeFlags) openReader(cmd *cobra.Command) (rt *agentrt.Runtime, stop func(), err error) {
	return f.open(cmd, true)
}

// open starts a runtime on a data directory that must hold a store
// already, unless f.create: a command that reads or answers what was
// recorded has nothing to work on in an empty one, and must not leave one
// behind (only run, serve and token create make stores).
func (f *storeFlags) open(cmd *cobra.Command, noWorkers bool) (rt *agentrt.Runtime, stop func(), err error) {
	cfg, sel, err := f.loadConfigFile(cmd)
	if err != nil {
		return nil, nil, err
	}
	cfg.NoWorkers, cfg.ExistingStore = noWorkers, !f.create
	ctx := commandContext(cmd)
	closeStore, err := openStore(ctx, sel, &cfg)
	if err != nil {
		return nil, nil, err
	}
	flushTraces := func() {}
	if !noWorkers { // its workers may run turns: export their spans too
		if cfg.TracerProvider, flushTraces, err = tracing(context.Background(), cmd.ErrOrStderr()); err != nil {
			closeStore()
			return nil, nil, err
		}
	}
	rt, err = agentrt.New(cfg)
	if errors.Is(err, agentrt.ErrNoStore) {
		flushTraces()
		closeStore()
		return nil, nil, usageErr("%v: agentrt run and agentrt serve make one; check --data-dir, or the data_dir of %s", err, f.config)
	}
	if err != nil {
		flushTraces()
		closeStore()
		return nil, nil, &exitError{code: ExitFailed, err: fmt.Errorf("starting the runtime: %w", err)}
	}
	if err := rt.Start(ctx); err != nil {
		rt.Stop(context.Background())
		flushTraces()
		closeStore()
		return nil, nil, &exitError{code: ExitFailed, err: err}
	}
	stop = func() {
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		rt.Stop(stopCtx)
		flushTraces()
		closeStore()
	}
	return rt, stop, nil
}

func commandContext(cmd *cobra.Command) context.Context {
	if ctx := cmd.Context(); ctx != nil {
		return ctx
	}
	return context.Background()
}

// continueFlags are the flags a follow-up command needs to reach the same
// store: --config, and --data-dir when it was given.
func continueFlags(config, dataDir string) string {
	s := "--config " + shellQuote(config)
	if dataDir != "" {
		if abs, err := filepath.Abs(dataDir); err == nil {
			dataDir = abs
		}
		s += " --data-dir " + shellQuote(dataDir)
	}
	return s
}

// shellQuote quotes s for a POSIX shell when it needs quoting.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+=:,@%", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// runtimeErr turns an error of the runtime into the command's exit: a
// request it cannot accept as given is a usage error, anything else an
// operational failure.
func runtimeErr(err error) error {
	if rerr := remoteErr(err); rerr != nil {
		return rerr
	}
	var inv *apitype.InvalidError
	if errors.As(err, &inv) {
		return usageErr("%v", err)
	}
	return &exitError{code: ExitFailed, err: err}
}
