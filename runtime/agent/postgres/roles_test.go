package postgres

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/runtime/agent"
	"github.com/cairn-dev/cairn/runtime/instance"
	pginstance "github.com/cairn-dev/cairn/runtime/instance/postgres"
	"github.com/cairn-dev/cairn/testbed"
	"github.com/cairn-dev/cairn/testbed/agentbed"
)

const superPW, replPW = "super-pw", "repl-pw"

// pgSpec is the cluster the runtime's rendered Role is written for in
// these tests (testbed.ApplyRenderedRBAC).
const pgSpec = "apiVersion: db.example.com/v1alpha1\nkind: PostgresCluster\nmetadata: {name: pg}\nspec: {version: \"15.4\", instances: 1, storage: 1Gi}\n"

type logWriter struct{ t testing.TB }

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Log(string(bytes.TrimRight(p, "\n")))
	return len(p), nil
}

// pgMembers runs real PostgreSQL 15 members on 127.0.0.<n+1>, all on one
// port, as pods would have it.
type pgMembers struct {
	t    testing.TB
	dir  string
	port int
	cred *syscall.Credential
	// bin is the PostgreSQL the members run (testbed.PostgresBin).
	bin string
	// tls, when set, is the TLS config to reach member ord as the
	// superuser (tls_test.go); nil, or a nil answer, connects by
	// password as before TLS.
	tls func(ord int) *tls.Config
}

func newMembers(t testing.TB) *pgMembers {
	m := &pgMembers{t: t, bin: testbed.PostgresBin(t)}
	dir, err := os.MkdirTemp("", "cairn-agent-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	m.dir = dir
	m.cred = testbed.PostgresCredential(t, dir)
	conf := fmt.Sprintf("wal_level = replica\nhot_standby = on\nwal_log_hints = on\nwal_keep_size = 512MB\nmax_wal_senders = 8\nwal_receiver_status_interval = 1\npassword_encryption = 'scram-sha-256'\nhba_file = '%s/pg_hba.conf'\n", dir)
	hba := "local all postgres peer\nhost replication replicator 0.0.0.0/0 scram-sha-256\nhost all all 0.0.0.0/0 scram-sha-256\n"
	_ = os.WriteFile(filepath.Join(dir, "postgresql.conf"), []byte(conf), 0o644)
	_ = os.WriteFile(filepath.Join(dir, "pg_hba.conf"), []byte(hba), 0o644)
	for port := 20000 + os.Getpid()%20000; ; port++ {
		if free(port, "127.0.0.1") && free(port, "127.0.0.2") {
			m.port = port
			break
		}
	}
	return m
}

func free(port int, ip string) bool {
	l, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(port)))
	if err != nil {
		return false
	}
	l.Close()
	return true
}

func (m *pgMembers) ip(ord int) string { return "127.0.0." + strconv.Itoa(ord+1) }

func (m *pgMembers) start(ord int, bootstrap string, candidates ...int) *pginstance.Server {
	m.t.Helper()
	name := "pg-" + strconv.Itoa(ord)
	home := filepath.Join(m.dir, name)
	_ = os.MkdirAll(home, 0o700)
	if m.cred != nil {
		_ = os.Chown(home, int(m.cred.Uid), int(m.cred.Gid))
	}
	var cands []string
	for _, c := range candidates {
		cands = append(cands, net.JoinHostPort(m.ip(c), strconv.Itoa(m.port)))
	}
	p := &pginstance.Manager{Name: name, PGData: filepath.Join(home, "pgdata"), BinDir: m.bin,
		ConfigFile: filepath.Join(m.dir, "postgresql.conf"),
		Settings:   map[string]string{"listen_addresses": m.ip(ord), "port": strconv.Itoa(m.port), "unix_socket_directories": home},
		Host:       m.ip(ord), Port: m.port, Candidates: cands, Config: pginstance.Config{Config: instance.Config{Bootstrap: bootstrap}},
		SuperuserPassword: superPW, ReplicationPassword: replPW, Credential: m.cred,
		Log: slog.New(slog.NewTextHandler(logWriter{m.t}, nil))}
	ctx := context.Background()
	_, initialised, err := p.Prepare(ctx)
	if err != nil {
		m.t.Fatalf("%s: %v", name, err)
	}
	s, err := p.Start(ctx, initialised, logWriter{m.t})
	if err != nil {
		m.t.Fatalf("%s: %v", name, err)
	}
	m.t.Cleanup(s.Kill)
	return s
}

func (m *pgMembers) exec(ord int, sql string) {
	m.t.Helper()
	c, err := m.dial(context.Background(), ord)
	if err != nil {
		m.t.Fatal(err)
	}
	defer c.Close(context.Background())
	if _, err := c.Exec(context.Background(), sql); err != nil {
		m.t.Fatal(err)
	}
}

// pods registers the members as pods of cluster pg, with their addresses,
// as the StatefulSet and the kubelet would.
func pods(t testing.TB, c kubernetes.Interface, ns string, m *pgMembers, n int) {
	t.Helper()
	ctx := context.Background()
	_, err := c.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: contract.SuperuserSecret("pg")},
		Data: map[string][]byte{contract.SecretKeyPassword: []byte(superPW)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		addPod(t, c, ns, m, i)
	}
}

