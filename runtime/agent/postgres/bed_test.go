package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/runtime/agent"
	"github.com/cairn-dev/cairn/runtime/instance"
	pginstance "github.com/cairn-dev/cairn/runtime/instance/postgres"
	"github.com/cairn-dev/cairn/testbed"
)

// pgCluster is a PostgreSQL cluster as in pods: members run by their
// instance managers (pginstance.Run), each backing a pod in the
// test control plane, and runtime replicas.
type pgCluster struct {
	t     testing.TB
	c     kubernetes.Interface
	ns    string
	m     *pgMembers
	n     int
	nodes []*pgNode
	ttl   time.Duration
	// interval is the runtime's pass interval (0: its default).
	interval time.Duration
	// metrics are the runtime replicas' metrics.
	metrics []*prometheus.Registry
	// tls, when set, gives members their certificates from the
	// runtime's Secrets and the TLS mode of the rendered config
	// (tls_test.go).
	tls func(nd *pginstance.Manager)
	// certLifetime is the runtime's (0: its default).
	certLifetime time.Duration
	// leaderLease is the runtime's (0: its default).
	leaderLease time.Duration
	// member, when set, changes each member's instance manager before it
	// runs (archive_test.go).
	member func(nd *pginstance.Manager)
	// client, when set, is the API client of each member's instance
	// manager and runtime replica, by name (apiload_test.go counts their
	// requests); nil: c.
	client func(who string) kubernetes.Interface
}

// pgNode is one member's instance manager.
type pgNode struct {
	p      *pginstance.Manager
	cancel context.CancelFunc
	done   chan error
	// cut makes the API server unreachable for its instance manager.
	cut atomic.Bool
}

func newPgCluster(t testing.TB, cp *testbed.ControlPlane, ns string, n int, ttl time.Duration) *pgCluster {
	m := newMembers(t)
	pc := &pgCluster{t: t, c: cp.Client(t), ns: ns, m: m, n: n, nodes: make([]*pgNode, n), ttl: ttl, interval: 100 * time.Millisecond}
	pods(t, pc.c, ns, m, n)
	t.Cleanup(pc.stopAll)
	return pc
}

// memberExitBound is how long a member's instance manager may take to
// return once its server is killed or its context ends; past it the test
// fails with every goroutine's stack instead of hanging until the
// package's timeout.
const memberExitBound = 90 * time.Second

// stopAll ends every member's instance manager: a member a test left
// stopped (SIGSTOP) is let go on first, since a stopped server never
// finishes its shutdown.
func (pc *pgCluster) stopAll() {
	for ord, nd := range pc.nodes {
		if nd != nil {
			pc.signal(ord, syscall.SIGCONT)
			nd.cancel()
		}
	}
	for ord, nd := range pc.nodes {
		if nd != nil {
			pc.awaitExit(ord, nd)
		}
	}
}

// awaitExit waits for member ord's instance manager to return, at most
// memberExitBound: past it, it kills the member's server and fails the
// test with every goroutine's stack.
func (pc *pgCluster) awaitExit(ord int, nd *pgNode) {
	select {
	case <-nd.done:
		return
	case <-time.After(memberExitBound):
	}
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	pc.signal(ord, syscall.SIGKILL)
	nd.cancel()
	pc.t.Errorf("pg-%d's instance manager did not return within %s; goroutines:\n%s", ord, memberExitBound, buf)
	select {
	case <-nd.done:
	case <-time.After(memberExitBound):
	}
}

// run starts member ord's instance manager.
func (pc *pgCluster) run(ord int, bootstrap string) {
	name := "pg-" + strconv.Itoa(ord)
	home := filepath.Join(pc.m.dir, name)
	_ = os.MkdirAll(home, 0o700)
	if pc.m.cred != nil {
		_ = os.Chown(home, int(pc.m.cred.Uid), int(pc.m.cred.Gid))
	}
	var cands []string
	for i := range pc.n {
		cands = append(cands, net.JoinHostPort(pc.m.ip(i), strconv.Itoa(pc.m.port)))
	}
	nd := &pgNode{done: make(chan error, 1)}
	api := pginstance.APIRoleLabel(pc.clientOf(name), pc.ns, name)
	nd.p = &pginstance.Manager{Name: name, PGData: filepath.Join(home, "pgdata"), BinDir: pc.m.bin,
		ConfigFile: filepath.Join(pc.m.dir, "postgresql.conf"),
		Settings:   map[string]string{"listen_addresses": pc.m.ip(ord), "port": strconv.Itoa(pc.m.port), "unix_socket_directories": home},
		Host:       pc.m.ip(ord), Port: pc.m.port, Candidates: cands, Config: pginstance.Config{Config: instance.Config{Bootstrap: bootstrap}},
		SuperuserPassword: superPW, ReplicationPassword: replPW, Credential: pc.m.cred,
		Confirm: func(ctx context.Context) (string, error) {
			if nd.cut.Load() {
				<-ctx.Done()
				return "", errors.New("cut off from the API server")
			}
			return api(ctx)
		},
		LeaseTTL: pc.ttl,
		Stops:    pginstance.APICleanStops(pc.clientOf(name), pc.ns, "pg"),
		Log:      slog.New(slog.NewTextHandler(pc.out(), nil)).With("member", name)}
	if pc.tls != nil {
		pc.tls(nd.p)
	}
	if pc.member != nil {
		pc.member(nd.p)
	}
	ctx, cancel := context.WithCancel(context.Background())
	nd.cancel = cancel
	pc.nodes[ord] = nd
	go func() { nd.done <- pginstance.Run(ctx, nd.p, pc.out()) }()
}

