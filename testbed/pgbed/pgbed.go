// Package pgbed backs the PostgreSQL pods of a test bed with real
// PostgreSQL members, of the major each pod's image tag names (13 or 15,
// side by side: testbed.LookupPostgresBin). For each pod the node
// stand-in starts, it runs the pod's pg-upgrade init container first, with
// both majors' programs, then the instance manager (postgres.Run:
// initialise, clone, rewind, follow, confirm the role label through the
// API server) with the pod's rendered ConfigMaps and the cluster's
// Secrets, on the pod's own 127.x.y.z address and PostgreSQL's usual port.
// A major upgrade's pre-flight check pod runs its check (check.go).
// A member's data directory is keyed by its claim's UID.
//
// It is for tests only.
package pgbed

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/runtime/certs"
	"github.com/cairn-dev/cairn/runtime/instance/postgres"
	"github.com/cairn-dev/cairn/testbed"
	"github.com/jackc/pgx/v5"
)

// Port is the members' port, on each pod's own address.
const Port = contract.PostgresPort

// Bed backs PostgreSQL pods of one namespace; it is a testbed.Backer.
type Bed struct {
	client kubernetes.Interface
	ns     string
	bin    string
	dir    string
	cred   *syscall.Credential
	log    *slog.Logger
	// walClient is the members' archive and restore command.
	walClient string
	// Addresses give each member its own loopback address.
	*testbed.Addresses

	mu      sync.Mutex
	running map[string]*member
}

