package backup_test

import (
	"archive/tar"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/runtime/backup"
	"github.com/cairn-dev/cairn/testbed"
)

// A base backup over TLS (the runtime reaches members only so) is read
// off the TLS connection as off a plain one: a whole tar, verified.
func TestPostgresBaseBackupOverTLS(t *testing.T) {
	testbed.PerMajor(t) // its behaviour depends on the major: the PostgreSQL 13 pass runs it too
	ctx := context.Background()
	var roots *x509.CertPool
	p := startPrimaryWith(t, func(p *pgPrimary) map[string]string {
		var crt, key string
		roots, crt, key = serverCertificate(t, p)
		return map[string]string{"ssl": "on", "ssl_cert_file": crt, "ssl_key_file": key}
	})
	c := p.conn(t, p.port)
	if _, err := c.Exec(ctx, "CREATE TABLE t AS SELECT g, md5(g::text) FROM generate_series(1, 200000) g"); err != nil {
		t.Fatal(err)
	}
	src := p.source()
	src.TLS = &tls.Config{RootCAs: roots, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}
	st := &backup.FileStore{Root: t.TempDir()}
	m, err := backup.Take(ctx, st, "db", "PostgresCluster", src, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	r, err := backup.OpenData(ctx, st, m)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	seen := map[string]bool{}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		seen[h.Name] = true
	}
	// Reading to the tar's end is not the object's end: drain it so the
	// checksum is checked.
	if _, err := io.Copy(io.Discard, r); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"PG_VERSION", "backup_label", "global/pg_control"} {
		if !seen[name] {
			t.Errorf("the backup over TLS holds no %s (%d entries)", name, len(seen))
		}
	}
}

// serverCertificate writes a self-signed certificate for 127.0.0.1 and
// its key into the primary's folder, owned by its user, and returns the
// pool that trusts it and the two files.
func serverCertificate(t testing.TB, p *pgPrimary) (*x509.CertPool, string, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	crt, kf := filepath.Join(p.dir, "server.crt"), filepath.Join(p.dir, "server.key")
	for f, b := range map[string]*pem.Block{crt: {Type: "CERTIFICATE", Bytes: der}, kf: {Type: "EC PRIVATE KEY", Bytes: keyDER}} {
		if err := os.WriteFile(f, pem.EncodeToMemory(b), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := p.chown(f); err != nil {
			t.Fatal(err)
		}
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return pool, crt, kf
}
