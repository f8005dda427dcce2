package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/spec"
	"github.com/cairn-dev/cairn/runtime/backup"
	"github.com/cairn-dev/cairn/testbed"
)

// Environment of the read-only child (readOnlyChild).
const (
	roChild      = "CAIRN_TEST_READ_ONLY_CHILD"
	roKubeconfig = "CAIRN_TEST_READ_ONLY_KUBECONFIG"
	roNamespace  = "CAIRN_TEST_READ_ONLY_NAMESPACE"
	roEtcd       = "CAIRN_TEST_READ_ONLY_ETCD"
)

// The runtime runs under a read-only root filesystem, as its rendered
// Deployment runs it, and writes nothing, not even to its /tmp. The
// control plane, the etcd member and the S3 server run here as usual;
// the runtime (agent.New with the etcd keeper, as `cairn runtime` builds
// it, and Run: leader election, membership passes, status, backups) runs
// in a child process in a mount namespace of its own whose root is
// remounted read-only, with one empty writable folder as its TMPDIR
// (the Deployment's /tmp emptyDir). There it leads, serves a merged
// TakeBackup step's request into S3, and reports a file:// location
// outside any volume as a failed backup; the folder is still empty when
// it stops. It needs root and unshare(1) (a mount namespace); the test
// beds run no container runtime, so this is how a read-only root is
// shown here.
func TestTheRuntimeWritesNothingUnderAReadOnlyRoot(t *testing.T) {
	if os.Getenv(roChild) != "" {
		readOnlyChild(t)
		return
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil || os.Geteuid() != 0 {
		t.Skipf("needs root and unshare(1) for a mount namespace with a read-only root (unshare: %v, uid %d)", err, os.Geteuid())
	}
	b := newBackupBed(t)
	location := testbed.S3Server(t, "read-only")
	b.setPolicy(map[string]string{contract.KeyBackupSchedule: "0 3 * * *", contract.KeyBackupStorageLocation: location,
		contract.KeyRequestBackupID: "backup-read-only-1"})
	kubeconfig := b.cp.Kubeconfig(t)
	tmp := t.TempDir()
	// The child's root is read-only; tmp, bound onto itself, stays
	// writable, as /dev/shm and /proc do in a container.
	script := `mount --bind "$1" "$1" && mount -o remount,bind,ro / && shift && exec "$@"`
	cmd := exec.Command(unshare, "--mount", "--propagation", "private", "sh", "-c", script, "sh", tmp,
		os.Args[0], "-test.run=^"+t.Name()+"$", "-test.count=1", "-test.v", "-test.timeout=4m")
	cmd.Env = append(os.Environ(), roChild+"=1", "TMPDIR="+tmp, "HOME=/", roKubeconfig+"="+kubeconfig, roNamespace+"="+b.ns,
		roEtcd+"=127.0.0.1:"+strconv.Itoa(b.port))
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS") {
		t.Fatalf("the runtime under a read-only root: %v\n%s", err, out)
	}
	st, err := backup.OpenFromEnv(location)
	if err != nil {
		t.Fatal(err)
	}
	if all, err := backup.List(context.Background(), st, "kv"); err != nil || len(all) != 1 {
		t.Fatalf("backups in S3: %v %v, want the one the child took", all, err)
	}
}

// readOnlyChild is the runtime's side of the test above, in the mount
// namespace it made.
func readOnlyChild(t *testing.T) {
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
	ns, etcd := os.Getenv(roNamespace), os.Getenv(roEtcd)
	port, _ := strconv.Atoi(etcd[strings.LastIndexByte(etcd, ':')+1:])
	a, err := New(Config{Cluster: "kv", Namespace: ns, Identity: "kv-runtime-0", Kind: spec.EtcdKind, Metrics: prometheus.NewRegistry(),
		Log: testbed.Logger(t, 0), EtcdEndpoints: []string{"http://" + etcd}, EtcdPort: port}, client, Etcd)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	b := &backupBed{t: t, c: client, ns: ns}
	testbed.Eventually(t, "the merged step's backup, in S3", func() error {
		if st := b.status(); st.LastRequest != "backup-read-only-1" || st.LastSuccessful == nil {
			return fmt.Errorf("status %+v", st)
		}
		return nil
	})
	// A file:// location outside any volume: a failed backup, said in
	// the status, rather than one written into the container's layer.
	b.setPolicy(map[string]string{contract.KeyBackupSchedule: "0 3 * * *", contract.KeyBackupStorageLocation: "file:///var/lib/cairn-backups",
		contract.KeyRequestBackupID: "backup-read-only-2"})
	testbed.Eventually(t, "the file:// backup refused", func() error {
		if f := b.status().LastFailure; f == nil || f.Request != "backup-read-only-2" || !strings.Contains(f.Error, "read-only file system") {
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
