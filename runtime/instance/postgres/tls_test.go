package postgres

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/runtime/instance/internal/instancetest"
	"github.com/cairn-dev/cairn/runtime/pki"
	"github.com/cairn-dev/cairn/testbed"
)

// testNamespace is the namespace the TLS tests' certificates name.
const testNamespace = "db"

// testCerts stands in for the runtime's Secrets: one cluster CA, a
// server certificate every member shares and the superuser's client
// certificate, written into each member's TLS directory on Sync as
// certs.Files writes them from the Secrets.
type testCerts struct {
	t  *testing.T
	ca *pki.CA
	mu sync.Mutex
	// server, client are the current leaves; issue replaces them.
	server, client pki.Leaf
}

func newTestCerts(t *testing.T) *testCerts {
	ca, err := pki.NewCA("test pg CA", time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	c := &testCerts{t: t, ca: ca}
	c.issue()
	return c
}

// issue replaces both leaves, as the runtime renews them.
func (c *testCerts) issue() {
	server, err := c.ca.IssueServer(contract.PostgresServerNames("pg", testNamespace), time.Now(), time.Hour)
	if err != nil {
		c.t.Fatal(err)
	}
	client, err := c.ca.IssueClient(contract.PostgresSuperuser, time.Now(), time.Hour)
	if err != nil {
		c.t.Fatal(err)
	}
	c.mu.Lock()
	c.server, c.client = server, client
	c.mu.Unlock()
}

// files is a member's CertSync into dir, owned by cred's user.
func (c *testCerts) files(dir string, b *pgBed) CertSync {
	return certSyncFunc(func(context.Context) (bool, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		changed := false
		for name, data := range map[string][]byte{
			contract.TLSFileServerCert: c.server.CertPEM, contract.TLSFileServerKey: c.server.KeyPEM,
			contract.TLSFileCA: c.ca.CertPEM, contract.TLSFileClientCert: c.client.CertPEM, contract.TLSFileClientKey: c.client.KeyPEM,
		} {
			path := filepath.Join(dir, name)
			if old, err := os.ReadFile(path); err == nil && string(old) == string(data) {
				continue
			}
			if err := os.MkdirAll(dir, 0o700); err != nil {
				return false, err
			}
			if err := os.WriteFile(path, data, 0o600); err != nil {
				return false, err
			}
			if b.cred != nil {
				_ = os.Chown(dir, int(b.cred.Uid), int(b.cred.Gid))
				_ = os.Chown(path, int(b.cred.Uid), int(b.cred.Gid))
			}
			changed = true
		}
		return changed, nil
	})
}

type certSyncFunc func(context.Context) (bool, error)

func (f certSyncFunc) Sync(ctx context.Context) (bool, error) { return f(ctx) }

// tlsMember is member ord of a cluster that requires TLS, as the rendered
// config and pg_hba of TLS mode require make it.
func (b *pgBed) tlsMember(c *testCerts, ord int, bootstrap string, candidates ...int) *Manager {
	m := b.member(ord, bootstrap, candidates...)
	m.Name = contract.MemberName("pg", ord)
	m.Namespace, m.TLSDir, m.CertsEvery = testNamespace, filepath.Join(b.dir, m.Name+"-tls"), 100*time.Millisecond
	m.Config.TLS, m.Certs = contract.TLSRequire, c.files(m.TLSDir, b)
	maps.Copy(m.Settings, TLSFileSettings(m.TLSDir))
	m.Settings["ssl"] = "on"
	return m
}

// requireTLS rewrites the bed's pg_hba.conf as TLS mode require renders it.
func (b *pgBed) requireTLS() {
	hba := "local all postgres peer\nlocal all all scram-sha-256\n" +
		"hostssl all postgres 0.0.0.0/0 cert\n" +
		"hostssl replication replicator 0.0.0.0/0 scram-sha-256\n" +
		"hostssl all all 0.0.0.0/0 scram-sha-256\n"
	if err := os.WriteFile(filepath.Join(b.dir, "pg_hba.conf"), []byte(hba), 0o644); err != nil {
		b.t.Fatal(err)
	}
}

// dialTLS connects to member ord with tc; a nil tc connects without TLS.
func (b *pgBed) dialTLS(ctx context.Context, ord int, user, password string, tc *tls.Config) (*pgx.Conn, error) {
	cfg, _ := pgx.ParseConfig("")
	cfg.Host, cfg.Port, cfg.User, cfg.Password, cfg.Database = instancetest.HostOf(ord), uint16(b.ports[ord]), user, password, "postgres"
	cfg.TLSConfig, cfg.Fallbacks = tc, nil
	cfg.ConnectTimeout = 3 * time.Second
	return pgx.ConnectConfig(ctx, cfg)
}

// A cluster that requires TLS: the primary initialises and a replica
// clones and streams over TLS, verified (verify-full) by the cluster's
// CA; nothing reaches a server without TLS, the superuser only with the
// cluster's client certificate; a renewed certificate is served after a
// reload, with no restart.
func TestPostgresRequiresTLS(t *testing.T) {
	testbed.PerMajor(t) // its behaviour depends on the major: the PostgreSQL 13 pass runs it too
	b := newPGBed(t)
	b.requireTLS()
	c := newTestCerts(t)
	ctx := context.Background()
	m0 := b.tlsMember(c, 0, contract.BootstrapNew)
	s0 := b.start(m0, StartPrimary)
	m1 := b.tlsMember(c, 1, contract.BootstrapExisting, 0)
	b.start(m1, StartReplica)

	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(c.ca.CertPEM)
	pair, err := tls.X509KeyPair(c.client.CertPEM, c.client.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	name := contract.PostgresMemberServerName("pg", testNamespace, "pg-0")
	verified := &tls.Config{RootCAs: pool, ServerName: name, Certificates: []tls.Certificate{pair}}
	admin, err := b.dialTLS(ctx, 0, Superuser, "", verified)
	if err != nil {
		t.Fatalf("the superuser with its client certificate: %v", err)
	}
	defer admin.Close(ctx)
	testbed.Eventually(t, "pg-1 streaming over TLS", func() error {
		var ssl bool
		err := admin.QueryRow(ctx, "SELECT s.ssl FROM pg_stat_replication r JOIN pg_stat_ssl s USING (pid) WHERE r.application_name = 'pg-1' AND r.state = 'streaming'").Scan(&ssl)
		if err == nil && !ssl {
			t.Fatal("pg-1 streams without TLS")
		}
		return err
	})

	for _, tc := range []struct {
		name           string
		user, password string
		tls            *tls.Config
		want           string
	}{
		{"no TLS", Superuser, testSuperPW, nil, "no pg_hba.conf entry"},
		{"no TLS, replication user", ReplicationUser, testReplPW, nil, "no pg_hba.conf entry"},
		{"superuser by password over TLS", Superuser, testSuperPW, &tls.Config{RootCAs: pool, ServerName: name}, "certificate"},
		{"another cluster's name", Superuser, "", &tls.Config{RootCAs: pool, ServerName: "pg-0.other-hl.db.svc", Certificates: []tls.Certificate{pair}}, "certificate is valid for"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := b.dialTLS(ctx, 0, tc.user, tc.password, tc.tls)
			if err == nil {
				conn.Close(ctx)
				t.Fatal("connected")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("refused with %v, want %q", err, tc.want)
			}
		})
	}

	// A renewed certificate: the member (keepCerts, running since Start)
	// writes it and reloads its server.
	served := func() string {
		var serial string
		pc, err := b.dialTLS(ctx, 0, Superuser, "", verified)
		if err != nil {
			return "error: " + err.Error()
		}
		defer pc.Close(ctx)
		if st, ok := pc.PgConn().Conn().(*tls.Conn); ok {
			serial = st.ConnectionState().PeerCertificates[0].SerialNumber.String()
		}
		return serial
	}
	before := served()
	c.issue()
	testbed.Eventually(t, "the renewed certificate served", func() error {
		if got := served(); got == before || strings.HasPrefix(got, "error") {
			return &waitErr{got}
		}
		return nil
	})
	select {
	case <-s0.done:
		t.Fatal("the primary stopped for a certificate renewal")
	default:
	}
}

type waitErr struct{ got string }

func (e *waitErr) Error() string { return "served " + e.got }

// A member whose server certificate expired before its server answered
// (a long recovery; a renewal landing just after the member wrote its
// files) gets the renewed certificate while it starts: keepCerts runs
// from Start, so the server is reloaded and answers. Before, it waited
// for an answer that its own expired certificate refused, for ever.
func TestPostgresStartsThroughAnExpiredCertificate(t *testing.T) {
	b := newPGBed(t)
	b.requireTLS()
	c := newTestCerts(t)
	expired, err := c.ca.IssueServer(contract.PostgresServerNames("pg", testNamespace), time.Now().Add(-2*time.Hour), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	c.server = expired
	c.mu.Unlock()
	m := b.tlsMember(c, 0, contract.BootstrapNew)
	files := m.Certs
	var synced sync.Once
	m.Certs = certSyncFunc(func(ctx context.Context) (bool, error) {
		changed, err := files.Sync(ctx)
		synced.Do(c.issue) // renewed right after the member wrote the expired one
		return changed, err
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, initialised, err := m.Prepare(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s, err := m.Start(ctx, initialised, instancetest.Writer(t))
	if err != nil {
		t.Fatalf("the server never answered with the renewed certificate: %v", err)
	}
	defer s.Kill()
	c.mu.Lock()
	want := c.server.CertPEM
	c.mu.Unlock()
	got, err := os.ReadFile(filepath.Join(m.TLSDir, contract.TLSFileServerCert))
	if err != nil || string(got) != string(want) {
		t.Fatalf("the member's certificate file is not the renewed one: %v", err)
	}
}
