package agentbed

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/runtime/agent"
	"github.com/cairn-dev/cairn/runtime/backup"
	"github.com/cairn-dev/cairn/testbed"
)

// Environment of the read-only child (readOnlyChild).
const (
	roChild      = "CAIRN_TEST_READ_ONLY_CHILD"
	roKubeconfig = "CAIRN_TEST_READ_ONLY_KUBECONFIG"
	roNamespace  = "CAIRN_TEST_READ_ONLY_NAMESPACE"
	roMember     = "CAIRN_TEST_READ_ONLY_MEMBER"
	roLocation   = "CAIRN_TEST_READ_ONLY_LOCATION"
)

// ReadOnlyCase is a cluster the runtime looks after from a read-only
// root (ReadOnlyRoot).
type ReadOnlyCase struct {
	Kind, Cluster string
	// World starts the cluster's member and objects and returns the
	// member's address (host:port) the runtime is given.
	World func(t *testing.T, cp *testbed.ControlPlane, ns string) string
	// Keeper is the runtime's keeper of the kind, as `cairn runtime`
	// would build it for the member's address.
	Keeper func(member string) agent.KeeperFactory
	// Kept is what shows the keeper did its work.
	Kept func(t *testing.T, c kubernetes.Interface, ns string) error
}

// ReadOnlyRoot shows that the runtime runs under a read-only root
// filesystem, as its rendered Deployment runs it, and writes nothing,
// not even to its /tmp. The control plane, the members and the S3 server run here as usual; the
// runtime (New with its kind's keeper, as `cairn runtime` builds it, and
// Run: leader election, the keeper's passes, status, backups) runs in a
// child process in a mount namespace of its own whose root is remounted
// read-only, with one empty writable folder as its TMPDIR (the
// Deployment's /tmp emptyDir). There it leads, keeps its cluster (etcd's
// status, PostgreSQL's role labels), serves a merged TakeBackup step's
// request into S3 (an etcd snapshot, a PostgreSQL base backup), and
// reports a file:// location outside any volume as a failed backup; the
// folder is still empty when it stops. It needs root and unshare(1) (a
// mount namespace); the test beds run no container runtime, so this is
// how a read-only root is shown here.
func ReadOnlyRoot(t *testing.T, rc ReadOnlyCase) {
	if os.Getenv(roChild) != "" {
		readOnlyChild(t, rc)
		return
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil || os.Geteuid() != 0 {
		t.Skipf("needs root and unshare(1) for a mount namespace with a read-only root (unshare: %v, uid %d)", err, os.Geteuid())
	}
	cp := testbed.Start(t)
	ns := cp.Namespace(t, "read-only")
	location := testbed.S3Server(t, "read-only")
	member := rc.World(t, cp, ns)
	tmp := t.TempDir()
	// The child's root is read-only; tmp, bound onto itself, stays
	// writable, as /dev/shm and /proc do in a container.
	script := `mount --bind "$1" "$1" && mount -o remount,bind,ro / && shift && exec "$@"`
	cmd := exec.Command(unshare, "--mount", "--propagation", "private", "sh", "-c", script, "sh", tmp,
		os.Args[0], "-test.run=^"+strings.ReplaceAll(t.Name(), "/", "$/^")+"$", "-test.count=1", "-test.v", "-test.timeout=4m")
	cmd.Env = append(os.Environ(), roChild+"=1", "TMPDIR="+tmp, "HOME=/", roKubeconfig+"="+cp.Kubeconfig(t), roNamespace+"="+ns, roMember+"="+member, roLocation+"="+location)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: "+t.Name()) {
		t.Fatalf("the runtime under a read-only root: %v\n%s", err, out)
	}
	// The runtime's process, from its start to its stop: what the
	// rendered Deployment's memory request and limit are sized from
	// (docs/security.md).
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		t.Logf("the runtime's peak RSS, leading, keeping its cluster and taking a backup into S3: %d KiB", ru.Maxrss)
	}
	st, err := backup.OpenFromEnv(location)
	if err != nil {
		t.Fatal(err)
	}
	if all, err := backup.List(context.Background(), st, rc.Cluster); err != nil || len(all) != 1 {
		t.Fatalf("backups in S3: %v %v, want the one the child took", all, err)
	}
}

// readOnlyChild is the runtime's side of the test above, in the mount
// namespace it made.
func readOnlyChild(t *testing.T, rc ReadOnlyCase) {
	tmp := os.TempDir()
	for _, dir := range []string{"/", filepath.Dir(os.Getenv(roKubeconfig)), filepath.Dir(tmp)} {
		if err := os.WriteFile(filepath.Join(dir, "cairn-probe"), nil, 0o600); !errors.Is(err, syscall.EROFS) {
			t.Fatalf("writing to %s: %v, want a read-only file system", dir, err)
		}
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", os.Getenv(roKubeconfig))
	if err != nil {
		t.Fatal(err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ns := os.Getenv(roNamespace)
	acfg := agent.Config{Cluster: rc.Cluster, Namespace: ns, Identity: rc.Cluster + "-runtime-0", Kind: rc.Kind, Metrics: prometheus.NewRegistry(),
		Log: testbed.Logger(t, 0)}
	a, err := agent.New(acfg, client, rc.Keeper(os.Getenv(roMember)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	b := &BackupBed{T: t, Client: client, Namespace: ns, Cluster: rc.Cluster}
	testbed.Eventually(t, "the keeper's work", func() error { return rc.Kept(t, client, ns) })
	// A merged TakeBackup step, once the keeper knows its members (a
	// PostgreSQL backup is taken from a labelled member).
	b.SetPolicy(map[string]string{contract.KeyBackupSchedule: "0 3 * * *", contract.KeyBackupStorageLocation: os.Getenv(roLocation),
		contract.KeyRequestBackupID: "backup-read-only-1"})
	testbed.Eventually(t, "the merged step's backup, in S3", func() error {
		if st := b.Status(); st.LastRequest != "backup-read-only-1" || st.LastSuccessful == nil {
			return fmt.Errorf("status %+v", st)
		}
		return nil
	})
	// A file:// location outside any volume: a failed backup, said in
	// the status, rather than one written into the container's layer.
	b.SetPolicy(map[string]string{contract.KeyBackupSchedule: "0 3 * * *", contract.KeyBackupStorageLocation: "file:///var/lib/cairn-backups",
		contract.KeyRequestBackupID: "backup-read-only-2"})
	testbed.Eventually(t, "the file:// backup refused", func() error {
		if f := b.Status().LastFailure; f == nil || f.Request != "backup-read-only-2" || !strings.Contains(f.Error, "read-only file system") {
			return fmt.Errorf("last failure %+v", f)
		}
		return nil
	})
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the runtime did not stop")
	}
	if left, err := os.ReadDir(tmp); err != nil || len(left) != 0 {
		t.Fatalf("the runtime wrote to its /tmp (%s): %v %v", tmp, left, err)
	}
}
