package config

import (
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/agentrt/agentrt/internal/yamlpos"
)

// Store is the store section: which store the runtime keeps its records
// in. The zero Store is the embedded SQLite database in the data
// directory.
type Store struct {
	// URL is a PostgreSQL connection URL (postgres://user@host:5432/db);
	// empty: the embedded SQLite database. It may hold a password: never
	// print it; StoreLocation gives what may be shown.
	URL string
	// MaxConns caps the read pool of a PostgreSQL store; zero means the
	// driver's default.
	MaxConns int
	// StatementTimeout bounds every statement on the PostgreSQL server;
	// zero means the driver's default, StatementTimeoutOff none.
	StatementTimeout time.Duration
}

// StatementTimeoutOff is Store.StatementTimeout for "statement_timeout:
// off".
const StatementTimeoutOff time.Duration = -1

// StoreURLEnv names the environment variable that selects the store
// (over the config's store.url; a --store flag overrides both).
const StoreURLEnv = "AGENTRT_STORE_URL"

// storeKeys are the store section's keys.
var storeKeys = []string{"url", "max_conns", "statement_timeout"}

// maxStoreConns bounds store.max_conns.
const maxStoreConns = 1000

// store decodes the store section. A null section leaves the default.
func (d *decoder) store(e yamlpos.Field, x *Store) {
	m, _ := d.mapping(e, "store")
	for _, f := range m.Fields() {
		label := "store." + f.Key
		switch f.Key {
		case "url":
			s, st := d.str(f, label)
			if st != valOK {
				continue
			}
			if _, err := ParseStoreURL(s); err != nil {
				d.errorAt(f.Value().Pos, "%s: %v", label, err)
				continue
			}
			x.URL = s
		case "max_conns":
			if n, st := d.count(f, label, 1, maxStoreConns); st == valOK {
				x.MaxConns = int(n)
			}
		case "statement_timeout":
			if v, st := d.durationOr(f, label, "off", StatementTimeoutOff); st == valOK {
				x.StatementTimeout = v
			}
		default:
			d.unknownKey(f, "store", storeKeys)
		}
	}
}

// ParseStoreURL parses a store URL: postgres:// or postgresql://. Its
// errors never quote the URL, which may hold a password.
func ParseStoreURL(s string) (*url.URL, error) {
	if s == "" {
		return nil, errors.New("empty; leave the store out for the embedded SQLite database")
	}
	u, err := url.Parse(s)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // without the URL
		}
		return nil, fmt.Errorf("not a URL (%v); want postgres://USER@HOST:PORT/DATABASE", err)
	}
	switch u.Scheme {
	case "postgres", "postgresql":
	case "":
		return nil, errors.New("not a URL; want postgres://USER@HOST:PORT/DATABASE")
	default:
		return nil, fmt.Errorf("the scheme %q is not a store: want postgres://USER@HOST:PORT/DATABASE (leave the store out for the embedded SQLite database)", u.Scheme)
	}
	if u.Opaque != "" {
		return nil, errors.New("not a URL with a host; want postgres://USER@HOST:PORT/DATABASE")
	}
	return u, nil
}

// StoreLocation is what may be shown of a store URL: its scheme, host,
// port and database, without the user, the password or the query (which
// may hold a password too). It is "" for an empty URL.
func StoreLocation(s string) string {
	if s == "" {
		return ""
	}
	u, err := ParseStoreURL(s)
	if err != nil {
		return "(an invalid store URL)"
	}
	shown := url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}
	return shown.String()
}

// StoreSecrets returns the passwords a store URL holds (in its user
// information or its query), for the runtime to redact wherever they
// might appear.
func StoreSecrets(s string) []string {
	u, err := url.Parse(s)
	if err != nil {
		return nil
	}
	var out []string
	if p, ok := u.User.Password(); ok && p != "" {
		out = append(out, p)
	}
	for _, p := range u.Query()["password"] {
		if p != "" {
			out = append(out, p)
		}
	}
	return out
}
