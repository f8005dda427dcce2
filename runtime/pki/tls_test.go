package pki

import (
	"crypto/tls"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// queuedConn is one end of a net.Pipe whose writes return at once and are
// carried over by a goroutine, as over a socket with a buffer: a side
// sending an alert does not wait for the other, itself busy writing, to
// read it.
type queuedConn struct {
	net.Conn
	queue chan []byte
	done  chan struct{}
	once  sync.Once
}

func queued(c net.Conn) *queuedConn {
	q := &queuedConn{Conn: c, queue: make(chan []byte, 64), done: make(chan struct{})}
	go func() {
		for {
			select {
			case p := <-q.queue:
				if _, err := c.Write(p); err != nil {
					return
				}
			case <-q.done:
				return
			}
		}
	}()
	return q
}

func (q *queuedConn) Write(p []byte) (int, error) {
	select {
	case q.queue <- append([]byte(nil), p...):
		return len(p), nil
	case <-q.done:
		return 0, net.ErrClosed
	}
}

func (q *queuedConn) Close() error {
	q.once.Do(func() { close(q.done) })
	return q.Conn.Close()
}

// handshake runs a TLS handshake between server and client over a pipe,
// then has the server send one byte, which the client reads: so a client
// certificate the server turns down (after the client's side of a TLS 1.3
// handshake is done) shows in the client's error too.
func handshake(t *testing.T, server, client *tls.Config) (clientErr, serverErr error, peer tls.ConnectionState) {
	t.Helper()
	p1, p2 := net.Pipe()
	sc, cc := queued(p1), queued(p2)
	deadline := time.Now().Add(5 * time.Second)
	_ = sc.SetDeadline(deadline)
	_ = cc.SetDeadline(deadline)
	srv, cli := tls.Server(sc, server), tls.Client(cc, client)

	done := make(chan error, 1)
	go func() {
		err := srv.Handshake()
		if err == nil {
			_, err = srv.Write([]byte{1})
		}
		if err != nil {
			sc.Close() // so that a client still reading sees the end
		}
		done <- err
	}()
	clientErr = cli.Handshake()
	if clientErr == nil {
		_, clientErr = io.ReadFull(cli, make([]byte, 1))
	}
	cc.Close()
	serverErr = <-done
	sc.Close()
	return clientErr, serverErr, srv.ConnectionState()
}

func keyPair(t *testing.T, l Leaf) tls.Certificate {
	t.Helper()
	c, err := tls.X509KeyPair(l.CertPEM, l.KeyPEM)
	if err != nil {
		t.Fatalf("X509KeyPair: %v", err)
	}
	return c
}

func TestServerHandshake(t *testing.T) {
	now := time.Now()
	ca := newCA(t, "c-ca", now, CALifetime)
	other := newCA(t, "c-ca", now, CALifetime)
	leaf := server(t, ca, []string{"c-rw.ns.svc", "*.c-hl.ns.svc"}, now)
	serverCfg := &tls.Config{Certificates: []tls.Certificate{keyPair(t, leaf)}, SessionTicketsDisabled: true}

	for _, tc := range []struct {
		name       string
		serverName string
		roots      *CA
		wantErr    string // part of the client's error; "" when it must connect
	}{
		{"wildcard", "c-0.c-hl.ns.svc", ca, ""},
		{"exact name", "c-rw.ns.svc", ca, ""},
		{"another service", "c-0.other-hl.ns.svc", ca, "not c-0.other-hl.ns.svc"},
		{"two labels under the wildcard", "a.c-0.c-hl.ns.svc", ca, "not a.c-0.c-hl.ns.svc"},
		{"another CA trusted", "c-0.c-hl.ns.svc", other, "unknown authority"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pool, err := Pool(tc.roots.CertPEM)
			if err != nil {
				t.Fatal(err)
			}
			cerr, serr, _ := handshake(t, serverCfg, &tls.Config{RootCAs: pool, ServerName: tc.serverName})
			if tc.wantErr == "" && (cerr != nil || serr != nil) {
				t.Errorf("handshake: client %v, server %v", cerr, serr)
			}
			if tc.wantErr != "" && (cerr == nil || !strings.Contains(cerr.Error(), tc.wantErr)) {
				t.Errorf("client error %v; want one containing %q", cerr, tc.wantErr)
			}
		})
	}
}

func TestClientHandshake(t *testing.T) {
	now := time.Now()
	ca := newCA(t, "c-ca", now, CALifetime)
	other := newCA(t, "c-ca", now, CALifetime)
	srvLeaf := server(t, ca, []string{"*.c-hl.ns.svc"}, now)
	pool, err := Pool(ca.CertPEM)
	if err != nil {
		t.Fatal(err)
	}
	serverCfg := &tls.Config{
		Certificates:           []tls.Certificate{keyPair(t, srvLeaf)},
		ClientAuth:             tls.RequireAndVerifyClientCert,
		ClientCAs:              pool,
		SessionTicketsDisabled: true,
	}

	for _, tc := range []struct {
		name    string
		certs   []tls.Certificate
		wantErr string // part of the server's error; "" when it must admit the client
	}{
		{"client certificate", []tls.Certificate{keyPair(t, client(t, ca, "postgres", now))}, ""},
		{"another CA's client certificate", []tls.Certificate{keyPair(t, client(t, other, "postgres", now))}, "unknown authority"},
		{"a server certificate", []tls.Certificate{keyPair(t, srvLeaf)}, "incompatible key usage"},
		{"no certificate", nil, "didn't provide a certificate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cerr, serr, st := handshake(t, serverCfg, &tls.Config{
				RootCAs:      pool,
				ServerName:   "c-0.c-hl.ns.svc",
				Certificates: tc.certs,
			})
			if tc.wantErr != "" {
				if serr == nil || !strings.Contains(serr.Error(), tc.wantErr) {
					t.Errorf("server error %v; want one containing %q", serr, tc.wantErr)
				}
				return
			}
			if cerr != nil || serr != nil {
				t.Fatalf("handshake: client %v, server %v", cerr, serr)
			}
			// PostgreSQL maps this CN to the user.
			if len(st.PeerCertificates) == 0 || st.PeerCertificates[0].Subject.CommonName != "postgres" {
				t.Errorf("server saw peer %v; want CN postgres", st.PeerCertificates)
			}
		})
	}
}
