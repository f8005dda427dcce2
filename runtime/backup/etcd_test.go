package backup

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cairn-dev/cairn/testbed"
)

// A snapshot holds exactly the keys written before it began; restored
// into a new data directory, etcd starts on it with those keys.
func TestEtcdSnapshotAndRestore(t *testing.T) {
	ctx := context.Background()
	curl, cli := testbed.EtcdMember(t, "e-0", filepath.Join(t.TempDir(), "data"), "")
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
			peer := "http://127.0.0.1:" + strconv.Itoa(testbed.FreePort(t))
			r := EtcdRestore{DataDir: dir, Name: "e-0", PeerURL: peer, Token: "restored"}
			if err := RestoreEtcd(ctx, st, m, r); err != nil {
				t.Fatal(err)
			}
			if err := RestoreEtcd(ctx, st, m, r); err == nil {
				t.Fatal("a restore over an existing data directory was accepted")
			}
			_, restored := testbed.EtcdMember(t, "e-0", dir, peer)
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
