package pki

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/x509"
	"encoding/pem"
	"net"
	"slices"
	"strings"
	"testing"
	"time"
)

var (
	t0          = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	day         = 24 * time.Hour
	serverNames = []string{"c-rw.ns.svc", "*.c-hl.ns.svc", "c-rw.ns.svc.cluster.local"}
)

func newCA(t *testing.T, cn string, now time.Time, lifetime time.Duration) *CA {
	t.Helper()
	ca, err := NewCA(cn, now, lifetime)
	if err != nil {
		t.Fatalf("NewCA: %v", err)
	}
	return ca
}

func server(t *testing.T, ca *CA, names []string, now time.Time) Leaf {
	t.Helper()
	l, err := ca.IssueServer(names, now, LeafLifetime)
	if err != nil {
		t.Fatalf("IssueServer: %v", err)
	}
	return l
}

func client(t *testing.T, ca *CA, cn string, now time.Time) Leaf {
	t.Helper()
	l, err := ca.IssueClient(cn, now, LeafLifetime)
	if err != nil {
		t.Fatalf("IssueClient: %v", err)
	}
	return l
}

func mustCert(t *testing.T, certPEM []byte) *x509.Certificate {
	t.Helper()
	c, err := parseCert(certPEM)
	if err != nil {
		t.Fatalf("parse certificate: %v", err)
	}
	return c
}

func TestNewCA(t *testing.T) {
	ca := newCA(t, "c-ca", t0, CALifetime)
	c := ca.Cert
	if c.Subject.CommonName != "c-ca" || !c.IsCA || !c.BasicConstraintsValid {
		t.Errorf("subject %q, IsCA %v, basic constraints %v", c.Subject.CommonName, c.IsCA, c.BasicConstraintsValid)
	}
	if c.MaxPathLen != 0 || !c.MaxPathLenZero {
		t.Errorf("MaxPathLen %d, MaxPathLenZero %v; want 0, true", c.MaxPathLen, c.MaxPathLenZero)
	}
	if c.KeyUsage != x509.KeyUsageCertSign|x509.KeyUsageCRLSign {
		t.Errorf("KeyUsage %v", c.KeyUsage)
	}
	if !c.NotBefore.Equal(t0.Add(-time.Hour)) || !c.NotAfter.Equal(t0.Add(CALifetime)) {
		t.Errorf("valid %s to %s", c.NotBefore, c.NotAfter)
	}
	if len(c.SubjectKeyId) != 20 {
		t.Errorf("SubjectKeyId %x", c.SubjectKeyId)
	}
	if c.SerialNumber.Sign() <= 0 || c.SerialNumber.BitLen() > 128 {
		t.Errorf("serial %s", c.SerialNumber)
	}
	if pub, ok := c.PublicKey.(*ecdsa.PublicKey); !ok || pub.Curve.Params().Name != "P-256" {
		t.Errorf("public key %T", c.PublicKey)
	}
	if err := c.CheckSignatureFrom(c); err != nil {
		t.Errorf("not self-signed: %v", err)
	}
	if b, _ := pem.Decode(ca.KeyPEM); b == nil || b.Type != "PRIVATE KEY" {
		t.Errorf("KeyPEM is not a PRIVATE KEY block")
	}
	if other := newCA(t, "c-ca", t0, CALifetime); other.Cert.SerialNumber.Cmp(c.SerialNumber) == 0 {
		t.Errorf("two CAs share serial %s", c.SerialNumber)
	}

	for _, tc := range []struct {
		name     string
		cn       string
		lifetime time.Duration
	}{
		{"empty common name", "", CALifetime},
		{"zero lifetime", "c-ca", 0},
		{"negative lifetime", "c-ca", -time.Hour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := NewCA(tc.cn, t0, tc.lifetime); err == nil {
				t.Error("NewCA: no error")
			}
		})
	}
}

