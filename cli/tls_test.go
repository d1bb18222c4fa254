package cli_test

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/cli"
)

// testCert writes a self-signed ECDSA certificate for 127.0.0.1 and
// localhost, and its key, as PEM files in dir; pool trusts it.
func testCert(t *testing.T, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "agentrt test"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:              []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

// logLines decodes serve's JSON log lines.
func logLines(t *testing.T, stderr string) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(stderr))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			continue // not a log line (a message of the command)
		}
		out = append(out, m)
	}
	return out
}

// plainWarning is the start of the warning serve logs when it serves
// plain HTTP on an address other than loopback.
const plainWarning = "serving plain HTTP on an address other than loopback"

// TestServeTLS: with --tls-cert and --tls-key serve answers over HTTPS
// a client that trusts the certificate (and only such a client), and
// logs each request in its JSON log without the token; the CLI reaches
// it given the certificate with --ca-cert or SSL_CERT_FILE. Serving
// plain HTTP on 0.0.0.0 logs a warning; on 127.0.0.1, or over TLS on
// 0.0.0.0, it does not.
func TestServeTLS(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the binary; skipped with -short")
	}
	bin := buildAgentrt(t)
	b := setup(t)
	certFile, keyFile, pool := testCert(t, t.TempDir())

	s := startServe(t, bin, b, "--tls-cert", certFile, "--tls-key", keyFile)
	if !strings.HasPrefix(s.url, "https://127.0.0.1:") {
		t.Fatalf("serve's URL is %s, want https://127.0.0.1:…", s.url)
	}
	if _, err := http.Get(s.url + "/healthz"); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("a client without the certificate: %v, want a certificate error", err)
	}
	s.client = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	defer s.client.CloseIdleConnections()
	var h apitype.Health
	s.request(t, http.MethodGet, "/v1/health", "", &h)
	if h.Status != apitype.HealthOK {
		t.Errorf("health over HTTPS: %q", h.Status)
	}

	// The CLI: --ca-cert, SSL_CERT_FILE, neither.
	r := runOK(t, "", "health", "--json", "--server", s.url, "--token", s.token, "--ca-cert", certFile)
	if err := json.Unmarshal([]byte(r.stdout), &h); err != nil || h.Status != apitype.HealthOK {
		t.Errorf("health --ca-cert: %v, %q", err, r.stdout)
	}
	cmd := exec.Command(bin, "health", "--json", "--server", s.url, "--token", s.token)
	cmd.Env = append(os.Environ(), "SSL_CERT_FILE="+certFile)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("health with SSL_CERT_FILE: %v\n%s", err, out)
	}
	r = run(t, "", "health", "--server", s.url, "--token", s.token)
	if r.code != cli.ExitFailed || !strings.Contains(r.stdout+r.stderr, "certificate") {
		t.Errorf("health without the certificate: exit %d, %q %q; want exit 1 naming the certificate", r.code, r.stdout, r.stderr)
	}
	r = run(t, "", "health", "--server", strings.Replace(s.url, "https", "http", 1), "--token", s.token, "--ca-cert", certFile)
	if r.code != cli.ExitUsage || !strings.Contains(r.stderr, "--ca-cert") {
		t.Errorf("--ca-cert with an http:// server: exit %d, %q; want 2 naming --ca-cert", r.code, r.stderr)
	}
	s.stop(t)

	var access, warned bool
	for _, l := range logLines(t, s.stderr.String()) {
		if l["msg"] == "http request" && l["route"] == "/v1/health" && l["status"] == 200.0 && l["principal"] == apitype.APIPrincipal {
			access = true
		}
		warned = warned || strings.HasPrefix(l["msg"].(string), plainWarning)
	}
	if !access || warned {
		t.Errorf("serve's log: an access line of GET /v1/health %t (want true), the plain-HTTP warning %t (want false):\n%s", access, warned, s.stderr)
	}
	if strings.Contains(s.stderr.String(), s.token) {
		t.Errorf("serve's log holds the token:\n%s", s.stderr)
	}

	// The warning: only plain HTTP beyond loopback.
	for _, tt := range []struct {
		name string
		args []string
		want bool
	}{
		{"plain on 0.0.0.0", []string{"--listen", "0.0.0.0:0"}, true},
		{"plain on 127.0.0.1", nil, false},
		{"TLS on 0.0.0.0", []string{"--listen", "0.0.0.0:0", "--tls-cert", certFile, "--tls-key", keyFile}, false},
	} {
		s := startServe(t, bin, b, tt.args...)
		s.stop(t)
		var warning map[string]any
		for _, l := range logLines(t, s.stderr.String()) {
			if strings.HasPrefix(l["msg"].(string), plainWarning) {
				warning = l
			}
		}
		if (warning != nil) != tt.want {
			t.Errorf("%s: warned %t, want %t:\n%s", tt.name, warning != nil, tt.want, s.stderr)
			continue
		}
		// The unspecified address may be reported as IPv6's.
		if addr, _ := warning["addr"].(string); warning != nil && (warning["level"] != "WARN" || !strings.HasPrefix(addr, "0.0.0.0:") && !strings.HasPrefix(addr, "[::]:") || !strings.Contains(warning["msg"].(string), "--tls-cert")) {
			t.Errorf("%s: the warning %v, want level WARN, the address and the flags to use", tt.name, warning)
		}
	}
}

// TestServeTLSFlags: --tls-cert without --tls-key, or the other way
// round, or files that are no certificate and key, exit 2 with the
// reason, before serve binds or creates a token.
func TestServeTLSFlags(t *testing.T) {
	t.Parallel()
	b := setup(t)
	dir := t.TempDir()
	certFile, keyFile, _ := testCert(t, dir)
	junk := filepath.Join(dir, "junk.pem")
	if err := os.WriteFile(junk, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name  string
		args  []string
		words []string
	}{
		{"cert alone", []string{"--tls-cert", certFile}, []string{"--tls-cert needs --tls-key", "give both"}},
		{"key alone", []string{"--tls-key", keyFile}, []string{"--tls-key needs --tls-cert", "give both"}},
		{"not a certificate", []string{"--tls-cert", junk, "--tls-key", keyFile}, []string{"loading --tls-cert", junk}},
		{"missing file", []string{"--tls-cert", certFile, "--tls-key", filepath.Join(dir, "nope.pem")}, []string{"loading --tls-cert", "nope.pem"}},
		{"key of another cert", []string{"--tls-cert", certFile, "--tls-key", otherKey(t, dir)}, []string{"loading --tls-cert", "private key does not match"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := run(t, "", append([]string{"serve", "--config", b.config, "--listen", "127.0.0.1:0"}, tt.args...)...)
			if r.code != cli.ExitUsage {
				t.Errorf("exit %d, want %d; stderr %q", r.code, cli.ExitUsage, r.stderr)
			}
			for _, w := range tt.words {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr %q does not say %q", r.stderr, w)
				}
			}
		})
	}
	if _, err := os.Stat(filepath.Join(b.dir, ".agentrt", "api-token")); err == nil {
		t.Errorf("a refused serve created the API token")
	}
}

// otherKey writes the key of another certificate into dir.
func otherKey(t *testing.T, dir string) string {
	t.Helper()
	other := filepath.Join(dir, "other")
	if err := os.Mkdir(other, 0o700); err != nil {
		t.Fatal(err)
	}
	_, key, _ := testCert(t, other)
	return key
}
