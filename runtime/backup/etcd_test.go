package backup

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/cairn-dev/cairn/runtime/testbed"
)

// etcdMember runs one real etcd member on data dir dir and returns its
// client URL and a client.
func etcdMember(t *testing.T, dir string, restored bool) (string, *clientv3.Client) {
	t.Helper()
	client, peer := testbed.FreePort(t), testbed.FreePort(t)
	curl, purl := "http://127.0.0.1:"+strconv.Itoa(client), "http://127.0.0.1:"+strconv.Itoa(peer)
	args := []string{"--name", "e-0", "--data-dir", dir, "--listen-client-urls", curl, "--advertise-client-urls", curl,
		"--listen-peer-urls", purl, "--initial-advertise-peer-urls", purl, "--initial-cluster", "e-0=" + purl}
	if restored {
		// A restored data directory carries its own membership; the peer
		// URL it was restored with is reused.
		args = []string{"--name", "e-0", "--data-dir", dir, "--listen-client-urls", curl, "--advertise-client-urls", curl,
			"--listen-peer-urls", "http://127.0.0.1:2380"}
	}
	cmd := exec.Command(testbed.Bin(t, "etcd"), args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); _ = cmd.Wait() })
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{curl}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	testbed.Eventually(t, "etcd answers", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := cli.Get(ctx, "health")
		return err
	})
	return curl, cli
}

// A snapshot holds exactly the keys written before it began; restored
// into a new data directory, etcd starts on it with those keys.
func TestEtcdSnapshotAndRestore(t *testing.T) {
	ctx := context.Background()
	curl, cli := etcdMember(t, filepath.Join(t.TempDir(), "data"), false)
	for i := range 100 {
		if _, err := cli.Put(ctx, fmt.Sprintf("k%03d", i), strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
	}
	for name, st := range stores(t) {
		t.Run(name, func(t *testing.T) {
			m, err := Take(ctx, st, "e", "EtcdCluster", EtcdSource{Member: "e-0", Endpoint: curl}, time.Now)
			if err != nil {
				t.Fatal(err)
			}
			if m.Etcd == nil || m.Etcd.Revision < 101 || m.Source != "e-0" || m.Version == "" {
				t.Fatalf("manifest: %+v %+v", m, m.Etcd)
			}
			// Written after the backup: not in the restored copy.
			if _, err := cli.Put(ctx, "after-"+name, "x"); err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(t.TempDir(), "restored")
			r := EtcdRestore{DataDir: dir, Name: "e-0", PeerURL: "http://127.0.0.1:2380", Token: "restored"}
			if err := RestoreEtcd(ctx, st, m, r); err != nil {
				t.Fatal(err)
			}
			if err := RestoreEtcd(ctx, st, m, r); err == nil {
				t.Fatal("a restore over an existing data directory was accepted")
			}
			_, restored := etcdMember(t, dir, true)
			got, err := restored.Get(ctx, "k", clientv3.WithPrefix())
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Kvs) != 100 || string(got.Kvs[99].Key) != "k099" || got.Header.Revision != m.Etcd.Revision {
				t.Fatalf("restored %d keys at revision %d, want 100 at %d", len(got.Kvs), got.Header.Revision, m.Etcd.Revision)
			}
			if after, err := restored.Get(ctx, "after-"+name); err != nil || len(after.Kvs) != 0 {
				t.Fatalf("a key written after the backup: %v %v", after.Kvs, err)
			}
		})
	}
}
