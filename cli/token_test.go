package cli_test

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/cli"
	"github.com/agentrt/agentrt/runtype"
)

// TestTokenCommands: tokens made, listed, rotated and revoked on the
// data directory hold for a daemon serving it; the same commands work
// over --server with an admin's token and are refused with another's;
// bad input exits 2, an unknown token 1.
func TestTokenCommands(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var k apitype.NewToken
	out := runOK(t, "", "token", "create", "--principal", "alice", "--role", "operator", "--name", "laptop", "--config", b.config, "--json").stdout
	if err := json.Unmarshal([]byte(out), &k); err != nil {
		t.Fatalf("token create --json printed %q: %v", out, err)
	}
	if k.TenantID != apitype.DefaultTenant || k.PrincipalID != "alice" || k.Role != runtype.APIRoleOperator || !strings.HasPrefix(k.Token, "art_") {
		t.Errorf("created %+v", k)
	}
	text := runOK(t, "", "token", "create", "--tenant", "acme", "--principal", "ci", "--role", "viewer", "--config", b.config).stdout
	if !regexp.MustCompile(`^token tok_[0-9A-Z]{26} for ci, viewer of tenant acme \(shown once; keep it now\):\n  art_[0-9a-f]{48}\n$`).MatchString(text) {
		t.Errorf("token create printed %q", text)
	}

	list := runOK(t, "", "token", "list", "--config", b.config).stdout
	if !strings.Contains(list, k.TokenID) || !strings.Contains(list, `"prefix":"`+k.Prefix+`"`) || strings.Contains(list, k.Token) || !strings.Contains(list, "acme") {
		t.Errorf("token list printed:\n%s", list)
	}
	// JSON Lines, one token a line, as GET /v1/tokens lists them.
	acme := runOK(t, "", "token", "list", "--tenant", "acme", "--config", b.config, "--json").stdout
	var ci apitype.TokenRead
	if err := json.Unmarshal([]byte(acme), &ci); err != nil || strings.Count(acme, "\n") != 1 || ci.PrincipalID != "ci" || ci.TenantID != "acme" {
		t.Errorf("acme's tokens = %q (%v), want ci's alone", acme, err)
	}

	d := b.serve(t)
	get := func(token, path string) (int, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, d.url+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(raw)
	}
	if code, body := get(k.Token, "/v1/requests"); code != http.StatusOK {
		t.Fatalf("alice's token at the daemon: %d %s", code, body)
	}
	var rotated apitype.NewToken
	if err := json.Unmarshal([]byte(runOK(t, "", "token", "rotate", k.TokenID, "--config", b.config, "--json").stdout), &rotated); err != nil {
		t.Fatal(err)
	}
	if code, body := get(k.Token, "/v1/requests"); code != http.StatusUnauthorized || !strings.Contains(body, "revoked bearer token") {
		t.Errorf("the rotated token at the daemon: %d %s, want 401 revoked", code, body)
	}
	if code, _ := get(rotated.Token, "/v1/requests"); code != http.StatusOK {
		t.Errorf("the new token at the daemon: %d", code)
	}

	// Over --server: the daemon's admin token (its api-token file) may,
	// an operator's may not.
	remote := runOK(t, "", "token", "revoke", rotated.TokenID, "--server", d.url, "--config", b.config).stdout
	if !strings.HasPrefix(remote, "revoked "+rotated.TokenID+" (alice, operator of tenant default) at ") {
		t.Errorf("token revoke --server printed %q", remote)
	}
	if code, _ := get(rotated.Token, "/v1/requests"); code != http.StatusUnauthorized {
		t.Errorf("the revoked token at the daemon: %d, want 401", code)
	}
	var op apitype.NewToken
	if err := json.Unmarshal([]byte(runOK(t, "", "token", "create", "--principal", "olga", "--role", "operator", "--server", d.url, "--token", d.token, "--json").stdout), &op); err != nil {
		t.Fatal(err)
	}
	r := run(t, "", "token", "list", "--server", d.url, "--token", op.Token)
	if r.code != cli.ExitFailed || !strings.Contains(r.stderr, "role operator may not call GET /v1/tokens; it needs admin") {
		t.Errorf("token list with an operator's token: exit %d, stderr %q", r.code, r.stderr)
	}

	for _, tt := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"token", "create", "--role", "viewer"}, cli.ExitUsage, "needs --principal and --role"},
		{[]string{"token", "create", "--principal", "x", "--role", "root"}, cli.ExitUsage, `unknown role "root"`},
		{[]string{"token", "create", "--principal", "a b", "--role", "viewer"}, cli.ExitUsage, "invalid principalId"},
		{[]string{"token", "revoke", "tok_nope"}, cli.ExitFailed, "no token tok_nope"},
		{[]string{"token", "rotate", k.TokenID}, cli.ExitFailed, "was revoked"},
		{[]string{"token", "revoke"}, cli.ExitUsage, "takes one TOKEN_ID"},
	} {
		r := run(t, "", append(tt.args, "--config", b.config)...)
		if r.code != tt.code || !strings.Contains(r.stderr, tt.want) {
			t.Errorf("agentrt %s: exit %d, stderr %q; want %d and %q", strings.Join(tt.args, " "), r.code, r.stderr, tt.code, tt.want)
		}
	}
}

// TestServeTokenFileIsAdmin: the token agentrt serve prints on a first
// start is the default tenant's admin; a token already in the api-token
// file of an install made before tokens were kept in the store becomes
// one on the next start, and stays one token however often the daemon
// starts; revoked with agentrt token, the next start refuses it.
func TestServeTokenFileIsAdmin(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the binary; skipped with -short")
	}
	bin := buildAgentrt(t)
	b := setup(t)
	tokens := func(s *server) []apitype.TokenRead {
		t.Helper()
		var list struct{ Tokens []apitype.TokenRead }
		s.request(t, http.MethodGet, "/v1/tokens", "", &list) // 200: an admin's
		return list.Tokens
	}
	s := startServe(t, bin, b)
	first := tokens(s)
	if len(first) != 1 || first[0].Role != runtype.APIRoleAdmin || first[0].TenantID != apitype.DefaultTenant ||
		first[0].PrincipalID != apitype.APIPrincipal || !strings.HasPrefix(s.token, first[0].Prefix) {
		t.Errorf("after a first start: %+v, want the printed token as the default tenant's admin", first)
	}
	s.stop(t)

	// An older install's file: a token the store has never seen.
	old := agentrt.GenerateToken()
	if err := os.WriteFile(filepath.Join(b.dir, ".agentrt", "api-token"), []byte(old+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var id string
	for range 2 {
		s = startServe(t, bin, b)
		if s.token != old {
			t.Fatalf("serve uses %q, want the file's token", s.token[:12])
		}
		list := tokens(s)
		if len(list) != 2 || list[1].Role != runtype.APIRoleAdmin || !strings.HasPrefix(old, list[1].Prefix) {
			t.Fatalf("tokens after a start with the older file: %+v, want the file's token made an admin, once", list)
		}
		id = list[1].TokenID
		s.stop(t)
	}
	runOK(t, "", "token", "revoke", id, "--config", b.config)
	s = startServe(t, bin, b)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, s.url+"/v1/health", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+s.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(string(raw), "revoked bearer token") {
		t.Errorf("the revoked file token after a restart: %d %s, want 401 revoked", resp.StatusCode, raw)
	}
	s.stop(t)
}
