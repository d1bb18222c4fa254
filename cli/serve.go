package cli

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/config"
	"github.com/agentrt/agentrt/configure"
	"github.com/agentrt/agentrt/httpapi"
)

type serveFlags struct {
	config  string
	listen  string
	dataDir string
	// grace bounds the shutdown: running attempts may finish their step
	// within it; then they are abandoned for the next start to recover.
	grace     time.Duration
	logFormat string
	// tlsCert and tlsKey are PEM files: with both, serve speaks HTTPS.
	tlsCert, tlsKey string
	// store is --store: the store's URL, over the config's.
	store string
}

func newServeCmd() *cobra.Command {
	var f serveFlags
	cmd := &cobra.Command{
		Use:   "serve --config FILE [--listen ADDR] [--tls-cert FILE --tls-key FILE]",
		Short: "Serve the HTTP API and event stream",
		Long: `Serve the runtime over HTTP: submit turns, list requests and sessions, read session
snapshots and thread read models, and stream events (SSE, resumable with Last-Event-ID).
The API binds 127.0.0.1:7420 unless the config or --listen says otherwise, and every /v1
route requires the bearer token kept in DATA_DIR/api-token. On the first start the token
is generated and printed once. The runtime removes the token, like the configured models'
keys, from everything it writes and logs.

With --tls-cert and --tls-key (PEM files: the certificate, with its chain, and its
private key) serve speaks HTTPS only, TLS 1.2 or later; give both or neither. Bound to an
address other than loopback without them, serve logs a warning: tokens and everything the
API answers would cross the network in clear text.

SIGINT or SIGTERM stops gracefully: the server stops accepting requests, no new work is
claimed, and running attempts finish the step they are in, then stay queued for the next
start to go on from. After --shutdown-grace, attempts still running are abandoned; the
next start recovers them from their last recorded step. A second signal quits at once.

Logs go to standard error, one JSON object per line (--log-format text for logfmt-style
lines); lines about a turn carry its traceId, spanId, sessionId and turnId, and every
HTTP request leaves an "http request" line (method, route, status, duration, caller;
never a token). GET /metrics
serves Prometheus metrics (bearer token required). Traces are exported over OTLP/HTTP
when OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set; see
docs/telemetry.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return serve(cmd, &f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.config, "config", "agentrt.yaml", "the agentrt.yaml to load")
	fl.StringVar(&f.listen, "listen", "", "address to listen on (default: the config's server.listen)")
	fl.StringVar(&f.dataDir, "data-dir", "", "override the config's data_dir")
	registerStoreFlag(cmd, &f.store)
	fl.StringVar(&f.logFormat, "log-format", "json", "log line format on standard error: json or text")
	fl.StringVar(&f.tlsCert, "tls-cert", "", "serve HTTPS with this PEM certificate (chain) file; needs --tls-key")
	fl.StringVar(&f.tlsKey, "tls-key", "", "the PEM private key of --tls-cert")
	fl.DurationVar(&f.grace, "shutdown-grace", 30*time.Second, "on SIGINT or SIGTERM, how long running steps may take to finish before they are abandoned for the next start; overrides the config's durability.shutdown_grace")
	return cmd
}

func serve(cmd *cobra.Command, f *serveFlags) error {
	if f.grace <= 0 {
		return usageErr("invalid --shutdown-grace %s: must be positive", f.grace)
	}
	tlsConfig, err := loadTLS(f.tlsCert, f.tlsKey)
	if err != nil {
		return err
	}
	logger, err := newLogger(cmd.ErrOrStderr(), f.logFormat)
	if err != nil {
		return err
	}
	cfg, file, err := configure.Load(f.config)
	if err != nil {
		return configErr(err)
	}
	sel, err := selectStore(f.store, file.Store)
	if err != nil {
		return err
	}
	if g := file.Durability.ShutdownGrace; g > 0 && !cmd.Flags().Changed("shutdown-grace") {
		f.grace = g
	}
	if f.dataDir != "" {
		cfg.DataDir = f.dataDir
	}
	addr := file.Server.Listen
	if f.listen != "" {
		addr = f.listen
	}
	cfg.Logger = logger
	tp, flushTraces, err := tracing(context.Background(), cmd.ErrOrStderr())
	if err != nil {
		return err
	}
	defer flushTraces() // after the runtime has stopped: it sends the last spans
	cfg.TracerProvider = tp

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
	// The token grants every right: it is a secret the runtime removes
	// from whatever it writes, as the configured keys are.
	cfg.Redact.Secrets = append(cfg.Redact.Secrets, token)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	closeStore, err := openStore(ctx, sel, &cfg)
	if err != nil {
		return err
	}
	defer closeStore() // runs after the runtime has stopped
	rt, err := agentrt.New(cfg)
	if err != nil {
		return &exitError{code: ExitFailed, err: fmt.Errorf("starting the runtime: %w", err)}
	}
	if err := rt.Start(ctx); err != nil {
		rt.Stop(context.Background())
		return &exitError{code: ExitFailed, err: err}
	}
	if err := httpapi.RegisterFileToken(ctx, rt, token); err != nil {
		rt.Stop(context.Background())
		return &exitError{code: ExitFailed, err: err}
	}
	logger = rt.Logger()
	api, err := httpapi.New(rt, httpapi.Config{Logger: logger, CORSOrigins: file.Server.CORSOrigins})
	if err != nil {
		rt.Stop(context.Background())
		return &exitError{code: ExitFailed, err: err}
	}

	// Streams (SSE) never go idle, so shutting down cancels their context.
	streams, cancelStreams := context.WithCancel(context.Background())
	defer cancelStreams()
	limits := serverLimits(file.Server)
	srv := httpapi.NewHTTPServer(api.Handler(), limits)
	srv.BaseContext = func(net.Listener) context.Context { return streams }
	srv.ErrorLog = slog.NewLogLogger(logger.Handler(), slog.LevelWarn)
	srv.TLSConfig = tlsConfig
	scheme := "https"
	if tlsConfig == nil {
		scheme = "http"
		if !loopback(ln.Addr()) {
			logger.Warn("serving plain HTTP on an address other than loopback: bearer tokens and everything the API answers cross the network in clear text; give --tls-cert and --tls-key, or put a TLS-terminating proxy in front and bind 127.0.0.1",
				"addr", ln.Addr().String())
		}
	}
	out := cmd.OutOrStdout()
	where := cfg.DataDir
	if cfg.StoreLocation != "" {
		where += ", store " + cfg.StoreLocation
	}
	fmt.Fprintf(out, "agentrt %s serving %s://%s (runtime %s, data %s)\n", agentrt.Version(), scheme, ln.Addr(), rt.RuntimeID(), where)
	if created {
		fmt.Fprintf(out, "API token (shown once; kept in %s/%s):\n  %s\n", cfg.DataDir, httpapi.TokenFile, token)
	}
	errc := make(chan error, 1)
	go func() {
		limited := httpapi.LimitListener(ln, limits.MaxConnsPerClient, logger)
		if tlsConfig != nil {
			errc <- srv.ServeTLS(limited, "", "") // the certificate is in srv.TLSConfig
			return
		}
		errc <- srv.Serve(limited)
	}()

	select {
	case err := <-errc:
		rt.Stop(context.Background())
		return &exitError{code: ExitFailed, err: fmt.Errorf("serving: %w", err)}
	case <-ctx.Done():
	}
	// A second signal now ends the process at once (the default action):
	// what runs then is recovered by the next start, as after a crash.
	stop()
	return shutdown(out, srv, errc, cancelStreams, rt, f.grace)
}

// loadTLS returns the TLS configuration of --tls-cert and --tls-key: nil
// when neither is given, an error (exit 2) when only one is or the pair
// does not load.
func loadTLS(certFile, keyFile string) (*tls.Config, error) {
	switch {
	case certFile == "" && keyFile == "":
		return nil, nil
	case certFile == "":
		return nil, usageErr("--tls-key needs --tls-cert: give both to serve HTTPS, or neither to serve plain HTTP")
	case keyFile == "":
		return nil, usageErr("--tls-cert needs --tls-key: give both to serve HTTPS, or neither to serve plain HTTP")
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, usageErr("loading --tls-cert %s and --tls-key %s: %v", certFile, keyFile, err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

// loopback reports whether addr is a loopback address: only this
// machine can reach it. The unspecified address (0.0.0.0, ::) is not.
func loopback(addr net.Addr) bool {
	tcp, ok := addr.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}

// shutdown stops the server, then the runtime, within grace: the server
// stops accepting requests (open event streams end), then the runtime
// stops claiming work and lets running attempts finish their step; they
// leave their tasks queued for the next start. What still runs when grace
// is up is abandoned, to be recovered from its last recorded step.
func shutdown(out io.Writer, srv *http.Server, errc <-chan error, cancelStreams func(), rt *agentrt.Runtime, grace time.Duration) error {
	fmt.Fprintln(out, "agentrt: stopping")
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	cancelStreams()
	herr := srv.Shutdown(ctx)
	if herr != nil {
		// Requests still in progress when grace is up lose their
		// connections: the runtime's stop must not wait for them.
		srv.Close()
		herr = fmt.Errorf("stopping the server: %w", herr)
	}
	<-errc // Serve returns http.ErrServerClosed once Shutdown starts
	fmt.Fprintln(out, "agentrt: no longer accepting requests")
	running := rt.Health(ctx).ActiveTurns
	if running > 0 {
		fmt.Fprintf(out, "agentrt: letting %s finish the step in progress (up to %s; Ctrl-C again quits at once)\n",
			plural(running, "running attempt"), grace)
	}
	rerr := rt.Stop(ctx)
	switch {
	case running > 0 && ctx.Err() != nil:
		fmt.Fprintln(out, "agentrt: stopped; the grace period ran out, and the attempts still running were abandoned: the next start goes on from their last recorded step")
	case running > 0:
		fmt.Fprintln(out, "agentrt: stopped; the turns they ran stay queued, and the next start goes on from their last recorded step")
	default:
		fmt.Fprintln(out, "agentrt: stopped")
	}
	if err := errors.Join(herr, rerr); err != nil {
		return &exitError{code: ExitFailed, err: err}
	}
	return nil
}

// serverLimits are the config's server limits; zero ones take the
// server's defaults.
func serverLimits(s config.Server) httpapi.Limits {
	return httpapi.Limits{
		ReadHeaderTimeout: s.ReadHeaderTimeout, BodyTimeout: s.BodyTimeout, IdleTimeout: s.IdleTimeout,
		MaxHeaderBytes: s.MaxHeaderBytes, MaxConnsPerClient: s.MaxConnsPerClient,
	}.WithDefaults()
}
