package certs

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/testbed"
)

// bed is one kube-apiserver shared by the subtests of TestWithAPIServer;
// each subtest keeps to clusters of its own names in ns.
type bed struct {
	cp *testbed.ControlPlane
	c  kubernetes.Interface
	ns string
}

// TestWithAPIServer runs every test that talks to Kubernetes against one
// real control plane (starting one per test would cost more than the
// tests).
func TestWithAPIServer(t *testing.T) {
	cp := testbed.Start(t)
	b := &bed{cp: cp, c: cp.Client(t), ns: cp.Namespace(t, "db")}
	tests := []struct {
		name string
		run  func(*testing.T, *bed)
	}{
		{"EnsureCreates", testEnsureCreates},
		{"EnsureRotates", testEnsureRotates},
		{"EnsureRotatesShortLifetimes", testEnsureRotatesShortLifetimes},
		{"EnsureReplacesTheCA", testEnsureReplacesTheCA},
		{"EnsureLeavesABadCA", testEnsureLeavesABadCA},
		{"EnsureLeavesForeignSecrets", testEnsureLeavesForeignSecrets},
		{"EnsureRewritesTheBundle", testEnsureRewritesTheBundle},
		{"EnsureRecordsItsCA", testEnsureRecordsItsCA},
		{"EnsureRefusesAPlantedCA", testEnsureRefusesAPlantedCA},
		{"EnsureAdoptsARecordedCA", testEnsureAdoptsARecordedCA},
		{"EnsureAdoptsARacingCreate", testEnsureAdoptsARacingCreate},
		{"EnsureUpdateConflicts", testEnsureUpdateConflicts},
		{"LeastPrivilege", testLeastPrivilege},
		{"SyncWrites", testSyncWrites},
		{"SyncChecksFirst", testSyncChecksFirst},
		{"SyncBeforeEnsure", testSyncBeforeEnsure},
		{"FilesMaterial", testFilesMaterial},
		{"Handshake", testHandshake},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.run(t, b) })
	}
}

// clock is a fake clock the tests move forward.
type clock struct{ t time.Time }

func newClock() *clock { return &clock{t: time.Now().Truncate(time.Second)} }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }

// keeper is a Keeper of cluster on the fake clock clk (nil: the real one).
func (b *bed) keeper(t *testing.T, cluster string, clk *clock) *Keeper {
	k := &Keeper{Client: b.c, Namespace: b.ns, Cluster: cluster, App: contract.AppPostgres, Lifetime: 3 * time.Hour,
		Log: slog.New(slog.NewTextHandler(testWriter{t}, nil))}
	if clk != nil {
		k.Now = clk.now
	}
	return k
}

func (b *bed) ensure(t *testing.T, k *Keeper) (Material, []string) {
	t.Helper()
	m, written, err := k.Ensure(context.Background())
	if err != nil {
		t.Fatalf("ensure %s: %v", k.Cluster, err)
	}
	return m, written
}

func (b *bed) secret(t *testing.T, name string) *corev1.Secret {
	t.Helper()
	s, err := b.c.CoreV1().Secrets(b.ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// edit changes Secret name as another writer would.
func (b *bed) edit(t *testing.T, name string, change func(*corev1.Secret)) {
	t.Helper()
	s := b.secret(t, name)
	change(s)
	if _, err := b.c.CoreV1().Secrets(b.ns).Update(context.Background(), s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

// getHook sees every Secret Get of a hookedClient and may change its
// answer.
type getHook func(name string, s *corev1.Secret, err error) (*corev1.Secret, error)

// hookedClient is a real client whose Secret Gets pass through hook, to
// stage what another writer does between a read and a write.
type hookedClient struct {
	kubernetes.Interface
	hook getHook
}

func (c hookedClient) CoreV1() typedcorev1.CoreV1Interface {
	return hookedCore{c.Interface.CoreV1(), c.hook}
}

type hookedCore struct {
	typedcorev1.CoreV1Interface
	hook getHook
}

func (c hookedCore) Secrets(ns string) typedcorev1.SecretInterface {
	return hookedSecrets{c.CoreV1Interface.Secrets(ns), c.hook}
}

type hookedSecrets struct {
	typedcorev1.SecretInterface
	hook getHook
}

func (s hookedSecrets) Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.Secret, error) {
	sec, err := s.SecretInterface.Get(ctx, name, opts)
	return s.hook(name, sec, err)
}

// notFoundOnce answers the first Get of each name with NotFound, as if
// another replica created the Secret just after.
func notFoundOnce() getHook {
	seen := map[string]bool{}
	return func(name string, s *corev1.Secret, err error) (*corev1.Secret, error) {
		if !seen[name] {
			seen[name] = true
			return nil, apierrors.NewNotFound(corev1.Resource("secrets"), name)
		}
		return s, err
	}
}
