package etcd

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/runtime/instance/internal/instancetest"
	"github.com/cairn-dev/cairn/runtime/pki"
)

// etcdTLSBed is etcdBed with TLS required: the members' certificates are
// issued by a CA of the test's (as the runtime's Keeper issues them) and
// written where a pod's projected volume would put them.
type etcdTLSBed struct {
	*etcdBed
	ca      *pki.CA
	tlsDir  string
	metrics map[string]int
}

func newEtcdTLSBed(t *testing.T, members int) *etcdTLSBed {
	ca, err := pki.NewCA("test etcd CA", time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	b := &etcdTLSBed{etcdBed: newEtcdBed(t, members), ca: ca, tlsDir: t.TempDir(), metrics: map[string]int{}}
	for i := range 5 {
		b.metrics["e-"+itoa(i)] = instancetest.FreePort(t, instancetest.HostOf(i))
	}
	b.issue(t)
	return b
}

// issue writes a new peer and client certificate, each file replaced
// whole by a rename as the kubelet swaps a projected volume's files.
func (b *etcdTLSBed) issue(t *testing.T) (serial string) {
	t.Helper()
	files := tlsFiles(t, b.ca, b.ca.CertPEM)
	for name, data := range files {
		tmp := filepath.Join(b.tlsDir, "."+name)
		if err := os.WriteFile(tmp, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(b.tlsDir, name)); err != nil {
			t.Fatal(err)
		}
	}
	c, err := tls.X509KeyPair(files[contract.TLSFileServerCert], files[contract.TLSFileServerKey])
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(c.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	return leaf.SerialNumber.String()
}

func httpsURL(host string, port int) string { return fmt.Sprintf("https://%s:%d", host, port) }

func (b *etcdTLSBed) manager(name, bootstrap string) *Manager {
	e := b.etcdBed.manager(name, bootstrap)
	e.Config.TLS, e.TLSDir = contract.TLSRequire, b.tlsDir
	e.PeerURL = func(m string) string { return httpsURL(b.host(m), b.peer[m]) }
	e.ClientURL = func(m string) string { return httpsURL(b.host(m), b.cli[m]) }
	e.ListenPeerURL, e.ListenClientURL = httpsURL(b.host(name), b.peer[name]), httpsURL(b.host(name), b.cli[name])
	e.ListenMetricsURL = url(b.host(name), b.metrics[name])
	for i, ep := range e.Endpoints {
		e.Endpoints[i] = "https://" + strings.TrimPrefix(ep, "http://")
	}
	return e
}

// client reaches the running members over TLS with tc.
func (b *etcdTLSBed) client(t *testing.T, tc *tls.Config) *clientv3.Client {
	var eps []string
	for m := range b.procs {
		eps = append(eps, httpsURL(b.host(m), b.cli[m]))
	}
	c, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 2 * time.Second, Logger: zap.NewNop(), TLS: tc})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func (b *etcdTLSBed) rootTLS(t *testing.T) *tls.Config {
	tc, err := ClientTLS(b.tlsDir)
	if err != nil {
		t.Fatal(err)
	}
	return tc
}

// TestEtcdServesOnlyTLS: members started in TLS mode require form their
// cluster over peer TLS, serve clients only over TLS with a certificate
// of the cluster's CA, answer the probes in plain HTTP on the metrics
// port alone, let a new member join through its instance manager's TLS
// client, and take a renewed certificate with writes running and none
// failing.
func TestEtcdServesOnlyTLS(t *testing.T) {
	ctx := context.Background()
	b := newEtcdTLSBed(t, 3)
	for _, m := range []string{"e-0", "e-1", "e-2"} {
		args, err := b.manager(m, "new").Args(ctx)
		if err != nil {
			t.Fatalf("%s: %v", m, err)
		}
		for _, flag := range []string{"--client-cert-auth", "--peer-client-cert-auth"} {
			if !strings.Contains(strings.Join(args, " "), flag) {
				t.Fatalf("%s starts without %s: %v", m, flag, args)
			}
		}
		b.start(m, args)
	}
	root := b.client(t, b.rootTLS(t))
	instancetest.Eventually(t, 30*time.Second, "three-member TLS cluster", func(ctx context.Context) error {
		_, err := root.Put(ctx, "k", "v")
		return err
	})

	t.Run("refused", func(t *testing.T) {
		roots := b.rootTLS(t).RootCAs
		other, err := pki.NewCA("another CA", time.Now(), time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		stranger, err := other.IssueClient(contract.EtcdClientCommonName, time.Now(), time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		strangerCert, err := tls.X509KeyPair(stranger.CertPEM, stranger.KeyPEM)
		if err != nil {
			t.Fatal(err)
		}
		for name, tc := range map[string]*tls.Config{
			"no client certificate":           {RootCAs: roots},
			"another CA's client certificate": {RootCAs: roots, Certificates: []tls.Certificate{strangerCert}},
		} {
			c := b.client(t, tc)
			cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			_, err := c.Get(cctx, "k")
			cancel()
			if err == nil {
				t.Errorf("%s: a read was answered", name)
			}
		}
		// Plain HTTP on the client and peer ports gets no answer from etcd.
		hc := &http.Client{Timeout: 2 * time.Second}
		for _, u := range []string{url(instancetest.HostOf(0), b.cli["e-0"]) + "/version", url(instancetest.HostOf(0), b.peer["e-0"]) + "/members"} {
			if resp, err := hc.Get(u); err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					t.Errorf("plain HTTP %s answered %s", u, resp.Status)
				}
			}
		}
		// A peer without the members' certificate is refused: without any
		// certificate, and with root's client certificate, which the same
		// CA signs but which does not carry the members' common name.
		peerTLS := map[string]*tls.Config{
			"no certificate": {RootCAs: roots, ServerName: instancetest.HostOf(0)},
			"root's client certificate": func() *tls.Config {
				tc := b.rootTLS(t)
				tc.ServerName = instancetest.HostOf(0)
				return tc
			}(),
		}
		for name, tc := range peerTLS {
			hc := &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{TLSClientConfig: tc}}
			resp, err := hc.Get(httpsURL(instancetest.HostOf(0), b.peer["e-0"]) + "/members")
			if err == nil {
				resp.Body.Close()
				t.Errorf("peer port, %s: answered %s", name, resp.Status)
			}
			hc.CloseIdleConnections()
		}
		// The members' own certificate is admitted there.
		peerCert, err := tls.LoadX509KeyPair(filepath.Join(b.tlsDir, contract.TLSFileServerCert), filepath.Join(b.tlsDir, contract.TLSFileServerKey))
		if err != nil {
			t.Fatal(err)
		}
		pc := &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
			RootCAs: roots, ServerName: instancetest.HostOf(0), Certificates: []tls.Certificate{peerCert}}}}
		resp, err := pc.Get(httpsURL(instancetest.HostOf(0), b.peer["e-0"]) + "/members")
		if err != nil {
			t.Fatalf("peer port, the members' certificate: %v", err)
		}
		resp.Body.Close()
		pc.CloseIdleConnections()
	})

	t.Run("probes", func(t *testing.T) {
		resp, err := http.Get(url(instancetest.HostOf(1), b.metrics["e-1"]) + "/health")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("/health on the metrics port: %s", resp.Status)
		}
	})

	t.Run("join", func(t *testing.T) {
		m3 := b.manager("e-3", "new")
		var args []string
		instancetest.Eventually(t, 30*time.Second, "e-3 added over TLS", func(ctx context.Context) (err error) {
			args, err = m3.Args(ctx)
			return err
		})
		b.start("e-3", args)
		instancetest.Eventually(t, 30*time.Second, "e-3 started", func(ctx context.Context) error {
			resp, err := root.MemberList(ctx)
			if err != nil {
				return err
			}
			for _, m := range resp.Members {
				if m.Name == "e-3" {
					return nil
				}
			}
			return errors.New("e-3 has not published its name")
		})
	})

	t.Run("renewal", func(t *testing.T) {
		// Writes run on their own connections while the leaves are renewed;
		// none may fail, and new connections meet the new certificate.
		var failed, done atomic.Int64
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				_, err := root.Put(cctx, fmt.Sprintf("w/%d", i), "v")
				cancel()
				if err != nil {
					failed.Add(1)
					t.Logf("write %d: %v", i, err)
				}
				done.Add(1)
			}
		}()
		time.Sleep(500 * time.Millisecond)
		serial := b.issue(t)
		instancetest.Eventually(t, 10*time.Second, "new connections meet the renewed certificate", func(ctx context.Context) error {
			tc := b.rootTLS(t)
			tc.ServerName = instancetest.HostOf(2)
			conn, err := tls.Dial("tcp", fmt.Sprintf("%s:%d", instancetest.HostOf(2), b.cli["e-2"]), tc)
			if err != nil {
				return err
			}
			defer conn.Close()
			if got := conn.ConnectionState().PeerCertificates[0].SerialNumber.String(); got != serial {
				return fmt.Errorf("serial %s, want %s", got, serial)
			}
			return nil
		})
		// A fresh client of every member, with the renewed client
		// certificate, is admitted.
		fresh := b.client(t, b.rootTLS(t))
		for m := range b.procs {
			cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			_, err := fresh.Status(cctx, httpsURL(b.host(m), b.cli[m]))
			cancel()
			if err != nil {
				t.Errorf("status of %s after the renewal: %v", m, err)
			}
		}
		time.Sleep(500 * time.Millisecond)
		close(stop)
		wg.Wait()
		if failed.Load() != 0 || done.Load() < 10 {
			t.Fatalf("%d of %d writes failed during the renewal", failed.Load(), done.Load())
		}
		t.Logf("%d writes during the renewal, none failed", done.Load())
	})
}
