package cli_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/cli"
	"github.com/agentrt/agentrt/config"
	"github.com/agentrt/agentrt/configure"
	"github.com/agentrt/agentrt/httpapi"
	"github.com/agentrt/agentrt/internal/testenv"
	"github.com/agentrt/agentrt/store/pgstore"
)

// pgPassword is the password the tests put in store URLs: the test
// server trusts every connection, so any password is accepted, and it
// must show nowhere.
const pgPassword = "Pw-in-the-URL-4711"

// postgresURL is a fresh database of the test server, its URL with
// pgPassword in it.
func postgresURL(t *testing.T) string {
	t.Helper()
	u, err := url.Parse(testenv.Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(u.User.Username(), pgPassword)
	return u.String()
}

// noPassword fails the test when any of outs holds pgPassword.
func noPassword(t *testing.T, what string, outs ...string) {
	t.Helper()
	for _, out := range outs {
		if strings.Contains(out, pgPassword) {
			t.Errorf("%s shows the store's password:\n%s", what, out)
		}
	}
}

// TestPostgresStoreFlag: with --store a turn runs on PostgreSQL (no
// SQLite file is made in the data directory), and the operator commands
// read it there; health and overview name the store by its URL without
// user and password, and nothing the commands print holds the password.
func TestPostgresStoreFlag(t *testing.T) {
	t.Parallel()
	dsn := postgresURL(t)
	b := setup(t)
	r := runOK(t, "", "run", "--config", b.config, "--store", dsn, "--json", "Where is order 1042?")
	noPassword(t, "run --json", r.stdout, r.stderr)
	evs := jsonLines(t, r.stdout)
	if last := evs[len(evs)-1]; last.Type != "turn.completed" {
		t.Errorf("the run ended with %s, want turn.completed", last.Type)
	}
	if _, err := os.Stat(filepath.Join(b.dir, ".agentrt", "agentrt.db")); err == nil {
		t.Error("the run made a SQLite file: the turn did not run on PostgreSQL")
	}

	r = runOK(t, "", "health", "--config", b.config, "--store", dsn, "--json")
	noPassword(t, "health --json", r.stdout, r.stderr)
	var h apitype.Health
	if err := json.Unmarshal([]byte(r.stdout), &h); err != nil {
		t.Fatal(err)
	}
	if want := config.StoreLocation(dsn); h.Store.Driver != "postgres" || h.Store.Location != want || !h.Store.Reachable || h.Store.LastCursor == 0 {
		t.Errorf("health's store = %+v, want postgres at %s, reachable, with the run's events", h.Store, want)
	}
	r = runOK(t, "", "overview", "--config", b.config, "--store", dsn)
	noPassword(t, "overview", r.stdout, r.stderr)
	if want := "store      postgres · " + config.StoreLocation(dsn) + "\n"; !strings.Contains(r.stdout, want) {
		t.Errorf("overview:\n%s\nwant the line %q", r.stdout, want)
	}
	r = runOK(t, "", "requests", "list", "--config", b.config, "--store", dsn, "--json")
	if !strings.Contains(r.stdout, evs[len(evs)-1].TurnID) {
		t.Errorf("requests list on the store does not list the turn:\n%s", r.stdout)
	}
}

// TestPostgresStoreErrors: a bad URL is a usage error naming where it
// came from; a server that does not answer fails the command (health:
// unhealthy) naming the store without its password.
func TestPostgresStoreErrors(t *testing.T) {
	t.Parallel()
	b := setup(t)
	unreachable := "postgres://agentrt:" + pgPassword + "@127.0.0.1:1/agentrt?connect_timeout=5"
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"bad scheme", []string{"health", "--config", b.config, "--store", "mysql://u:" + pgPassword + "@h/db"}, cli.ExitUsage,
			`--store: the scheme "mysql" is not a store`},
		{"run, bad scheme", []string{"run", "--config", b.config, "--store", "sqlite:" + pgPassword, "hello"}, cli.ExitUsage,
			`--store: the scheme "sqlite" is not a store`},
		{"serve, bad scheme", []string{"serve", "--config", b.config, "--store", "mysql://u:" + pgPassword + "@h/db"}, cli.ExitUsage,
			`--store: the scheme "mysql" is not a store`},
		{"unreachable", []string{"run", "--config", b.config, "--store", unreachable, "hello"}, cli.ExitFailed,
			"opening postgres store postgres://agentrt:xxxxx@127.0.0.1:1/agentrt"},
		{"health, unreachable", []string{"health", "--config", b.config, "--store", unreachable}, cli.ExitFailed,
			"the store did not open: opening postgres store postgres://agentrt:xxxxx@127.0.0.1:1/agentrt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := run(t, "", tt.args...)
			if r.code != tt.code || !strings.Contains(r.stdout+r.stderr, tt.want) {
				t.Errorf("exit %d, want %d with %q\nstdout:\n%s\nstderr:\n%s", r.code, tt.code, tt.want, r.stdout, r.stderr)
			}
			noPassword(t, "the error", r.stdout, r.stderr)
		})
	}
}