// New returns a bed for namespace ns of cp.
func New(t testing.TB, cp *testbed.ControlPlane, ns string, log *slog.Logger) *Bed {
	t.Helper()
	bin := testbed.PostgresBin(t)
	dir, err := os.MkdirTemp("", "cairn-pgbed-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	t.Cleanup(func() { logTails(t, dir) }) // before the folder goes
	return &Bed{client: cp.Client(t), ns: ns, bin: bin, dir: dir, cred: testbed.PostgresCredential(t, dir), log: log, walClient: testbed.WALClient(t),
		Addresses: testbed.NewAddresses(), running: map[string]*member{}}
}

// Start backs a PostgreSQL pod; other pods are not backed.
func (b *Bed) Start(ctx context.Context, pod *corev1.Pod) (testbed.Running, bool, error) {
	if pod.Labels[contract.LabelName] == contract.AppUpgradeCheck {
		return b.startCheck(ctx, pod)
	}
	if pod.Labels[contract.LabelName] != contract.AppPostgres {
		return testbed.Running{}, false, nil
	}
	cluster := pod.Labels[contract.LabelInstance]
	ord, err := contract.PodOrdinal(pod.Name)
	if err != nil {
		return testbed.Running{}, false, fmt.Errorf("pod %s: no ordinal", pod.Name)
	}
	p, err := b.manager(ctx, pod, cluster, ord)
	if err != nil {
		return testbed.Running{}, false, err
	}
	upgrade, err := b.upgrade(pod, p)
	if err != nil {
		return testbed.Running{}, false, err
	}
	out, err := os.Create(filepath.Join(b.dir, pod.Name+"-"+strconv.FormatInt(time.Now().UnixNano(), 36)+".log"))
	if err != nil {
		return testbed.Running{}, false, err
	}
	mctx, cancel := context.WithCancel(context.Background())
	m := &member{p: p, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		defer out.Close()
		if upgrade != nil {
			// The pg-upgrade init container, before the database's.
			upgrade.Log = slog.New(slog.NewTextHandler(out, nil))
			if err := upgrade.Run(mctx); err != nil {
				fmt.Fprintf(out, "pg-upgrade: %v\n", err)
				return
			}
		}
		_ = postgres.Run(mctx, p, out)
	}()
	b.mu.Lock()
	b.running[pod.Name] = m
	b.mu.Unlock()
	return testbed.Running{IP: p.Host, Ready: m.ready, Exited: m.exited, Stop: m.stop}, true, nil
}

// manager is the instance manager of a pod, as `cairn instance postgres`
// builds it in the pod.
func (b *Bed) manager(ctx context.Context, pod *corev1.Pod, cluster string, ord int) (*postgres.Manager, error) {
	claim, err := b.client.CoreV1().PersistentVolumeClaims(b.ns).Get(ctx, contract.DataClaim(pod.Name), metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("pod %s: its claim: %w", pod.Name, err)
	}
	home := filepath.Join(b.dir, string(claim.UID))
	if err := b.ownedDir(home); err != nil {
		return nil, err
	}
	cfg, conf, err := b.config(ctx, cluster)
	if err != nil {
		return nil, err
	}
	super, err := b.password(ctx, contract.SuperuserSecret(cluster))
	if err != nil {
		return nil, err
	}
	repl, err := b.password(ctx, contract.ReplicationSecret(cluster))
	if err != nil {
		return nil, err
	}
	ip := b.IP(cluster, ord)
	var peers []string
	for i := range 8 {
		peers = append(peers, b.IP(cluster, i)+":"+strconv.Itoa(Port))
	}
	bin, err := b.binFor(pod)
	if err != nil {
		return nil, err
	}
	// The member's certificates, as the pod's /dev/shm holds them: the
	// server reads them from the -c settings, which rule over the
	// rendered file's.
	tlsDir := filepath.Join(home, "tls")
	settings := map[string]string{"listen_addresses": ip, "port": strconv.Itoa(Port), "unix_socket_directories": home}
	maps.Copy(settings, postgres.TLSFileSettings(tlsDir))
	// WAL goes through the member's instance manager as in a pod, by the
	// test beds' client in place of /cairn-bin/cairn; the rendered
	// archive_mode decides whether it is archived.
	walSocket := filepath.Join(home, ".s.cairn-wal")
	walCommand := b.walClient + " --socket " + walSocket
	settings["archive_command"] = walCommand + " push %f %p"
	uid, gid := -1, -1
	if b.cred != nil {
		uid, gid = int(b.cred.Uid), int(b.cred.Gid)
	}
	return &postgres.Manager{
		Name: pod.Name, PGData: filepath.Join(home, "pgdata"), BinDir: bin, ConfigFile: conf,
		Settings:  settings,
		Namespace: b.ns, TLSDir: tlsDir, CertsEvery: CertsEvery, TLSMode: b.tlsMode(cluster),
		Certs: &certs.Files{Client: b.client, Namespace: b.ns, Cluster: cluster, Dir: tlsDir, Uid: uid, Gid: gid},
		Host:  ip, Port: Port, Candidates: peers[:ord+1], Config: cfg,
		Peers:             func(context.Context) []string { return peers },
		RoleLabel:         b.roleLabel(pod.Name),
		Confirm:           postgres.APIRoleLabel(b.client, b.ns, pod.Name),
		Stops:             postgres.APICleanStops(b.client, b.ns, cluster),
		SuperuserPassword: super, ReplicationPassword: repl, Credential: b.cred,
		Log:     b.log.With("pod", pod.Name),
		Cluster: cluster, WALSocket: walSocket, WALCommand: walCommand,
	}, nil
}

// binFor is the PostgreSQL a pod runs: the major of its postgres
// container's image tag ("…/postgres:13.23"), as the image would hold it;
// a bed made with $CAIRN_PG_BIN runs that one for every pod.
func (b *Bed) binFor(pod *corev1.Pod) (string, error) {
	if os.Getenv("CAIRN_PG_BIN") != "" {
		return b.bin, nil
	}
	for _, c := range pod.Spec.Containers {
		if c.Name != contract.PostgresContainer {
			continue
		}
		tag := c.Image[strings.LastIndex(c.Image, ":")+1:]
		major, err := strconv.Atoi(strings.SplitN(tag, ".", 2)[0])
		if err != nil {
			return "", fmt.Errorf("pod %s: image %q has no PostgreSQL version as its tag", pod.Name, c.Image)
		}
		return testbed.LookupPostgresBin(major)
	}
	return "", fmt.Errorf("pod %s has no %s container", pod.Name, contract.PostgresContainer)
}

// upgrade is what the pod's pg-upgrade init container runs
// (`cairn instance pg-upgrade --from F --to T`), with the bed's programs
// of both majors; nil when the pod has none.
func (b *Bed) upgrade(pod *corev1.Pod, p *postgres.Manager) (*postgres.Upgrade, error) {
	for _, c := range pod.Spec.InitContainers {
		if c.Name != contract.PGUpgradeInitContainer {
			continue
		}
		majors := map[string]int{}
		for i, arg := range c.Command {
			if (arg == "--from" || arg == "--to") && i+1 < len(c.Command) {
				n, err := strconv.Atoi(c.Command[i+1])
				if err != nil {
					return nil, fmt.Errorf("pod %s: pg-upgrade %s %q", pod.Name, arg, c.Command[i+1])
				}
				majors[arg] = n
			}
		}
		oldBin, err := testbed.LookupPostgresBin(majors["--from"])
		if err != nil {
			return nil, err
		}
		newBin, err := testbed.LookupPostgresBin(majors["--to"])
		if err != nil {
			return nil, err
		}
		return &postgres.Upgrade{Name: pod.Name, PGData: p.PGData, From: majors["--from"], To: majors["--to"],
			OldBin: oldBin, NewBin: newBin, ConfigFile: p.ConfigFile, SuperuserPassword: p.SuperuserPassword,
			Credential: p.Credential}, nil
	}
	return nil, nil
}

func (b *Bed) ownedDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if b.cred != nil {
		return os.Chown(dir, int(b.cred.Uid), int(b.cred.Gid))
	}
	return nil
}

