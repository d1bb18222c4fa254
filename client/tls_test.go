package client_test

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/client"
	"github.com/agentrt/agentrt/event"
)

// TestClientOverHTTPS: a client given an *http.Client that trusts the
// server's certificate (WithHTTPClient) works over HTTPS and HTTP/2,
// its event stream too; one that does not trust it gets a
// *ConnectError that names the certificate.
func TestClientOverHTTPS(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	srv := httptest.NewUnstartedServer(b.server.Config.Handler)
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}
	t.Cleanup(tr.CloseIdleConnections)
	c, err := client.New(srv.URL, testToken, client.WithHTTPClient(&http.Client{Transport: tr}))
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if h, err := c.Health(ctx); err != nil || h.Status != apitype.HealthOK {
		t.Fatalf("Health over HTTPS = %+v, %v", h, err)
	}
	res, err := c.SubmitTurn(ctx, &apitype.SubmitTurnRequest{Agent: "support", Input: "go"})
	if err != nil {
		t.Fatal(err)
	}
	s, err := c.Events(ctx, client.EventFilter{TurnID: res.TurnID}, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for {
		e, err := s.Next(ctx)
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
		if e.Type == event.ActionRequired {
			break
		}
	}

	untrusted, err := client.New(srv.URL, testToken)
	if err != nil {
		t.Fatal(err)
	}
	_, err = untrusted.Health(ctx)
	var ce *client.ConnectError
	var unknown x509.UnknownAuthorityError
	if !errors.As(err, &ce) || !errors.As(err, &unknown) {
		t.Errorf("Health of a client that does not trust the certificate: %v (%T), want a *ConnectError of an unknown authority", err, err)
	}
}