func TestParseCA(t *testing.T) {
	ca := newCA(t, "c-ca", t0, CALifetime)
	other := newCA(t, "c-ca", t0, CALifetime)
	leaf := server(t, ca, serverNames, t0)

	t.Run("round trip", func(t *testing.T) {
		got, err := ParseCA(ca.CertPEM, ca.KeyPEM)
		if err != nil {
			t.Fatalf("ParseCA: %v", err)
		}
		if !got.Cert.Equal(ca.Cert) || !bytes.Equal(got.CertPEM, ca.CertPEM) || !bytes.Equal(got.KeyPEM, ca.KeyPEM) {
			t.Error("parsed CA differs from the one written")
		}
		// A leaf the parsed CA issues is one the original accepts.
		l := server(t, got, serverNames, t0)
		if due, why := Due(l.CertPEM, l.KeyPEM, ca, Want{DNSNames: serverNames}, t0); due {
			t.Errorf("leaf of the parsed CA is due: %s", why)
		}
	})

	t.Run("SEC 1 key written as PKCS#8", func(t *testing.T) {
		der, err := x509.MarshalECPrivateKey(ca.Key.(*ecdsa.PrivateKey))
		if err != nil {
			t.Fatal(err)
		}
		sec1 := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})
		got, err := ParseCA(ca.CertPEM, sec1)
		if err != nil {
			t.Fatalf("ParseCA: %v", err)
		}
		if !bytes.Equal(got.KeyPEM, ca.KeyPEM) {
			t.Error("KeyPEM is not the PKCS#8 key")
		}
	})

	badDER := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte("not DER")})
	for _, tc := range []struct {
		name          string
		cert, key     []byte
		wantErrSubstr string
	}{
		{"no certificate", nil, ca.KeyPEM, "certificate: no PEM block"},
		{"garbage certificate", []byte("garbage"), ca.KeyPEM, "certificate: no PEM block"},
		{"key in the certificate's place", ca.KeyPEM, ca.KeyPEM, `"PRIVATE KEY", not "CERTIFICATE"`},
		{"unparsable certificate", badDER, ca.KeyPEM, "parse CA: certificate:"},
		{"leaf, not a CA", leaf.CertPEM, leaf.KeyPEM, "is not a CA"},
		{"no key", ca.CertPEM, nil, "key: no PEM block"},
		{"certificate in the key's place", ca.CertPEM, ca.CertPEM, `"CERTIFICATE", not "PRIVATE KEY"`},
		{"another CA's key", ca.CertPEM, other.KeyPEM, "key does not match"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseCA(tc.cert, tc.key)
			if err == nil || !strings.Contains(err.Error(), tc.wantErrSubstr) {
				t.Errorf("ParseCA error %v; want one containing %q", err, tc.wantErrSubstr)
			}
		})
	}
}

func TestIssue(t *testing.T) {
	ca := newCA(t, "c-ca", t0, CALifetime)

	t.Run("server", func(t *testing.T) {
		l := server(t, ca, serverNames, t0)
		c := mustCert(t, l.CertPEM)
		if c.Subject.CommonName != serverNames[0] || !slices.Equal(c.DNSNames, serverNames) {
			t.Errorf("CN %q, names %v", c.Subject.CommonName, c.DNSNames)
		}
		if !slices.Equal(c.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}) || c.KeyUsage != x509.KeyUsageDigitalSignature {
			t.Errorf("ExtKeyUsage %v, KeyUsage %v", c.ExtKeyUsage, c.KeyUsage)
		}
		checkLeaf(t, ca, l, c)
	})

	t.Run("client", func(t *testing.T) {
		l := client(t, ca, "postgres", t0)
		c := mustCert(t, l.CertPEM)
		if c.Subject.CommonName != "postgres" || len(c.DNSNames) != 0 {
			t.Errorf("CN %q, names %v", c.Subject.CommonName, c.DNSNames)
		}
		if !slices.Equal(c.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}) {
			t.Errorf("ExtKeyUsage %v", c.ExtKeyUsage)
		}
		checkLeaf(t, ca, l, c)
	})

	t.Run("new key each time", func(t *testing.T) {
		a, b := server(t, ca, serverNames, t0), server(t, ca, serverNames, t0)
		if bytes.Equal(a.KeyPEM, b.KeyPEM) {
			t.Error("two leaves share a key")
		}
	})
}

// checkLeaf checks what every leaf issued at t0 shares.
func checkLeaf(t *testing.T, ca *CA, l Leaf, c *x509.Certificate) {
	t.Helper()
	if c.IsCA {
		t.Error("leaf is a CA")
	}
	if !l.NotBefore.Equal(t0.Add(-time.Hour)) || !l.NotAfter.Equal(t0.Add(LeafLifetime)) {
		t.Errorf("Leaf valid %s to %s", l.NotBefore, l.NotAfter)
	}
	if !l.NotBefore.Equal(c.NotBefore) || !l.NotAfter.Equal(c.NotAfter) {
		t.Errorf("Leaf times differ from the certificate's")
	}
	if !bytes.Equal(c.AuthorityKeyId, ca.Cert.SubjectKeyId) {
		t.Errorf("AuthorityKeyId %x, CA's SubjectKeyId %x", c.AuthorityKeyId, ca.Cert.SubjectKeyId)
	}
	if err := c.CheckSignatureFrom(ca.Cert); err != nil {
		t.Errorf("not signed by the CA: %v", err)
	}
	if b, _ := pem.Decode(l.KeyPEM); b == nil || b.Type != "PRIVATE KEY" {
		t.Fatal("KeyPEM is not a PRIVATE KEY block")
	} else if _, err := x509.ParsePKCS8PrivateKey(b.Bytes); err != nil {
		t.Errorf("KeyPEM: %v", err)
	}
}

