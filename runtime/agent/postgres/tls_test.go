package postgres

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/runtime/certs"
	pginstance "github.com/cairn-dev/cairn/runtime/instance/postgres"
	"github.com/cairn-dev/cairn/runtime/pki"
	"github.com/cairn-dev/cairn/testbed"
	"github.com/cairn-dev/cairn/testbed/pgfake"
)

// hbaFor is pg_hba.conf as the renderer writes it for a TLS mode (the
// renderer's golden files hold the same lines).
func hbaFor(mode string) string {
	var b strings.Builder
	b.WriteString("local all postgres peer\n")
	if contract.TLSOn(mode) {
		b.WriteString("hostssl all postgres 0.0.0.0/0 cert\n")
	}
	typ := "host"
	if mode == contract.TLSRequire {
		typ = "hostssl"
	}
	fmt.Fprintf(&b, "%s replication replicator 0.0.0.0/0 scram-sha-256\n%s all all 0.0.0.0/0 scram-sha-256\n", typ, typ)
	return b.String()
}

// tlsCluster is a cluster rendered before TLS, with members that take
// their certificates from the runtime's Secrets as in pods.
type tlsCluster struct {
	*pgCluster
	conf string // postgresql.conf as rendered before TLS
}

func newTLSCluster(t *testing.T, cp *testbed.ControlPlane) *tlsCluster {
	ns := cp.Namespace(t, "tls")
	pc := newPgCluster(t, cp, ns, 2, 30*time.Second)
	_, err := pc.c.CoreV1().ConfigMaps(ns).Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: contract.ConfigMap("pg")},
		Data: map[string]string{contract.KeyBootstrap: contract.BootstrapExisting}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	conf, err := os.ReadFile(filepath.Join(pc.m.dir, "postgresql.conf"))
	if err != nil {
		t.Fatal(err)
	}
	mode := modeReader(pc)
	pc.tls = func(p *pginstance.Manager) {
		p.Namespace, p.TLSDir, p.CertsEvery, p.TLSMode = ns, filepath.Join(filepath.Dir(p.PGData), "tls"), 300*time.Millisecond, mode
		uid, gid := -1, -1
		if pc.m.cred != nil {
			uid, gid = int(pc.m.cred.Uid), int(pc.m.cred.Gid)
		}
		p.Certs = &certs.Files{Client: pc.c, Namespace: ns, Cluster: "pg", Dir: p.TLSDir, Uid: uid, Gid: gid}
		maps.Copy(p.Settings, pginstance.TLSFileSettings(p.TLSDir))
	}
	// The test reaches members as a person with the cluster's Secrets
	// would: with the superuser's client certificate once it exists.
	pc.m.tls = func(ord int) *tls.Config {
		m, err := (&certs.Files{Client: pc.c, Namespace: ns, Cluster: "pg"}).Material(context.Background())
		if err != nil {
			return nil
		}
		tc, err := m.ClientConfig(contract.PostgresMemberServerName("pg", ns, fmt.Sprintf("pg-%d", ord)))
		if err != nil {
			return nil
		}
		return tc
	}
	return &tlsCluster{pgCluster: pc, conf: string(conf)}
}

// modeReader reads the TLS mode from the rendered config, as the pod's
// mounted file gives it.
func modeReader(pc *pgCluster) func() string {
	return func() string {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		cm, err := pc.c.CoreV1().ConfigMaps(pc.ns).Get(ctx, contract.ConfigMap("pg"), metav1.GetOptions{})
		if err != nil {
			return ""
		}
		return cm.Data[contract.KeyTLS]
	}
}

