package certs

import (
	"bytes"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/planner/contract"
)

// held is what a member or client holds of the cluster's Secrets.
type held struct {
	serverCert, serverKey, serverCA []byte
	clientCert, clientKey, clientCA []byte
}

func (b *bed) held(t *testing.T, cluster string) held {
	s, c := b.secret(t, contract.ServerTLSSecret(cluster)), b.secret(t, contract.ClientTLSSecret(cluster))
	return held{s.Data["tls.crt"], s.Data["tls.key"], s.Data["ca.crt"], c.Data["tls.crt"], c.Data["tls.key"], c.Data["ca.crt"]}
}

// handshake runs a TLS handshake at now between a server holding
// server's material and a client holding client's, each verifying the
// other.
func handshake(t *testing.T, server, client held, name string, now func() time.Time) error {
	t.Helper()
	sc, err := tls.X509KeyPair(server.serverCert, server.serverKey)
	if err != nil {
		t.Fatal(err)
	}
	cc, err := tls.X509KeyPair(client.clientCert, client.clientKey)
	if err != nil {
		t.Fatal(err)
	}
	// Loopback TCP, not net.Pipe: the handshake's last writes (session
	// tickets, close_notify) need a buffer to land in.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	errs := make(chan error, 1)
	go func() {
		a, err := ln.Accept()
		if err != nil {
			errs <- err
			return
		}
		srv := tls.Server(a, &tls.Config{Certificates: []tls.Certificate{sc}, ClientAuth: tls.RequireAndVerifyClientCert,
			ClientCAs: pool(t, server.serverCA), MinVersion: tls.VersionTLS12, Time: now})
		_ = srv.SetDeadline(time.Now().Add(5 * time.Second))
		errs <- srv.Handshake()
		_ = a.Close()
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	cli := tls.Client(c, &tls.Config{Certificates: []tls.Certificate{cc}, RootCAs: pool(t, client.clientCA), ServerName: name,
		MinVersion: tls.VersionTLS12, Time: now})
	_ = cli.SetDeadline(time.Now().Add(5 * time.Second))
	cerr := cli.Handshake()
	if cerr == nil {
		// TLS 1.3 checks the client's certificate after the client's
		// handshake returns: a read sees the server's verdict.
		_ = cli.SetReadDeadline(time.Now().Add(2 * time.Second))
		_, rerr := cli.Read(make([]byte, 1))
		if rerr != nil && !isEOF(rerr) {
			cerr = rerr
		}
	}
	_ = c.Close()
	if serr := <-errs; serr != nil {
		return serr
	}
	return cerr
}

// isEOF: the server closed after a good handshake.
func isEOF(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || strings.Contains(err.Error(), "connection reset")
}

// A CA past two thirds of its lifetime is replaced without cutting anyone
// off: first trusted beside the old one, then, after the overlap, signing
// the leaves (issued again at once), the old one trusted until it
// expires. At every pass, a member or client still holding what the pass
// before wrote and one holding what it writes verify each other, in both
// directions.
func testEnsureReplacesTheCA(t *testing.T, b *bed) {
	clk := newClock()
	t0 := clk.now()
	k := b.keeper(t, "ca", clk) // leaves of 3h
	k.CALifetime, k.CAOverlap = 30*time.Hour, time.Hour
	b.ensure(t, k)
	first := mustCA(t, b.secret(t, "ca-ca"))
	name := contract.PostgresMemberServerName("ca", b.ns, "ca-0")
	var introduced, switched time.Time
	prev := b.held(t, "ca")
	for clk.now().Before(t0.Add(31 * time.Hour)) {
		clk.advance(20 * time.Minute)
		_, written := b.ensure(t, k)
		cur := b.held(t, "ca")
		caSecret := b.secret(t, "ca-ca")
		switch {
		case introduced.IsZero() && len(caSecret.Data[caKeyNextCert]) > 0:
			introduced = clk.now()
			for _, l := range [][]byte{cur.serverCert, cur.clientCert} {
				if c := parseCert(t, l); c.CheckSignatureFrom(first.Cert) != nil {
					t.Errorf("at +%s: a leaf is signed by the new CA as soon as it is introduced", clk.now().Sub(t0))
				}
			}
			if n := len(certsOf(t, cur.serverCA)); n != 2 {
				t.Errorf("at +%s: the server's ca.crt holds %d CAs, want the old and the new", clk.now().Sub(t0), n)
			}
		case !introduced.IsZero() && switched.IsZero() && !bytes.Equal(caSecret.Data["tls.crt"], first.CertPEM):
			switched = clk.now()
			next := mustCA(t, caSecret)
			for _, l := range [][]byte{cur.serverCert, cur.clientCert} {
				if c := parseCert(t, l); c.CheckSignatureFrom(next.Cert) != nil {
					t.Errorf("at +%s: a leaf is not signed by the new CA after the switch (wrote %v)", clk.now().Sub(t0), written)
				}
			}
			if !bytes.Equal(caSecret.Data[caKeyPreviousCert], first.CertPEM) || len(caSecret.Data[caKeyNextCert]) > 0 {
				t.Errorf("at +%s: after the switch the CA Secret keeps %v", clk.now().Sub(t0), sortedKeys(caSecret.Data))
			}
		}
		for _, pair := range []struct {
			what           string
			server, client held
		}{{"old server, new client", prev, cur}, {"new server, old client", cur, prev}, {"new both", cur, cur}} {
			if err := handshake(t, pair.server, pair.client, name, clk.now); err != nil {
				t.Fatalf("at +%s (wrote %v): %s: %v", clk.now().Sub(t0), written, pair.what, err)
			}
		}
		prev = cur
	}
	// Due two thirds of the way through its validity (backdated by an
	// hour), switched an overlap later.
	if introduced.IsZero() || switched.IsZero() {
		t.Fatalf("introduced %v, switched %v: the CA was not replaced", introduced, switched)
	}
	due := first.Cert.NotBefore.Add(first.Cert.NotAfter.Sub(first.Cert.NotBefore) / 3 * 2)
	if introduced.Before(due) || introduced.After(due.Add(20*time.Minute)) {
		t.Errorf("introduced at +%s, want the first pass past +%s", introduced.Sub(t0), due.Sub(t0))
	}
	if got := switched.Sub(introduced); got < time.Hour || got > time.Hour+20*time.Minute {
		t.Errorf("switched %s after introducing, want just past the 1h overlap", got)
	}
	// Past the old CA's end (+29h) only the new one is trusted.
	if n := len(certsOf(t, prev.serverCA)); n != 1 {
		t.Errorf("at the end the server's ca.crt holds %d CAs, want the new one alone", n)
	}
}

// certsOf parses each certificate of a PEM bundle.
func certsOf(t *testing.T, bundle []byte) [][]byte {
	t.Helper()
	var out [][]byte
	rest := bundle
	for len(bytes.TrimSpace(rest)) > 0 {
		i := bytes.Index(rest[1:], []byte("-----BEGIN"))
		if i < 0 {
			out = append(out, rest)
			break
		}
		out = append(out, rest[:i+1])
		rest = rest[i+1:]
	}
	for _, c := range out {
		parseCert(t, c)
	}
	return out
}