func TestIssueLimits(t *testing.T) {
	shortCA := newCA(t, "c-ca", t0, 30*day)
	for _, tc := range []struct {
		name  string
		issue func() (Leaf, error)
		// wantNotAfter is the leaf's end; zero when issuing must fail.
		wantNotAfter time.Time
	}{
		{"server capped at the CA's end", func() (Leaf, error) {
			return shortCA.IssueServer(serverNames, t0, LeafLifetime)
		}, shortCA.Cert.NotAfter},
		{"client capped at the CA's end", func() (Leaf, error) {
			return shortCA.IssueClient("postgres", t0.Add(10*day), LeafLifetime)
		}, shortCA.Cert.NotAfter},
		{"inside the CA's life", func() (Leaf, error) {
			return shortCA.IssueServer(serverNames, t0, 7*day)
		}, t0.Add(7 * day)},
		{"CA expired", func() (Leaf, error) {
			return shortCA.IssueServer(serverNames, t0.Add(31*day), LeafLifetime)
		}, time.Time{}},
		{"no DNS names", func() (Leaf, error) {
			return shortCA.IssueServer(nil, t0, LeafLifetime)
		}, time.Time{}},
		{"empty DNS name", func() (Leaf, error) {
			return shortCA.IssueServer([]string{"c-rw.ns.svc", ""}, t0, LeafLifetime)
		}, time.Time{}},
		{"empty common name", func() (Leaf, error) {
			return shortCA.IssueClient("", t0, LeafLifetime)
		}, time.Time{}},
		{"zero lifetime", func() (Leaf, error) {
			return shortCA.IssueClient("postgres", t0, 0)
		}, time.Time{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := tc.issue()
			if tc.wantNotAfter.IsZero() {
				if err == nil {
					t.Fatal("no error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c := mustCert(t, l.CertPEM); !l.NotAfter.Equal(tc.wantNotAfter) || !c.NotAfter.Equal(tc.wantNotAfter) {
				t.Errorf("NotAfter %s (certificate %s); want %s", l.NotAfter, c.NotAfter, tc.wantNotAfter)
			}
		})
	}
}

func TestDue(t *testing.T) {
	ca := newCA(t, "c-ca", t0, CALifetime)
	otherCA := newCA(t, "c-ca", t0, CALifetime) // same name, another key
	futureCA := newCA(t, "c-ca", t0.Add(30*day), CALifetime)
	srv := server(t, ca, serverNames, t0)
	srv2 := server(t, ca, serverNames, t0)
	foreign := server(t, otherCA, serverNames, t0)
	cli := client(t, ca, "postgres", t0)
	both, err := ca.issue(t0, LeafLifetime, func(c *x509.Certificate) {
		c.DNSNames = serverNames
		c.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	})
	if err != nil {
		t.Fatal(err)
	}

	ips := []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.0.0.2")}
	peer, err := ca.IssuePeer(serverNames, ips, t0, LeafLifetime)
	if err != nil {
		t.Fatal(err)
	}

	serverWant := Want{DNSNames: serverNames}
	clientWant := Want{CommonName: "postgres", Client: true}
	peerWant := Want{DNSNames: serverNames, IPs: ips, Peer: true}
	// A leaf issued at t0 runs from t0-1h for 90 days and an hour: 2161h,
	// two thirds of which is 1440h40m.
	renew := t0.Add(-time.Hour + 1440*time.Hour + 40*time.Minute)
	keyInCertSlot := srv.KeyPEM

	for _, tc := range []struct {
		name      string
		cert, key []byte
		ca        *CA
		want      Want
		now       time.Time
		wantWhy   string // "" when not due
	}{
		{"fresh server", srv.CertPEM, srv.KeyPEM, ca, serverWant, t0, ""},
		{"fresh client", cli.CertPEM, cli.KeyPEM, ca, clientWant, t0, ""},
		{"names in another order and case", srv.CertPEM, srv.KeyPEM, ca,
			Want{DNSNames: []string{"*.C-HL.ns.svc", "c-rw.ns.svc.cluster.local", "c-rw.ns.svc", "c-rw.ns.svc"}}, t0, ""},
		{"no certificate", nil, srv.KeyPEM, ca, serverWant, t0, "missing"},
		{"no key", srv.CertPEM, []byte{}, ca, serverWant, t0, "missing"},
		{"garbage certificate", []byte("garbage"), srv.KeyPEM, ca, serverWant, t0, "not a certificate"},
		{"key in the certificate's place", keyInCertSlot, srv.KeyPEM, ca, serverWant, t0, "not a certificate"},
		{"garbage key", srv.CertPEM, []byte("garbage"), ca, serverWant, t0, "not a private key"},
		{"another leaf's key", srv.CertPEM, srv2.KeyPEM, ca, serverWant, t0, "key does not match the certificate"},
		{"signed by another CA", foreign.CertPEM, foreign.KeyPEM, ca, serverWant, t0, "not signed by the cluster's CA"},
		{"CA not yet valid", srv.CertPEM, srv.KeyPEM, futureCA, serverWant, t0, "the cluster's CA is not valid"},
		{"a name missing", srv.CertPEM, srv.KeyPEM, ca, Want{DNSNames: serverNames[:2]}, t0, "names differ"},
		{"a name more", srv.CertPEM, srv.KeyPEM, ca,
			Want{DNSNames: append(slices.Clone(serverNames), "c-ro.ns.svc")}, t0, "names differ"},
		{"client with names", cli.CertPEM, cli.KeyPEM, ca, Want{DNSNames: []string{"c-rw.ns.svc"}, CommonName: "postgres", Client: true}, t0, "names differ"},
		{"common name differs", cli.CertPEM, cli.KeyPEM, ca, Want{CommonName: "cairn", Client: true}, t0, "common name differs"},
		{"server wanted as client", srv.CertPEM, srv.KeyPEM, ca, Want{CommonName: serverNames[0], Client: true}, t0, "not a client certificate"},
		{"client wanted as server", cli.CertPEM, cli.KeyPEM, ca, serverWant, t0, "not a server certificate"},
		{"server and client usage", both.CertPEM, both.KeyPEM, ca, serverWant, t0, "usage differs"},
		{"fresh peer", peer.CertPEM, peer.KeyPEM, ca, peerWant, t0, ""},
		{"peer, addresses in another order", peer.CertPEM, peer.KeyPEM, ca,
			Want{DNSNames: serverNames, IPs: []net.IP{ips[1], ips[0], ips[1]}, Peer: true}, t0, ""},
		{"peer, an address missing", peer.CertPEM, peer.KeyPEM, ca, Want{DNSNames: serverNames, IPs: ips[:1], Peer: true}, t0, "names differ"},
		{"peer, an address more", peer.CertPEM, peer.KeyPEM, ca,
			Want{DNSNames: serverNames, IPs: append(slices.Clone(ips), net.ParseIP("10.0.0.3")), Peer: true}, t0, "names differ"},
		{"server wanted as peer", srv.CertPEM, srv.KeyPEM, ca, Want{DNSNames: serverNames, Peer: true}, t0, "not a client certificate"},
		{"client wanted as peer", cli.CertPEM, cli.KeyPEM, ca, peerWant, t0, "not a server certificate"},
		{"peer wanted as server", peer.CertPEM, peer.KeyPEM, ca, Want{DNSNames: serverNames, IPs: ips}, t0, "usage differs"},
		{"peer just after two thirds", peer.CertPEM, peer.KeyPEM, ca, peerWant, renew.Add(time.Second), "past two thirds of its lifetime"},
		{"just before two thirds", srv.CertPEM, srv.KeyPEM, ca, serverWant, renew.Add(-time.Second), ""},
		{"at two thirds", srv.CertPEM, srv.KeyPEM, ca, serverWant, renew, ""},
		{"just after two thirds", srv.CertPEM, srv.KeyPEM, ca, serverWant, renew.Add(time.Second), "past two thirds of its lifetime"},
		{"client just after two thirds", cli.CertPEM, cli.KeyPEM, ca, clientWant, renew.Add(time.Second), "past two thirds of its lifetime"},
		{"at its end", srv.CertPEM, srv.KeyPEM, ca, serverWant, srv.NotAfter, "past two thirds of its lifetime"},
		{"expired", srv.CertPEM, srv.KeyPEM, ca, serverWant, srv.NotAfter.Add(time.Second), "expired"},
		{"at its start", srv.CertPEM, srv.KeyPEM, ca, serverWant, srv.NotBefore, ""},
		{"not yet valid", srv.CertPEM, srv.KeyPEM, ca, serverWant, srv.NotBefore.Add(-time.Second), "not yet valid"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			due, why := Due(tc.cert, tc.key, tc.ca, tc.want, tc.now)
			if due != (tc.wantWhy != "") || why != tc.wantWhy {
				t.Errorf("Due = %v, %q; want %v, %q", due, why, tc.wantWhy != "", tc.wantWhy)
			}
		})
	}
}

func TestPool(t *testing.T) {
	a := newCA(t, "a", t0, CALifetime)
	b := newCA(t, "b", t0, CALifetime)
	la := server(t, a, serverNames, t0)
	lb := server(t, b, serverNames, t0)
	badDER := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte("not DER")})
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

	for _, tc := range []struct {
		name    string
		bundle  []byte
		trusted []Leaf // leaves the pool must verify; nil when Pool must fail
		other   []Leaf // leaves it must not
	}{
		{"one CA", a.CertPEM, []Leaf{la}, []Leaf{lb}},
		{"two CAs", cat(a.CertPEM, []byte("\n"), b.CertPEM), []Leaf{la, lb}, nil},
		{"empty", nil, nil, nil},
		{"blank", []byte(" \n"), nil, nil},
		{"garbage", []byte("garbage"), nil, nil},
		{"a key among the certificates", cat(a.CertPEM, a.KeyPEM), nil, nil},
		{"an unparsable certificate", cat(a.CertPEM, badDER), nil, nil},
		{"text after the certificates", cat(a.CertPEM, []byte("trailing")), nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pool, err := Pool(tc.bundle)
			if tc.trusted == nil {
				if err == nil {
					t.Fatal("Pool: no error")
				}
				return
			}
			if err != nil {
				t.Fatalf("Pool: %v", err)
			}
			for _, l := range tc.trusted {
				if _, err := mustCert(t, l.CertPEM).Verify(x509.VerifyOptions{Roots: pool, CurrentTime: t0}); err != nil {
					t.Errorf("leaf not trusted: %v", err)
				}
			}
			for _, l := range tc.other {
				if _, err := mustCert(t, l.CertPEM).Verify(x509.VerifyOptions{Roots: pool, CurrentTime: t0}); err == nil {
					t.Error("leaf of another CA trusted")
				}
			}
		})
	}
}