// config reads the pod's rendered <cluster>-cairn ConfigMap as the pod
// would from its mounted files, and writes <cluster>-config's
// postgresql.conf and pg_hba.conf where the bed's members read them.
func (b *Bed) config(ctx context.Context, cluster string) (postgres.Config, string, error) {
	dir, err := testbed.MountConfigMap(ctx, b.client, b.ns, contract.ConfigMap(cluster), b.dir)
	if err != nil {
		return postgres.Config{}, "", err
	}
	defer os.RemoveAll(dir)
	cfg, err := postgres.ReadConfig(dir)
	if err != nil {
		return cfg, "", err
	}
	pg, err := b.client.CoreV1().ConfigMaps(b.ns).Get(ctx, contract.PostgresConfig(cluster), metav1.GetOptions{})
	if err != nil {
		return cfg, "", fmt.Errorf("postgres config of %s: %w", cluster, err)
	}
	confDir := filepath.Join(b.dir, contract.PostgresConfig(cluster))
	if err := os.MkdirAll(confDir, 0o755); err != nil {
		return cfg, "", err
	}
	for _, f := range []string{contract.PostgresConfFile, contract.PostgresHBAFile} {
		data := strings.ReplaceAll(pg.Data[f], contract.PostgresConfigDir, confDir)
		if err := os.WriteFile(filepath.Join(confDir, f), []byte(data), 0o644); err != nil {
			return cfg, "", err
		}
	}
	return cfg, filepath.Join(confDir, contract.PostgresConfFile), nil
}

func (b *Bed) password(ctx context.Context, secret string) (string, error) {
	s, err := b.client.CoreV1().Secrets(b.ns).Get(ctx, secret, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("secret %s: %w", secret, err)
	}
	return string(s.Data[contract.SecretKeyPassword]), nil
}

// CertsEvery is how often a bed's members check their certificates: a
// second, so a test sees a renewed certificate served at once.
const CertsEvery = time.Second

