package backup

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
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

// A member that takes the connection but never answers (a TLS handshake
// that cannot complete, a hung process) fails the backup within the
// status bound, naming the member: it never holds the backup for ever.
func TestEtcdSnapshotOfAnUnansweringMember(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			defer c.Close() // held open, never answered
		}
	}()
	src := EtcdSource{Member: "e-0", Endpoint: "https://" + l.Addr().String(), DialTimeout: 200 * time.Millisecond, TLS: &tls.Config{ServerName: "e.ns.svc"}}
	done := make(chan error, 1)
	go func() {
		_, err := Take(context.Background(), &FileStore{Root: t.TempDir()}, "e", "EtcdCluster", src, time.Now)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "status of e-0 at https://") {
			t.Fatalf("err = %v, want the member's status failing", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the backup of a member that never answers did not end")
	}
}
