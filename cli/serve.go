package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/httpapi"
)

type serveFlags struct {
	config  string
	listen  string
	dataDir string
}

func newServeCmd() *cobra.Command {
	var f serveFlags
	cmd := &cobra.Command{
		Use:   "serve --config FILE [--listen ADDR]",
		Short: "Serve the HTTP API and event stream",
		Long: `Serve the runtime over HTTP: submit turns, list requests and sessions, read session
snapshots and thread read models, and stream events (SSE, resumable with Last-Event-ID).
The API binds 127.0.0.1:7420 unless the config or --listen says otherwise, and every /v1
route requires the bearer token kept in DATA_DIR/api-token. On the first start the token
is generated and printed once. SIGINT or SIGTERM stops gracefully.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return serve(cmd, &f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.config, "config", "agentrt.yaml", "the agentrt.yaml to load")
	fl.StringVar(&f.listen, "listen", "", "address to listen on (default: the config's server.listen)")
	fl.StringVar(&f.dataDir, "data-dir", "", "override the config's data_dir")
	return cmd
}

func serve(cmd *cobra.Command, f *serveFlags) error {
	cfg, file, err := agentrt.LoadConfig(f.config)
	if err != nil {
		return configErr(err)
	}
	if f.dataDir != "" {
		cfg.DataDir = f.dataDir
	}
	addr := file.Server.Listen
	if f.listen != "" {
		addr = f.listen
	}
	logger := slog.New(slog.NewJSONHandler(cmd.ErrOrStderr(), nil))
	cfg.Logger = logger

	// Bind first: the token is printed only when it is created, so it must
	// not be created by a start that then fails.
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return &exitError{code: ExitFailed, err: fmt.Errorf("listening: %w", err)}
	}
	defer ln.Close()
	token, created, err := httpapi.LoadOrCreateToken(cfg.DataDir)
	if err != nil {
		return &exitError{code: ExitFailed, err: err}
	}
	rt, err := agentrt.New(cfg)
	if err != nil {
		return &exitError{code: ExitFailed, err: fmt.Errorf("starting the runtime: %w", err)}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := rt.Start(ctx); err != nil {
		rt.Stop(context.Background())
		return &exitError{code: ExitFailed, err: err}
	}
	api, err := httpapi.New(rt, httpapi.Config{Token: token, Logger: logger})
	if err != nil {
		rt.Stop(context.Background())
		return &exitError{code: ExitFailed, err: err}
	}

	// Streams (SSE) never go idle, so shutting down cancels their context.
	streams, cancelStreams := context.WithCancel(context.Background())
	defer cancelStreams()
	srv := &http.Server{
		Handler:           api.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		BaseContext:       func(net.Listener) context.Context { return streams },
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	out := cmd.OutOrStdout()
	fmt.Fprintf(out, "agentrt %s serving http://%s (runtime %s, data %s)\n", agentrt.Version(), ln.Addr(), rt.RuntimeID(), cfg.DataDir)
	if created {
		fmt.Fprintf(out, "API token (shown once; kept in %s/%s):\n  %s\n", cfg.DataDir, httpapi.TokenFile, token)
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()

	select {
	case err := <-errc:
		rt.Stop(context.Background())
		return &exitError{code: ExitFailed, err: fmt.Errorf("serving: %w", err)}
	case <-ctx.Done():
	}
	fmt.Fprintln(out, "agentrt: stopping")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cancelStreams()
	herr := srv.Shutdown(shutdownCtx)
	<-errc // Serve returns http.ErrServerClosed once Shutdown starts
	rerr := rt.Stop(shutdownCtx)
	if err := errors.Join(herr, rerr); err != nil {
		return &exitError{code: ExitFailed, err: err}
	}
	return nil
}