// tlsMode reads the cluster's TLS mode from its rendered ConfigMap, as
// the pod's mounted file would give it, at most once a second.
func (b *Bed) tlsMode(cluster string) func() string {
	var mu sync.Mutex
	var mode string
	var at time.Time
	return func() string {
		mu.Lock()
		defer mu.Unlock()
		if time.Since(at) < time.Second {
			return mode
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		cm, err := b.client.CoreV1().ConfigMaps(b.ns).Get(ctx, contract.ConfigMap(cluster), metav1.GetOptions{})
		if err != nil {
			return mode
		}
		mode, at = cm.Data[contract.KeyTLS], time.Now()
		return mode
	}
}

// roleLabel reads the pod's role label, as the downward API's file
// would give it.
func (b *Bed) roleLabel(pod string) func() string {
	return func() string {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		p, err := b.client.CoreV1().Pods(b.ns).Get(ctx, pod, metav1.GetOptions{})
		if err != nil {
			return ""
		}
		return p.Labels[contract.LabelRole]
	}
}

// KillPostmaster kills the pod's postgres server with SIGKILL and keeps
// the pod down, as a node that hangs would: its instance manager ends
// (before the server dies, so it does not restart it in place) and is
// not started again until Release.
func (b *Bed) KillPostmaster(pod string) error {
	b.mu.Lock()
	m := b.running[pod]
	b.mu.Unlock()
	if m == nil {
		return fmt.Errorf("pod %s runs nothing", pod)
	}
	m.held.Store(true)
	data, err := os.ReadFile(filepath.Join(m.p.PGData, "postmaster.pid"))
	if err != nil {
		return err
	}
	pid, err := strconv.Atoi(strings.SplitN(string(data), "\n", 2)[0])
	if err != nil {
		return err
	}
	postgres.SignalServer(pid, syscall.SIGSTOP)
	m.cancel()
	postgres.KillPostmaster(pid)
	return nil
}

// Release lets the node start a pod KillPostmaster held down again, as a
// kubelet restarts its container.
func (b *Bed) Release(pod string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if m := b.running[pod]; m != nil {
		m.held.Store(false)
	}
}

// member is one pod's instance manager and server.
type member struct {
	p      *postgres.Manager
	cancel context.CancelFunc
	done   chan struct{}
	held   atomic.Bool
}

func (m *member) exited() bool {
	select {
	case <-m.done:
		return !m.held.Load()
	default:
		return false
	}
}

func (m *member) stop() {
	m.cancel()
	select {
	case <-m.done:
	case <-time.After(30 * time.Second):
	}
}

// ready is the readiness probe: the server takes connections (over TLS
// with the member's certificates while TLS is on).
func (m *member) ready(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	return m.p.Ping(ctx) == nil
}

// Conn connects to member ord of cluster as the superuser, as a person
// with the cluster's Secrets would: with the superuser's client
// certificate, verifying the member's, once the runtime has issued them;
// by password before (a cluster without TLS).
func (b *Bed) Conn(ctx context.Context, cluster string, ord int) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig("")
	if err != nil {
		return nil, err
	}
	super, err := b.password(ctx, contract.SuperuserSecret(cluster))
	if err != nil {
		return nil, err
	}
	cfg.Host, cfg.Port, cfg.User, cfg.Password, cfg.Database = b.IP(cluster, ord), Port, postgres.Superuser, super, contract.PostgresDatabase
	f := &certs.Files{Client: b.client, Namespace: b.ns, Cluster: cluster}
	m, err := f.Material(ctx)
	switch {
	case errors.Is(err, certs.ErrNotIssued):
		return pgx.ConnectConfig(ctx, cfg)
	case err != nil:
		return nil, err
	}
	tc, err := m.ClientConfig(contract.PostgresMemberServerName(cluster, b.ns, contract.MemberName(cluster, ord)))
	if err != nil {
		return nil, err
	}
	cfg.TLSConfig, cfg.Fallbacks = tc, nil
	return pgx.ConnectConfig(ctx, cfg)
}

// logTails logs the end of every member's log when the test failed.
func logTails(t testing.TB, dir string) {
	if !t.Failed() {
		return
	}
	logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	for _, f := range logs {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		t.Logf("%s (tail):\n%s", filepath.Base(f), strings.Join(lines[max(0, len(lines)-25):], "\n"))
	}
}