// TestStoreURLConfigError: a bad store.url in agentrt.yaml is a
// configuration error at its line, without the password.
func TestStoreURLConfigError(t *testing.T) {
	t.Parallel()
	b := setup(t)
	src, err := os.ReadFile(b.config)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Count(string(src), "\n")
	if err := os.WriteFile(b.config, append(src, []byte("store:\n  url: mysql://u:"+pgPassword+"@h/db\n")...), 0o644); err != nil {
		t.Fatal(err)
	}
	r := run(t, "", "health", "--config", b.config)
	want := b.config + ":" + strconv.Itoa(lines+2) + ":8: store.url: the scheme \"mysql\" is not a store"
	if r.code != cli.ExitUsage || !strings.Contains(r.stderr, want) {
		t.Errorf("exit %d, want %d with %q\nstderr:\n%s", r.code, cli.ExitUsage, want, r.stderr)
	}
	noPassword(t, "the config error", r.stdout, r.stderr)
}

// TestStoreURLEnv: $AGENTRT_STORE_URL selects the store when --store is
// not given.
func TestStoreURLEnv(t *testing.T) {
	dsn := postgresURL(t)
	b := setup(t)
	t.Setenv(config.StoreURLEnv, dsn)
	r := runOK(t, "", "run", "--config", b.config, "--json", "Where is order 1042?")
	noPassword(t, "run --json", r.stdout, r.stderr)
	if _, err := os.Stat(filepath.Join(b.dir, ".agentrt", "agentrt.db")); err == nil {
		t.Error("the run made a SQLite file: $AGENTRT_STORE_URL was not used")
	}
	r = runOK(t, "", "doctor", "--config", b.config, "--json")
	var rep cli.DoctorReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatal(err)
	}
	if want := "postgres " + config.StoreLocation(dsn); rep.Store != want {
		t.Errorf("doctor's store = %q, want %q", rep.Store, want)
	}
	noPassword(t, "doctor --json", r.stdout, r.stderr)
}