func TestBundle(t *testing.T) {
	ca := newCA(t, "new", t0, CALifetime)
	old := newCA(t, "old", t0.Add(-400*day), CALifetime)
	older := newCA(t, "older", t0.Add(-800*day), CALifetime)
	expired := newCA(t, "expired", t0.Add(-400*day), 365*day)
	future := newCA(t, "future", t0.Add(day), CALifetime)
	leaf := server(t, old, serverNames, t0)
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

	for _, tc := range []struct {
		name     string
		previous []byte
		want     []byte
	}{
		{"no previous", nil, ca.CertPEM},
		{"previous is this CA", ca.CertPEM, ca.CertPEM},
		{"an old CA kept", old.CertPEM, cat(ca.CertPEM, old.CertPEM)},
		{"order kept", cat(older.CertPEM, ca.CertPEM, old.CertPEM), cat(ca.CertPEM, older.CertPEM, old.CertPEM)},
		{"expired dropped", cat(expired.CertPEM, old.CertPEM), cat(ca.CertPEM, old.CertPEM)},
		{"not yet valid dropped", cat(future.CertPEM, old.CertPEM), cat(ca.CertPEM, old.CertPEM)},
		{"duplicates dropped", cat(old.CertPEM, old.CertPEM, ca.CertPEM, old.CertPEM), cat(ca.CertPEM, old.CertPEM)},
		{"leaves, keys and garbage dropped",
			cat([]byte("garbage\n"), leaf.CertPEM, old.KeyPEM, old.CertPEM), cat(ca.CertPEM, old.CertPEM)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Bundle(ca, tc.previous, t0)
			if !bytes.Equal(got, tc.want) {
				t.Errorf("Bundle:\n%s\nwant:\n%s", got, tc.want)
			}
			if again := Bundle(ca, tc.previous, t0); !bytes.Equal(again, got) {
				t.Error("Bundle is not deterministic")
			}
			if _, err := Pool(got); err != nil {
				t.Errorf("Pool(Bundle): %v", err)
			}
		})
	}

	t.Run("a replaced CA's leaves still trusted", func(t *testing.T) {
		pool, err := Pool(Bundle(ca, old.CertPEM, t0))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := mustCert(t, leaf.CertPEM).Verify(x509.VerifyOptions{Roots: pool, CurrentTime: t0}); err != nil {
			t.Errorf("old CA's leaf: %v", err)
		}
	})
}
