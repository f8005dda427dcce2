package etcd

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
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

// project writes files into dir as the kubelet writes a projected
// volume: into a new directory, made current by renaming a ..data
// symlink over the old one, each file a symlink through ..data.
func project(t *testing.T, dir string, files map[string][]byte) {
	t.Helper()
	ts := fmt.Sprintf("..%d", time.Now().UnixNano())
	if err := os.Mkdir(filepath.Join(dir, ts), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, ts, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	tmp := filepath.Join(dir, "..data_tmp")
	if err := os.Symlink(ts, tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	for name := range files {
		link := filepath.Join(dir, name)
		if _, err := os.Lstat(link); errors.Is(err, os.ErrNotExist) {
			if err := os.Symlink(filepath.Join("..data", name), link); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// tlsFiles are a member's certificate files: bundle, and a peer and a
// client certificate from ca, for 30 minutes.
func tlsFiles(t *testing.T, ca *pki.CA, bundle []byte) map[string][]byte {
	t.Helper()
	var ips []net.IP
	for i := range 5 {
		ips = append(ips, net.ParseIP(instancetest.HostOf(i)))
	}
	peer, err := ca.IssuePeer(contract.EtcdServerNames("e", "ns"), ips, time.Now(), 30*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	client, err := ca.IssueClient(contract.EtcdClientCommonName, time.Now(), 30*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	return map[string][]byte{
		contract.TLSFileCA: bundle, contract.TLSFileServerCert: peer.CertPEM, contract.TLSFileServerKey: peer.KeyPEM,
		contract.TLSFileClientCert: client.CertPEM, contract.TLSFileClientKey: client.KeyPEM,
	}
}

// logLines keeps what the supervisors log, for the test to count.
type logLines struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// count is the number of lines with every one of parts.
func (l *logLines) count(parts ...string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for line := range strings.Lines(l.b.String()) {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(line, p)
		}
		if all {
			n++
		}
	}
	return n
}

// supervised is a member run by Supervise.
type supervised struct {
	e      *Manager
	cancel context.CancelFunc
	done   chan error
}

func supervise(t *testing.T, bin string, e *Manager) *supervised {
	out, err := os.Create(filepath.Join(t.TempDir(), e.Name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &supervised{e: e, cancel: cancel, done: make(chan error, 1)}
	go func() { s.done <- e.Supervise(ctx, bin, nil, out, out) }()
	t.Cleanup(func() {
		s.stop(t)
		out.Close()
	})
	return s
}

// stop ends the supervisor as the pod's SIGTERM does and returns how.
func (s *supervised) stop(t *testing.T) error {
	s.cancel()
	select {
	case err := <-s.done:
		s.done <- err
		return err
	case <-time.After(30 * time.Second):
		t.Errorf("%s: the supervisor did not return within 30s of its stop", s.e.Name)
		return nil
	}
}

// dial is a client of the endpoints with tc.
func dial(t *testing.T, tc *tls.Config, eps ...string) *clientv3.Client {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 2 * time.Second, Logger: zap.NewNop(), TLS: tc})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// clientConfig presents files' client certificate and trusts bundle.
func clientConfig(t *testing.T, files map[string][]byte, bundle []byte) *tls.Config {
	t.Helper()
	pool, err := pki.Pool(bundle)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(files[contract.TLSFileClientCert], files[contract.TLSFileClientKey])
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool, Certificates: []tls.Certificate{pair}}
}

// admitted reads a key through endpoint ep alone with tc.
func admitted(t *testing.T, tc *tls.Config, ep string) error {
	c := dial(t, tc, ep)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	_, err := c.Get(ctx, "k")
	return err
}

// downSampler samples the members' metrics ports every 100 ms: a member
// that does not answer is down.
type downSampler struct {
	maxDown  atomic.Int32
	down     sync.Map // member -> *atomic.Int32, samples down
	stop     chan struct{}
	finished chan struct{}
}

func sampleDown(urls map[string]string) *downSampler {
	s := &downSampler{stop: make(chan struct{}), finished: make(chan struct{})}
	hc := &http.Client{Timeout: 500 * time.Millisecond}
	go func() {
		defer close(s.finished)
		for {
			select {
			case <-s.stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			var n int32
			for m, u := range urls {
				resp, err := hc.Get(u + "/health")
				if err == nil {
					resp.Body.Close()
					continue
				}
				n++
				c, _ := s.down.LoadOrStore(m, new(atomic.Int32))
				c.(*atomic.Int32).Add(1)
			}
			if n > s.maxDown.Load() {
				s.maxDown.Store(n)
			}
		}
	}()
	return s
}

func (s *downSampler) halt() {
	close(s.stop)
	<-s.finished
}

func (s *downSampler) samples(m string) int32 {
	c, ok := s.down.Load(m)
	if !ok {
		return 0
	}
	return c.(*atomic.Int32).Load()
}

// writer puts keys through c until stopped, as a client of a rolling
// restart does: a Put in flight on the member that stops cannot be
// answered (etcd does not drain clients), so it is tried again, up to
// three times, each with a 2 s deadline. A write counts as failed only
// when every try failed; retried counts the writes that needed more
// than one. The keys are idempotent, so trying again is safe.
type writer struct {
	done, failed, retried atomic.Int64
	stop                  chan struct{}
	wg                    sync.WaitGroup
}

func startWriter(t *testing.T, c *clientv3.Client) *writer {
	w := &writer{stop: make(chan struct{})}
	w.wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-w.stop:
				return
			default:
			}
			var err error
			for try := range 3 {
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				_, err = c.Put(ctx, fmt.Sprintf("w/%d", i), "v")
				cancel()
				if err == nil {
					if try > 0 {
						w.retried.Add(1)
					}
					break
				}
				t.Logf("write %d, try %d: %v", i, try+1, err)
			}
			if err != nil {
				w.failed.Add(1)
			}
			w.done.Add(1)
			time.Sleep(10 * time.Millisecond)
		}
	})
	return w
}

func (w *writer) halt() { close(w.stop); w.wg.Wait() }

// caBed is three members e-0..e-2 under their supervisors, each with
// its own projected certificate files, and a control member e-4 that
// etcd runs unsupervised.
type caBed struct {
	*etcdTLSBed
	names   []string
	eps     []string          // the supervised members' client URLs
	health  map[string]string // member -> its plain metrics URL
	dirs    map[string]string // member (or "control") -> its files' directory
	files   map[string]map[string][]byte
	sups    map[string]*supervised
	logs    *logLines
	turns   RestartTurns
	control string // the control's client URL
}

// newCABed starts the members with files of ca, each trusting ca alone.
func newCABed(t *testing.T) *caBed {
	b := &caBed{etcdTLSBed: newEtcdTLSBed(t, 3), names: []string{"e-0", "e-1", "e-2"},
		health: map[string]string{}, dirs: map[string]string{}, files: map[string]map[string][]byte{},
		sups: map[string]*supervised{}, logs: &logLines{},
		turns: RestartTurns{Poll: 200 * time.Millisecond, Turn: 6 * time.Second, Stop: 10 * time.Second}}
	for _, m := range b.names {
		b.eps = append(b.eps, httpsURL(b.host(m), b.cli[m]))
		b.health[m] = url(b.host(m), b.metrics[m])
	}
	for _, m := range append(slices.Clone(b.names), "control") {
		b.dirs[m], b.files[m] = t.TempDir(), tlsFiles(t, b.ca, b.ca.CertPEM)
		project(t, b.dirs[m], b.files[m])
	}
	for _, m := range b.names {
		b.sups[m] = supervise(t, b.bin, b.supervised(t, m))
	}
	ctl := b.manager("e-4", "new")
	ctl.TLSDir = b.dirs["control"]
	peer, cli := httpsURL(b.host("e-4"), b.peer["e-4"]), httpsURL(b.host("e-4"), b.cli["e-4"])
	start(t, nil, b.bin, append([]string{"--name", "e-4", "--data-dir", filepath.Join(b.dir, "control"),
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer, "--initial-cluster", "e-4=" + peer,
		"--listen-client-urls", cli, "--advertise-client-urls", cli}, ctl.tlsArgs()...)...)
	b.control = cli
	return b
}

// supervised is member m's instance manager, logging to b.logs.
func (b *caBed) supervised(t *testing.T, m string) *Manager {
	e := b.manager(m, "new")
	e.TLSDir, e.Turns, e.Endpoints = b.dirs[m], b.turns, b.eps
	e.Log = slog.New(slog.NewTextHandler(io.MultiWriter(b.logs, instancetest.Writer(t)), nil))
	return e
}

// projectAll writes bundle, with each one's leaves, into every member's
// files, the control's too.
func (b *caBed) projectAll(t *testing.T, bundle []byte) {
	for m, f := range b.files {
		f[contract.TLSFileCA] = bundle
		project(t, b.dirs[m], f)
	}
}

// starts is how many times etcd started under m's supervisor.
func (b *caBed) starts(m string) int { return b.logs.count(`msg="etcd started"`, "member="+m) }

// TestEtcdRestartsOntoANewCA: three members under their supervisors
// trust CA1. The runtime's first move (a bundle of CA1 and CA2) is
// projected into every member's files at once: each member restarts in
// its turn, never two down at once, with writes running and none
// failing, and then admits a client of CA2, which a control member that
// got the same bundle but was not restarted refuses. The second move
// (leaves of CA2, the bundle reordered) restarts nobody; clients of CA2
// alone are admitted, and a member started again with its CA2 peer
// certificate rejoins.
func TestEtcdRestartsOntoANewCA(t *testing.T) {
	b := newCABed(t)
	now := time.Now()
	ca1 := b.ca
	ca2, err := pki.NewCA("test etcd CA 2", now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	bundle12, bundle21 := pki.Bundle(ca1, ca2.CertPEM, now), pki.Bundle(ca2, ca1.CertPEM, now)
	root := dial(t, clientConfig(t, b.files["e-0"], ca1.CertPEM), b.eps...)
	instancetest.Eventually(t, 60*time.Second, "three supervised members and the control", func(ctx context.Context) error {
		if _, err := root.Put(ctx, "k", "v"); err != nil {
			return err
		}
		return admitted(t, clientConfig(t, b.files["control"], ca1.CertPEM), b.control)
	})

	// A client of CA2 is refused while the members trust CA1 alone: what
	// the restarts must change.
	ca2Files := tlsFiles(t, ca2, bundle21)
	ca2Client := clientConfig(t, ca2Files, bundle12)
	if err := admitted(t, ca2Client, b.eps[0]); err == nil {
		t.Fatal("a member trusting CA1 alone admitted a client of CA2")
	}

	// A bundle that does not parse is not restarted onto.
	broken := maps.Clone(b.files["e-1"])
	broken[contract.TLSFileCA] = []byte("-----BEGIN CERTIFICATE-----\nnot base64\n")
	project(t, b.dirs["e-1"], broken)
	instancetest.Eventually(t, 10*time.Second, "e-1 refuses the broken bundle", func(context.Context) error {
		if b.logs.count("member=e-1", "cannot be used") == 0 {
			return errors.New("not logged yet")
		}
		return nil
	})

	// The first move, into every member's files at once.
	down := sampleDown(b.health)
	w := startWriter(t, root)
	time.Sleep(500 * time.Millisecond)
	moved := time.Now()
	b.projectAll(t, bundle12)
	instancetest.Eventually(t, 2*time.Minute, "every member restarted onto the new bundle", func(context.Context) error {
		for _, m := range b.names {
			if n := b.starts(m); n < 2 {
				return fmt.Errorf("%s started %d times", m, n)
			}
		}
		return nil
	})
	t.Logf("every member restarted within %s of the new bundle", time.Since(moved).Round(time.Second))
	time.Sleep(time.Second)
	w.halt()
	down.halt()
	for _, m := range b.names {
		n := b.logs.count("restarting etcd", "member="+m)
		t.Logf("%s: down in %d samples of 100 ms; restarts: %d", m, down.samples(m), n)
		if n != 1 {
			t.Errorf("%s restarted %d times, want 1", m, n)
		}
	}
	if got := down.maxDown.Load(); got > 1 {
		t.Errorf("%d members were down at once", got)
	}
	if w.failed.Load() != 0 || w.done.Load() < 20 {
		t.Fatalf("%d of %d writes failed during the restarts", w.failed.Load(), w.done.Load())
	}
	t.Logf("%d writes during the restarts, none failed (%d tried again); at most %d member down at once",
		w.done.Load(), w.retried.Load(), down.maxDown.Load())
	for i, m := range b.names {
		if err := admitted(t, ca2Client, b.eps[i]); err != nil {
			t.Errorf("%s, restarted, refuses a client of CA2: %v", m, err)
		}
	}
	if err := admitted(t, ca2Client, b.control); err == nil {
		t.Error("the control member, not restarted, admitted a client of CA2")
	}

	t.Run("second move", func(t *testing.T) { testSecondMove(t, b, ca2, ca2Files, bundle21) })
}

// testSecondMove: leaves from CA2 and the bundle reordered restart
// nobody; members present their CA2 leaves to clients trusting CA2
// alone, and a member stopped and started again rejoins, its peer
// connections made with its CA2 leaf both ways.
func testSecondMove(t *testing.T, b *caBed, ca2 *pki.CA, ca2Files map[string][]byte, bundle21 []byte) {
	started, changed := b.logs.count(`msg="etcd started"`), b.logs.count("the CA bundle changed")
	for _, m := range b.names {
		project(t, b.dirs[m], tlsFiles(t, ca2, bundle21))
	}
	time.Sleep(2 * time.Second)
	if n, c := b.logs.count(`msg="etcd started"`), b.logs.count("the CA bundle changed"); n != started || c != changed {
		t.Errorf("the second move was taken for a change of trust: %d starts (%d before), %d waits logged (%d before)", n, started, c, changed)
	}
	ca2Only := clientConfig(t, ca2Files, ca2.CertPEM)
	for i, m := range b.names {
		if err := admitted(t, ca2Only, b.eps[i]); err != nil {
			t.Errorf("%s, with a leaf of CA2, refuses a client trusting CA2 alone: %v", m, err)
		}
	}
	// Stopped as for the pod's SIGTERM: the supervisor returns nil.
	if err := b.sups["e-0"].stop(t); err != nil {
		t.Fatalf("e-0's supervisor, stopped: %v", err)
	}
	b.sups["e-0"] = supervise(t, b.bin, b.supervised(t, "e-0"))
	only0 := dial(t, ca2Only, b.eps[0])
	instancetest.Eventually(t, 30*time.Second, "e-0 back with its CA2 peer certificate", func(ctx context.Context) error {
		_, err := only0.Put(ctx, "after", "v")
		return err
	})
}
