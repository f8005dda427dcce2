package backup

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/runtime/pki"
	"github.com/cairn-dev/cairn/testbed"
)

// A member serving TLS with a certificate of DNS names only (as cairn
// issues them), reached at its address as the runtime reaches a pod,
// is snapshotted when the client configuration names the server: gRPC
// would verify the address, which no certificate of cairn's carries.
func TestEtcdSnapshotOverTLSByAddress(t *testing.T) {
	testbed.Require(t, testbed.TierIntegration, "an etcd member")
	now := time.Now()
	ca, err := pki.NewCA("test etcd CA", now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	const name = "e-client.ns.svc"
	srv, err := ca.IssueServer([]string{name}, now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	root, err := ca.IssueClient("root", now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	files := map[string][]byte{"ca.crt": ca.CertPEM, "tls.crt": srv.CertPEM, "tls.key": srv.KeyPEM}
	for f, b := range files {
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	curl := "https://127.0.0.1:" + strconv.Itoa(testbed.FreePort(t))
	purl := "http://127.0.0.1:" + strconv.Itoa(testbed.FreePort(t))
	cmd := exec.Command(testbed.Bin(t, "etcd"), "--name", "e-0", "--data-dir", filepath.Join(dir, "data"),
		"--listen-client-urls", curl, "--advertise-client-urls", curl, "--listen-peer-urls", purl,
		"--initial-advertise-peer-urls", purl, "--initial-cluster", "e-0="+purl,
		"--cert-file", filepath.Join(dir, "tls.crt"), "--key-file", filepath.Join(dir, "tls.key"),
		"--trusted-ca-file", filepath.Join(dir, "ca.crt"), "--client-cert-auth")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })

	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.CertPEM)
	pair, err := tls.X509KeyPair(root.CertPEM, root.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	tc := &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}, ServerName: name, MinVersion: tls.VersionTLS12}
	src := EtcdSource{Member: "e-0", Endpoint: curl, DialTimeout: time.Second, TLS: tc}
	st := &FileStore{Root: t.TempDir()}
	var m Manifest
	testbed.Eventually(t, "a snapshot over TLS", func() (err error) {
		m, err = Take(context.Background(), st, "e", "EtcdCluster", src, time.Now)
		return err
	})
	if m.Source != "e-0" || m.Etcd == nil || m.Size == 0 {
		t.Fatalf("manifest %+v", m)
	}
	if tc.ServerName != name {
		t.Fatalf("the caller's TLS configuration changed: ServerName %q", tc.ServerName)
	}
}
