package certs

import (
	"crypto/tls"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/runtime/pki"
)

func TestClientConfig(t *testing.T) {
	now := time.Now()
	ca, err := pki.NewCA("test", now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := ca.IssueClient("postgres", now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	other, err := ca.IssueClient("postgres", now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	good := Material{CA: ca.CertPEM, ClientCert: leaf.CertPEM, ClientKey: leaf.KeyPEM}
	for _, tt := range []struct {
		name       string
		m          Material
		serverName string
		err        string
	}{
		{"good", good, "pg-rw.db.svc", ""},
		{"no server name", good, "", "no server name"},
		{"no CA", Material{ClientCert: leaf.CertPEM, ClientKey: leaf.KeyPEM}, "pg-rw.db.svc", "CA bundle: no certificate"},
		{"CA not a certificate", Material{CA: leaf.KeyPEM, ClientCert: leaf.CertPEM, ClientKey: leaf.KeyPEM}, "pg-rw.db.svc", "CA bundle: block 1"},
		{"another key", Material{CA: ca.CertPEM, ClientCert: leaf.CertPEM, ClientKey: other.KeyPEM}, "pg-rw.db.svc", "client certificate"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := tt.m.ClientConfig(tt.serverName)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.ServerName != tt.serverName || cfg.MinVersion != tls.VersionTLS12 || len(cfg.Certificates) != 1 || cfg.RootCAs == nil || cfg.InsecureSkipVerify {
				t.Errorf("config %+v", cfg)
			}
		})
	}
}

// testHandshake has ClientConfig reach a TLS server that serves the
// server Secret's certificate and requires a client certificate of the
// cluster's CA, as PostgreSQL with the written files does.
func testHandshake(t *testing.T, b *bed) {
	m, _ := b.ensure(t, b.keeper(t, "hs", nil))
	server := b.secret(t, "hs-server-tls")
	cert, err := tls.X509KeyPair(server.Data["tls.crt"], server.Data["tls.key"])
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert},
		ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool(t, server.Data["ca.crt"]), MinVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	type seen struct {
		cn  string
		err error
	}
	peers := make(chan seen, 1)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			tc := c.(*tls.Conn)
			_ = tc.SetDeadline(time.Now().Add(5 * time.Second))
			s := seen{err: tc.Handshake()}
			if s.err == nil {
				s.cn = tc.ConnectionState().PeerCertificates[0].Subject.CommonName
				_, s.err = tc.Write([]byte{1})
			}
			_ = tc.Close()
			peers <- s
		}
	}()
	for _, tt := range []struct {
		serverName string
		ok         bool
	}{
		{contract.PostgresMemberServerName("hs", b.ns, "hs-0"), true},
		{"hs-rw." + b.ns + ".svc", true},
		{"hs-ro", true},
		{"hs-0.other-hl." + b.ns + ".svc", false},
	} {
		t.Run(tt.serverName, func(t *testing.T) {
			cfg, err := m.ClientConfig(tt.serverName)
			if err != nil {
				t.Fatal(err)
			}
			c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", ln.Addr().String(), cfg)
			if err == nil {
				_ = c.SetDeadline(time.Now().Add(5 * time.Second))
				_, err = c.Read(make([]byte, 1)) // the server accepted the client's certificate
				_ = c.Close()
			}
			peer := <-peers
			if !tt.ok {
				if err == nil {
					t.Fatal("the handshake succeeded for a name the certificate does not carry")
				}
				return
			}
			if err != nil || peer.err != nil {
				t.Fatalf("handshake: client %v, server %v", err, peer.err)
			}
			if peer.cn != "postgres" {
				t.Errorf("server saw client %q, want postgres", peer.cn)
			}
		})
	}
}