// addPod registers member i as a pod of cluster pg, as a StatefulSet
// scaled out and the kubelet would.
func addPod(t testing.TB, c kubernetes.Interface, ns string, m *pgMembers, i int) {
	t.Helper()
	ctx := context.Background()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pg-" + strconv.Itoa(i),
		Labels: contract.Selector(contract.AppPostgres, "pg")},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: contract.PostgresContainer, Image: "postgres:15"}}}}
	agentbed.OwnedByStatefulSet(t, c, ns, "pg", pod)
	created, err := c.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: m.ip(i)}
	if _, err := c.CoreV1().Pods(ns).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func labels(t testing.TB, c kubernetes.Interface, ns string) map[string]string {
	t.Helper()
	list, err := c.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, p := range list.Items {
		out[p.Name] = p.Labels[contract.LabelRole]
	}
	return out
}

func TestRolesFollowTheMembers(t *testing.T) {
	testbed.Require(t, testbed.TierIntegration, "PostgreSQL members")
	cp := testbed.Start(t)
	c := cp.Client(t)
	ns := cp.Namespace(t, "db")
	m := newMembers(t)
	pg0 := m.start(0, "new", 0)
	m.start(1, "new", 0)
	pods(t, c, ns, m, 2)
	r := &Roles{Client: c, Namespace: ns, Cluster: "pg", Port: m.port, Log: slog.New(slog.NewTextHandler(logWriter{t}, nil))}
	if err := r.Pass(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := labels(t, c, ns); got["pg-0"] != contract.RolePrimary || got["pg-1"] != contract.RoleReplica {
		t.Fatalf("labels %v", got)
	}
	// A switchover: pg-0 stops cleanly, pg-1 is promoted, pg-0 comes back
	// as its replica (the instance manager rewinds it). The labels follow.
	if err := pg0.Stop(); err != nil {
		t.Fatal(err)
	}
	m.exec(1, "SELECT pg_promote()")
	// pg-0 does not answer: it is fenced before pg-1 is labelled primary,
	// so no two pods are ever labelled primary.
	testbed.Eventually(t, "pg-1 primary", func() error {
		if err := r.Pass(context.Background()); err != nil {
			return err
		}
		if got := labels(t, c, ns); got["pg-1"] != contract.RolePrimary || got["pg-0"] != contract.RoleFenced {
			return fmt.Errorf("labels %v", got)
		}
		return nil
	})
	m.start(0, "existing", 1)
	if err := r.Pass(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := labels(t, c, ns); got["pg-0"] != contract.RoleReplica || got["pg-1"] != contract.RolePrimary {
		t.Fatalf("labels %v", got)
	}
}

func TestOneLeaderLabels(t *testing.T) {
	testbed.Require(t, testbed.TierIntegration, "PostgreSQL members")
	cp := testbed.Start(t)
	c := cp.Client(t)
	ns := cp.Namespace(t, "db")
	m := newMembers(t)
	m.start(0, "new", 0)
	pods(t, c, ns, m, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, id := range []string{"runtime-a", "runtime-b"} {
		a, err := agent.New(agent.Config{Cluster: "pg", Namespace: ns, Identity: id, Interval: 200 * time.Millisecond,
			Log: slog.New(slog.NewTextHandler(logWriter{t}, nil))}, c, Config{Port: m.port}.Keeper)
		if err != nil {
			t.Fatal(err)
		}
		go func() { _ = a.Run(ctx) }()
	}
	testbed.Eventually(t, "a leader labels the primary", func() error {
		if got := labels(t, c, ns); got["pg-0"] != contract.RolePrimary {
			return fmt.Errorf("labels %v", got)
		}
		return nil
	})
	lease, err := c.CoordinationV1().Leases(ns).Get(context.Background(), contract.Runtime("pg"), metav1.GetOptions{})
	if err != nil || lease.Spec.HolderIdentity == nil || (*lease.Spec.HolderIdentity != "runtime-a" && *lease.Spec.HolderIdentity != "runtime-b") {
		t.Fatalf("lease %+v %v", lease, err)
	}
	// Only the holder of the lease wrote the label.
	pod, err := c.CoreV1().Pods(ns).Get(context.Background(), "pg-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range pod.ManagedFields {
		if strings.HasPrefix(f.Manager, "cairn-runtime") && f.Manager != "cairn-runtime/"+*lease.Spec.HolderIdentity {
			t.Errorf("%s wrote the pod, but %s holds the lease", f.Manager, *lease.Spec.HolderIdentity)
		}
	}
}

// The runtime works with exactly the Role the renderer writes for it.
func TestRenderedRoleIsEnough(t *testing.T) {
	testbed.Require(t, testbed.TierIntegration, "PostgreSQL members")
	cp := testbed.Start(t)
	admin := cp.Client(t)
	ns := cp.Namespace(t, "db")
	testbed.ApplyRenderedRBAC(t, admin, ns, pgSpec)
	m := newMembers(t)
	m.start(0, "new", 0)
	pods(t, admin, ns, m, 1)
	runtimeClient := testbed.AsRuntime(t, cp.Config(), ns, "pg")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a, err := agent.New(agent.Config{Cluster: "pg", Namespace: ns, Identity: "runtime-a", Interval: 200 * time.Millisecond,
		Log: slog.New(slog.NewTextHandler(logWriter{t}, nil))}, runtimeClient, Config{Port: m.port}.Keeper)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = a.Run(ctx) }()
	testbed.Eventually(t, "the runtime, as its service account, labels the primary", func() error {
		if got := labels(t, admin, ns); got["pg-0"] != contract.RolePrimary {
			return fmt.Errorf("labels %v", got)
		}
		return nil
	})
}