// clientOf is the API client of the member or runtime replica who.
func (pc *pgCluster) clientOf(who string) kubernetes.Interface {
	if pc.client == nil {
		return pc.c
	}
	return pc.client(who)
}

// out is where members and runtimes log: the test's log, nowhere in a
// benchmark.
func (pc *pgCluster) out() io.Writer {
	if _, bench := pc.t.(*testing.B); bench {
		return io.Discard
	}
	return logWriter{pc.t}
}

// start brings the cluster up: member 0 initialises, the others clone.
func (pc *pgCluster) start() {
	pc.run(0, "new")
	pc.waitFor("pg-0 answers", func() error { return pc.m.ping(0) })
	for i := 1; i < pc.n; i++ {
		pc.run(i, "existing")
	}
}

// signal sends sig to member ord's postmaster and every process it
// started: SIGSTOP freezes the whole server, sessions open before and WAL
// senders too, as a hung host would.
func (pc *pgCluster) signal(ord int, sig syscall.Signal) {
	data, err := os.ReadFile(filepath.Join(pc.nodes[ord].p.PGData, "postmaster.pid"))
	if errors.Is(err, os.ErrNotExist) && (sig == syscall.SIGCONT || sig == syscall.SIGKILL) {
		return // no server running: nothing to let go on or to kill
	}
	if err != nil {
		pc.t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(data), "\n", 2)[0]))
	if err != nil {
		pc.t.Fatal(err)
	}
	if sig == syscall.SIGKILL {
		pginstance.KillPostmaster(pid)
		return
	}
	pginstance.SignalServer(pid, sig)
}

// kill9 kills member ord as the loss of its node would: its instance
// manager and its server at once. The server is frozen first, so its
// manager, ended next, neither restarts it in place nor shuts it down
// cleanly; then it is killed, the postmaster and its children, and the
// manager returns.
func (pc *pgCluster) kill9(ord int) {
	nd := pc.nodes[ord]
	pc.signal(ord, syscall.SIGSTOP)
	nd.cancel()
	pc.signal(ord, syscall.SIGKILL)
	pc.awaitExit(ord, nd)
	pc.nodes[ord] = nil
}

// crash kills member ord's server as a crash would (an OOM kill), the
// postmaster and its children, its instance manager alive: the manager
// restarts it in place.
func (pc *pgCluster) crash(ord int) { pc.signal(ord, syscall.SIGKILL) }