// TestPostgresReadyz: /readyz answers 503 store_unavailable while the
// database refuses connections (every connection of the node cut, new
// ones refused), and 200 again once it accepts them, with nothing
// restarted.
func TestPostgresReadyz(t *testing.T) {
	t.Parallel()
	dsn := postgresURL(t)
	b := setup(t)
	ctx := context.Background()
	cfg, _, err := configure.Load(b.config)
	if err != nil {
		t.Fatal(err)
	}
	st, err := pgstore.Open(ctx, dsn, pgstore.Options{MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	cfg.Store, cfg.StoreLocation = st, config.StoreLocation(dsn)
	rt, err := agentrt.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Stop(context.Background()) })
	api, err := httpapi.New(rt, httpapi.Config{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api.Handler())
	t.Cleanup(srv.Close)
	readyz := func() (int, string) {
		t.Helper()
		resp, err := http.Get(srv.URL + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if code, body := readyz(); code != http.StatusOK {
		t.Fatalf("readyz = %d %s before the database went away", code, body)
	}

	u, _ := url.Parse(dsn)
	db := strings.TrimPrefix(u.Path, "/")
	admin, err := sql.Open("pgx", testenv.PostgresAdmin(t))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	exec := func(q string) {
		t.Helper()
		if _, err := admin.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec("ALTER DATABASE " + db + " ALLOW_CONNECTIONS false")
	exec("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '" + db + "'")
	t.Cleanup(func() { admin.Exec("ALTER DATABASE " + db + " ALLOW_CONNECTIONS true") })
	code, body := readyz()
	if code != http.StatusServiceUnavailable || !strings.Contains(body, apitype.ReadyStoreFailed) {
		t.Errorf("readyz with the database refusing connections = %d %s, want 503 %s", code, body, apitype.ReadyStoreFailed)
	}
	h := rt.Health(ctx)
	if h.Status != apitype.HealthUnhealthy || h.Store.Reachable {
		t.Errorf("health with the database refusing connections = %s, store %+v", h.Status, h.Store)
	}
	noPassword(t, "health", h.Store.Error, strings.Join(h.Problems, "\n"))

	exec("ALTER DATABASE " + db + " ALLOW_CONNECTIONS true")
	if code, body := readyz(); code != http.StatusOK {
		t.Errorf("readyz once the database accepts connections again = %d %s, want 200", code, body)
	}
}

// TestPostgresServe: serve with $AGENTRT_STORE_URL names the store in its
// banner and its health by the URL without the password, which neither
// its output nor its logs hold.
func TestPostgresServe(t *testing.T) {
	t.Parallel()
	dsn := postgresURL(t)
	bin := buildAgentrt(t)
	b := setup(t)
	b.env = []string{config.StoreURLEnv + "=" + dsn}
	s := startServe(t, bin, b, "--log-format", "text")
	if want := ", store " + config.StoreLocation(dsn) + ")"; !strings.HasSuffix(s.banner, want) {
		t.Errorf("banner = %q, want it to end with %q", s.banner, want)
	}
	var h apitype.Health
	s.request(t, "GET", "/v1/health", "", &h)
	if h.Store.Driver != "postgres" || h.Store.Location != config.StoreLocation(dsn) {
		t.Errorf("health's store = %+v", h.Store)
	}
	s.stop(t)
	noPassword(t, "serve", s.banner, s.stderr.String())
}

// TestPostgresNoStore: the commands that read a store refuse a database
// no agentrt has migrated, as they refuse a data directory without a
// store, and make nothing there; run makes the store.
func TestPostgresNoStore(t *testing.T) {
	t.Parallel()
	b := setup(t)
	url := testenv.Postgres(t)
	for _, args := range [][]string{{"health"}, {"requests", "list"}, {"tasks", "list"}} {
		r := run(t, "", append(args, "--config", b.config, "--store", url)...)
		if r.code != cli.ExitUsage || !strings.Contains(r.stderr, "no agentrt store in postgres://") {
			t.Errorf("agentrt %s on an empty database: exit %d, stderr %q; want 2, no agentrt store", strings.Join(args, " "), r.code, r.stderr)
		}
	}
	db, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var tables int
	if err := db.QueryRow(`SELECT count(*) FROM pg_catalog.pg_tables WHERE schemaname = 'public'`).Scan(&tables); err != nil {
		t.Fatal(err)
	}
	if tables != 0 {
		t.Errorf("the refused commands made %d tables", tables)
	}
	runOK(t, "", "run", "--config", b.config, "--store", url, "--agent", "support", question)
	runOK(t, "", "requests", "list", "--config", b.config, "--store", url)
}