// setMode is what merging a PostgresConfigureTLS step does: the rendered
// config, postgresql.conf and pg_hba.conf of the mode, at a new config
// revision the runtime reloads every member to.
func (tc *tlsCluster) setMode(mode, revision string) {
	t := tc.t
	conf := tc.conf + "ssl = on\nssl_min_protocol_version = 'TLSv1.2'\n" + contract.ConfigRevisionParameter + " = '" + revision + "'\n"
	if err := os.WriteFile(filepath.Join(tc.m.dir, "pg_hba.conf"), []byte(hbaFor(mode)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tc.m.dir, "postgresql.conf"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cm, err := tc.c.CoreV1().ConfigMaps(tc.ns).Get(ctx, contract.ConfigMap("pg"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data[contract.KeyTLS], cm.Data[contract.KeyConfigRevision] = mode, revision
	if _, err := tc.c.CoreV1().ConfigMaps(tc.ns).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// applied waits until the runtime reports every member at revision and,
// with tls, serving TLS with the cluster's certificate.
func (tc *tlsCluster) applied(revision string, tlsServed bool) {
	tc.waitFor("every member at "+revision, func() error {
		cm, err := tc.c.CoreV1().ConfigMaps(tc.ns).Get(context.Background(), contract.StatusConfigMap("pg"), metav1.GetOptions{})
		if err != nil {
			return err
		}
		st, err := contract.ParsePostgresConfigStatus(cm.Data[contract.StatusKeyPostgresConfig])
		if err != nil {
			return err
		}
		for i := range tc.n {
			m := st.Members[fmt.Sprintf("pg-%d", i)]
			if m.Revision != revision || m.TLS != tlsServed {
				return fmt.Errorf("config status %+v", st.Members)
			}
		}
		return nil
	})
}

// servedSerial is the serial of the certificate member ord serves.
func (tc *tlsCluster) servedSerial(ord int) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	c, err := tc.m.dial(ctx, ord)
	if err != nil {
		return "", err
	}
	defer c.Close(context.Background())
	conn, ok := c.PgConn().Conn().(*tls.Conn)
	if !ok {
		return "", errors.New("not a TLS connection")
	}
	return conn.ConnectionState().PeerCertificates[0].SerialNumber.String(), nil
}

// phaseWriter writes through the primary every 20ms and counts the
// writes that failed in each phase.
type phaseWriter struct {
	mu     sync.Mutex
	phase  string
	ok     map[string]int
	failed map[string][]string
	next   atomic.Int64
}

func (tc *tlsCluster) write(ctx context.Context) *phaseWriter {
	w := &phaseWriter{phase: "off", ok: map[string]int{}, failed: map[string][]string{}}
	go func() {
		for ctx.Err() == nil {
			id := int(w.next.Add(1))
			err := tc.pgCluster.write(ctx, id)
			w.mu.Lock()
			if err == nil {
				w.ok[w.phase]++
			} else if ctx.Err() == nil {
				w.failed[w.phase] = append(w.failed[w.phase], err.Error())
			}
			w.mu.Unlock()
			time.Sleep(20 * time.Millisecond)
		}
	}()
	return w
}

func (w *phaseWriter) enter(phase string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.phase = phase
}

// A cluster rendered before TLS moves to it as the two planned steps do,
// with writes running: accept (the servers serve TLS with the runtime's
// certificates, plain connections still admitted), then require (only
// TLS). Then its certificates are renewed, and a failover and the old
// primary's rewind run over TLS. No write fails but in the failover; a
// plain connection is refused at the end.
func TestPostgresMovesToTLSWithWritesRunning(t *testing.T) {
	testbed.PerMajor(t) // its behaviour depends on the major: the PostgreSQL 13 pass runs it too
	testbed.Require(t, testbed.TierIntegration, "PostgreSQL members")
	cp := testbed.Start(t)
	tc := newTLSCluster(t, cp)
	tc.start()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Renewed every ~20s: the test sees one renewal of each. The 10s
	// left before a certificate expires are for the member to see the
	// renewed Secret and reload its server; with 5s a loaded machine
	// once served an expired certificate to a write (PostgreSQL 13 pass).
	tc.certLifetime = 30 * time.Second
	tc.runtime(ctx, "runtime-a", FailoverSettings{}, nil)
	tc.waitFor("healthy", tc.healthy)
	tc.m.exec(tc.primary(), "CREATE TABLE t (id int PRIMARY KEY)")
	w := tc.write(ctx)
	time.Sleep(time.Second)

	w.enter(contract.TLSAccept)
	tc.setMode(contract.TLSAccept, "rev-accept")
	tc.applied("rev-accept", true)

	w.enter(contract.TLSRequire)
	tc.setMode(contract.TLSRequire, "rev-require")
	tc.applied("rev-require", true)
	tc.waitFor("healthy over TLS", tc.healthy)

	w.enter("renewal")
	before := map[int]string{}
	for i := range tc.n {
		s, err := tc.servedSerial(i)
		if err != nil {
			t.Fatalf("pg-%d: %v", i, err)
		}
		before[i] = s
	}
	tc.waitFor("both members serving a renewed certificate", func() error {
		for i := range tc.n {
			s, err := tc.servedSerial(i)
			if err != nil || s == before[i] {
				return fmt.Errorf("pg-%d serves %s (was %s): %v", i, s, before[i], err)
			}
		}
		return nil
	})

	// The leader exports when each certificate ends.
	tc.waitFor("the certificates' expiry exported", func() error {
		ends := map[string]float64{}
		for _, reg := range tc.metrics {
			families, err := reg.Gather()
			if err != nil {
				return err
			}
			for _, f := range families {
				if f.GetName() != "cairn_postgres_certificate_expiry_timestamp_seconds" {
					continue
				}
				for _, m := range f.GetMetric() {
					for _, l := range m.GetLabel() {
						if l.GetName() == "secret" {
							ends[l.GetValue()] = m.GetGauge().GetValue()
						}
					}
				}
			}
		}
		now := float64(time.Now().Unix())
		for _, secret := range []string{contract.CASecret("pg"), contract.ServerTLSSecret("pg"), contract.ClientTLSSecret("pg")} {
			if ends[secret] <= now {
				return fmt.Errorf("expiry by secret %v", ends)
			}
		}
		return nil
	})

	// Each issue and renewal is an Event on the StatefulSet.
	evs, err := tc.c.CoreV1().Events(tc.ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	issued := 0
	for _, e := range evs.Items {
		if e.Reason == ReasonCertificatesIssued && e.InvolvedObject.Kind == "StatefulSet" {
			issued++
		}
	}
	if issued < 2 {
		t.Errorf("%d %s Events; want the first issue and a renewal", issued, ReasonCertificatesIssued)
	}

	w.enter("failover")
	old := tc.primary()
	tc.kill9(old)
	tc.waitFor("a new primary", func() error {
		if p := tc.primary(); p < 0 || p == old {
			return fmt.Errorf("primary %d", p)
		}
		return nil
	})
	tc.run(old, contract.BootstrapExisting)
	tc.waitFor("the old primary rewound and streaming over TLS", tc.healthy)
	w.enter("after")
	time.Sleep(time.Second)
	cancel()

	w.mu.Lock()
	defer w.mu.Unlock()
	t.Logf("writes acknowledged by phase %v; failed in the failover: %d", w.ok, len(w.failed["failover"]))
	for phase, errs := range w.failed {
		if phase != "failover" && len(errs) > 0 {
			t.Errorf("%d writes failed while %s, first: %s", len(errs), phase, errs[0])
		}
	}
	for _, phase := range []string{"off", contract.TLSAccept, contract.TLSRequire, "renewal", "after"} {
		if w.ok[phase] == 0 {
			t.Errorf("no write acknowledged while %s", phase)
		}
	}
	// Nothing but TLS is admitted now.
	cfg, _ := pgx.ParseConfig("")
	cfg.Host, cfg.Port, cfg.User, cfg.Password, cfg.Database = tc.m.ip(0), uint16(tc.m.port), "postgres", superPW, "postgres"
	cfg.TLSConfig, cfg.Fallbacks = nil, nil
	if c, err := pgx.ConnectConfig(context.Background(), cfg); err == nil {
		c.Close(context.Background())
		t.Error("a plain connection was admitted under require")
	} else if !strings.Contains(err.Error(), "no pg_hba.conf entry") {
		t.Errorf("a plain connection refused with %v", err)
	}
}

// impostor is a server at a member's address that speaks PostgreSQL's
// TLS negotiation with a certificate of its own: it counts the TLS
// handshakes begun, those completed, and the bytes a client sent it after
// one (a startup message, a password).
type impostor struct {
	l                          net.Listener
	begun, completed, appBytes atomic.Int32
}

func startImpostor(t *testing.T, addr string, cert tls.Certificate) *impostor {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	im := &impostor{l: l}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			go im.serve(conn, cert)
		}
	}()
	return im
}

func (im *impostor) serve(conn net.Conn, cert tls.Certificate) {
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	req := make([]byte, 8) // SSLRequest: length 8, code 80877103
	if _, err := io.ReadFull(conn, req); err != nil {
		return
	}
	if _, err := conn.Write([]byte("S")); err != nil {
		return
	}
	im.begun.Add(1)
	tc := tls.Server(conn, &tls.Config{Certificates: []tls.Certificate{cert}})
	if err := tc.Handshake(); err != nil {
		return
	}
	im.completed.Add(1)
	buf := make([]byte, 4096)
	for {
		n, err := tc.Read(buf)
		im.appBytes.Add(int32(n))
		if err != nil {
			return
		}
	}
}

// A server at a member's address that cannot prove itself with the
// cluster's certificate gets nothing from the runtime under require: no
// startup message, no password, no role label. Whether its certificate
// comes from another CA or from the cluster's CA for another cluster's
// names, the runtime ends the TLS handshake before sending a byte.
func TestAServerWithoutTheClustersCertificateGetsNothing(t *testing.T) {
	cp := testbed.Start(t)
	c := cp.Client(t)
	clusterCA := func(t *testing.T, ns string) *pki.CA {
		s, err := c.CoreV1().Secrets(ns).Get(context.Background(), contract.CASecret("pg"), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ca, err := pki.ParseCA(s.Data[contract.TLSKeyCert], s.Data[contract.TLSKeyKey])
		if err != nil {
			t.Fatal(err)
		}
		return ca
	}
	for i, tc := range []struct {
		name string
		cert func(t *testing.T, ns string) tls.Certificate
		// trusted: the control, a server holding the cluster's own
		// certificate, which the runtime does talk to.
		trusted bool
	}{
		{"another CA", func(t *testing.T, ns string) tls.Certificate {
			ca, err := pki.NewCA("impostor CA", time.Now(), time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			return leafPair(t, ca, contract.PostgresServerNames("pg", ns))
		}, false},
		{"the cluster's CA, another cluster's names", func(t *testing.T, ns string) tls.Certificate {
			return leafPair(t, clusterCA(t, ns), contract.PostgresServerNames("other", ns))
		}, false},
		{"control: the cluster's own certificate", func(t *testing.T, ns string) tls.Certificate {
			return leafPair(t, clusterCA(t, ns), contract.PostgresServerNames("pg", ns))
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := cp.Namespace(t, fmt.Sprintf("impostor%d", i))
			m := newMembers(t)
			pods(t, c, ns, m, 1)
			if _, err := c.CoreV1().ConfigMaps(ns).Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: contract.ConfigMap("pg")},
				Data: map[string]string{contract.KeyBootstrap: contract.BootstrapExisting, contract.KeyTLS: contract.TLSRequire}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			r := &Roles{Client: c, Namespace: ns, Cluster: "pg", Port: m.port, Log: slog.New(slog.NewTextHandler(logWriter{t}, nil))}
			// The first pass issues the cluster's certificates.
			if err := r.Pass(context.Background()); err != nil {
				t.Fatal(err)
			}
			im := startImpostor(t, net.JoinHostPort(m.ip(0), strconv.Itoa(m.port)), tc.cert(t, ns))
			for range 3 {
				if err := r.Pass(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
			if im.begun.Load() == 0 {
				t.Fatal("the runtime never tried the member's address")
			}
			n, b := im.completed.Load(), im.appBytes.Load()
			switch {
			case tc.trusted && (n == 0 || b == 0):
				t.Errorf("the control: %d handshakes completed, %d bytes received; the runtime should have talked to it", n, b)
			case !tc.trusted && (n != 0 || b != 0):
				t.Errorf("the impostor completed %d handshakes and received %d bytes", n, b)
			}
			if got := labels(t, c, ns)["pg-0"]; got != "" {
				t.Errorf("the impostor's pod is labelled %q", got)
			}
		})
	}
}

func leafPair(t *testing.T, ca *pki.CA, names []string) tls.Certificate {
	leaf, err := ca.IssueServer(names, time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(leaf.CertPEM, leaf.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return pair
}

// With a cert-manager issuer, the runtime only reads the certificates
// cert-manager writes: it makes no CA, writes no Secret, and reaches a
// member that holds the issuer's certificate.
func TestCertManagerCertificatesAreReadNotWritten(t *testing.T) {
	testbed.Require(t, testbed.TierIntegration, "PostgreSQL members")
	cp := testbed.Start(t)
	c := cp.Client(t)
	ns := cp.Namespace(t, "issuer")
	m := newMembers(t)
	pods(t, c, ns, m, 1)
	ctx := context.Background()
	// The Secrets as cert-manager writes them, from the issuer's CA.
	ca, err := pki.NewCA("company CA", time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	server, err := ca.IssueServer(contract.PostgresServerNames("pg", ns), time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	client, err := ca.IssueClient(contract.PostgresSuperuser, time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	written := map[string]string{}
	for name, leaf := range map[string]pki.Leaf{contract.ServerTLSSecret("pg"): server, contract.ClientTLSSecret("pg"): client} {
		s, err := c.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, Type: corev1.SecretTypeTLS,
			Data: map[string][]byte{contract.TLSKeyCert: leaf.CertPEM, contract.TLSKeyKey: leaf.KeyPEM, contract.TLSKeyCA: ca.CertPEM}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		written[name] = s.ResourceVersion
	}
	if _, err := c.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: contract.ConfigMap("pg")},
		Data: map[string]string{contract.KeyBootstrap: contract.BootstrapExisting, contract.KeyTLS: contract.TLSRequire,
			contract.KeyTLSIssuerName: "company-ca", contract.KeyTLSIssuerKind: contract.ClusterIssuerKind, contract.KeyTLSIssuerGroup: contract.CertManagerGroup}},
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(server.CertPEM, server.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	im := startImpostor(t, net.JoinHostPort(m.ip(0), strconv.Itoa(m.port)), pair)
	r := &Roles{Client: c, Namespace: ns, Cluster: "pg", Port: m.port, Log: slog.New(slog.NewTextHandler(logWriter{t}, nil))}
	for range 3 {
		if err := r.Pass(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if n, b := im.completed.Load(), im.appBytes.Load(); n == 0 || b == 0 {
		t.Errorf("the member with the issuer's certificate: %d handshakes completed, %d bytes received", n, b)
	}
	if _, err := c.CoreV1().Secrets(ns).Get(ctx, contract.CASecret("pg"), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the runtime made a CA Secret beside cert-manager's issuer: %v", err)
	}
	for name, rv := range written {
		s, err := c.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil || s.ResourceVersion != rv {
			t.Errorf("secret %s was written by the runtime: %v", name, err)
		}
	}
}

// A pod at a member's address that asks the runtime for the superuser's
// password in cleartext, or as MD5 with a salt it chose, gets nothing,
// before TLS and while the cluster moves to it (accept, where a member
// that serves no TLS yet is reached as before): every connection answers
// only SCRAM or no exchange at all (contract.PostgresRequireAuth), and
// fails before a credential is sent. pgfake's own test is the control:
// a client without that restriction sends the password.
func TestNoPasswordForAServerThatAsksForItInClear(t *testing.T) {
	cp := testbed.Start(t)
	c := cp.Client(t)
	i := 0
	for _, mode := range []string{contract.TLSOff, contract.TLSAccept} {
		for _, ask := range []pgfake.Ask{pgfake.Cleartext, pgfake.MD5} {
			i++
			t.Run(mode+"/"+ask.String(), func(t *testing.T) {
				ns := cp.Namespace(t, fmt.Sprintf("askclear%d", i))
				m := newMembers(t)
				pods(t, c, ns, m, 1)
				if _, err := c.CoreV1().ConfigMaps(ns).Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: contract.ConfigMap("pg")},
					Data: map[string]string{contract.KeyBootstrap: contract.BootstrapExisting, contract.KeyTLS: mode}}, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
				im := pgfake.ServeAt(t, net.JoinHostPort(m.ip(0), strconv.Itoa(m.port)), ask)
				r := &Roles{Client: c, Namespace: ns, Cluster: "pg", Port: m.port, Log: slog.New(slog.NewTextHandler(logWriter{t}, nil))}
				for range 3 {
					if err := r.Pass(context.Background()); err != nil {
						t.Fatal(err)
					}
				}
				if im.Startups() == 0 {
					t.Fatal("the runtime never tried the member's address")
				}
				if got := im.Passwords(); len(got) != 0 {
					t.Fatalf("the runtime sent %d password message(s) to a server that asked for the password in %s", len(got), ask)
				}
				if got := labels(t, c, ns)["pg-0"]; got != "" {
					t.Errorf("the impostor's pod is labelled %q", got)
				}
			})
		}
	}
}
