package client_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/agentrt/agentrt/client"
)

// A client of an agentrt serve that speaks HTTPS with a certificate of
// a private CA: the transport trusts the CA's certificate (read from
// its PEM file with x509.CertPool.AppendCertsFromPEM; here the test
// server's).
func ExampleWithHTTPClient() {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"status":"ok"}`) // a stand-in for GET /v1/health
	}))
	defer srv.Close()

	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
	defer tr.CloseIdleConnections()
	c, err := client.New(srv.URL, "a-token", client.WithHTTPClient(&http.Client{Transport: tr}))
	if err != nil {
		panic(err)
	}
	h, err := c.Health(context.Background())
	if err != nil {
		panic(err)
	}
	fmt.Println(h.Status)
	// Output: ok
}