func (pc *pgCluster) waitFor(what string, fn func() error) {
	pc.t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		err := fn()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			pc.t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// primary is the ordinal of the pod labelled primary, or -1.
func (pc *pgCluster) primary() int {
	list, err := pc.c.CoreV1().Pods(pc.ns).List(context.Background(), metav1.ListOptions{LabelSelector: contract.LabelRole + "=" + contract.RolePrimary})
	if err != nil || len(list.Items) != 1 {
		return -1
	}
	ord, _ := strconv.Atoi(strings.TrimPrefix(list.Items[0].Name, "pg-"))
	return ord
}

// healthy: one primary labelled and answering, every other member a
// labelled, streaming replica.
func (pc *pgCluster) healthy() error {
	p := pc.primary()
	if p < 0 {
		return errors.New("no pod labelled primary")
	}
	got := labels(pc.t, pc.c, pc.ns)
	for i := range pc.n {
		rec, err := pc.m.inRecovery(i)
		switch {
		case err != nil:
			return err
		case i == p && rec:
			return fmt.Errorf("pg-%d labelled primary is in recovery", i)
		case i != p && (!rec || got["pg-"+strconv.Itoa(i)] != contract.RoleReplica):
			return fmt.Errorf("pg-%d: in recovery %v, labels %v", i, rec, got)
		}
	}
	return nil
}

// write inserts id through the -rw address: the pod labelled primary.
func (pc *pgCluster) write(ctx context.Context, id int) error {
	p := pc.primary()
	if p < 0 {
		return errors.New("no primary labelled")
	}
	return pc.m.writeTo(ctx, p, id)
}

// runtimes starts runtime replicas; each stops with its context.
func (pc *pgCluster) runtime(ctx context.Context, id string, s FailoverSettings, hook func(context.Context, string)) {
	reg := prometheus.NewRegistry()
	pc.metrics = append(pc.metrics, reg)
	keeper := func(c kubernetes.Interface, cfg agent.Config) (agent.Keeper, error) {
		k, err := Config{Port: pc.m.port, Failover: s}.Keeper(c, cfg)
		if err == nil {
			k.(*Roles).hook = hook
		}
		return k, err
	}
	a, err := agent.New(agent.Config{Cluster: "pg", Namespace: pc.ns, Identity: id, Interval: pc.interval,
		CertLifetime: pc.certLifetime, LeaderLease: pc.leaderLease, Metrics: reg, Log: slog.New(slog.NewTextHandler(pc.out(), nil)).With("runtime", id)}, pc.clientOf(id), keeper)
	if err != nil {
		pc.t.Fatal(err)
	}
	go func() { _ = a.Run(ctx) }()
}

func (pc *pgCluster) status() pgStatus {
	cm, err := pc.c.CoreV1().ConfigMaps(pc.ns).Get(context.Background(), contract.StatusConfigMap("pg"), metav1.GetOptions{})
	if err != nil {
		return pgStatus{}
	}
	var st pgStatus
	_ = json.Unmarshal([]byte(cm.Data[contract.StatusKeyPostgres]), &st)
	return st
}

func (m *pgMembers) dial(ctx context.Context, ord int) (*pgx.Conn, error) {
	cfg, _ := pgx.ParseConfig("")
	cfg.Host, cfg.Port, cfg.User, cfg.Password, cfg.Database = m.ip(ord), uint16(m.port), "postgres", superPW, "postgres"
	cfg.ConnectTimeout = time.Second
	if m.tls != nil {
		if tc := m.tls(ord); tc != nil {
			// TLS first; a member that does not serve it yet by password.
			cfg.TLSConfig, cfg.Fallbacks = tc, []*pgconn.FallbackConfig{{Host: cfg.Host, Port: cfg.Port}}
		}
	}
	return pgx.ConnectConfig(ctx, cfg)
}

func (m *pgMembers) ping(ord int) error {
	_, err := m.inRecovery(ord)
	return err
}

func (m *pgMembers) inRecovery(ord int) (bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	c, err := m.dial(ctx, ord)
	if err != nil {
		return false, err
	}
	defer c.Close(context.Background())
	var v bool
	err = c.QueryRow(ctx, "SELECT pg_is_in_recovery()").Scan(&v)
	return v, err
}

func (m *pgMembers) writeTo(ctx context.Context, ord, id int) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	c, err := m.dial(ctx, ord)
	if err != nil {
		return err
	}
	defer c.Close(context.Background())
	_, err = c.Exec(ctx, "INSERT INTO t VALUES ($1)", id)
	return err
}

func (m *pgMembers) ids(ord int) (map[int]bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := m.dial(ctx, ord)
	if err != nil {
		return nil, err
	}
	defer c.Close(context.Background())
	rows, err := c.Query(ctx, "SELECT id FROM t")
	if err != nil {
		return nil, err
	}
	got, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	out := map[int]bool{}
	for _, id := range got {
		out[int(id)] = true
	}
	return out, err
}

// writers is what a sampler saw: how many samples, and the most members
// at once that took writes (sample).
type writers struct {
	mu      sync.Mutex
	samples int
	worst   int
	at      time.Time
}

// sampleWriters counts, every 100ms, the members that answer as
// primaries.
func (pc *pgCluster) sampleWriters(ctx context.Context) *writers {
	return pc.sample(ctx, 100*time.Millisecond, func(i int) bool {
		rec, err := pc.m.inRecovery(i)
		return err == nil && !rec
	})
}

func (w *writers) check(t testing.TB) {
	w.mu.Lock()
	defer w.mu.Unlock()
	t.Logf("%d samples of the members taking writes, at most %d at once", w.samples, w.worst)
	if w.worst > 1 {
		t.Errorf("%d members answered as primaries at %s", w.worst, w.at.Format(time.RFC3339Nano))
	}
}

// failovers sums the runtime replicas' cairn_postgres_failovers_total.
func (pc *pgCluster) failovers() float64 {
	sum := 0.0
	for _, reg := range pc.metrics {
		families, err := reg.Gather()
		if err != nil {
			pc.t.Fatal(err)
		}
		for _, f := range families {
			if f.GetName() == "cairn_postgres_failovers_total" {
				sum += f.GetMetric()[0].GetCounter().GetValue()
			}
		}
	}
	return sum
}
