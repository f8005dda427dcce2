package etcd

import (
	"context"
	"fmt"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/cairn-dev/cairn/runtime/backup"
	"github.com/cairn-dev/cairn/runtime/instance"
	"github.com/cairn-dev/cairn/runtime/instance/internal/instancetest"
)

// A create step from a snapshot: all three members restore it as one new
// cluster holding exactly the snapshot's keys.
func TestEtcdCreateStepRestoresASnapshot(t *testing.T) {
	ctx := context.Background()
	stores := t.TempDir()
	src := newEtcdBed(t, 1)
	args, err := src.manager("e-0", "new").Args(ctx)
	if err != nil {
		t.Fatal(err)
	}
	src.start("e-0", args)
	srcURL := url(src.host("e-0"), src.cli["e-0"])
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{srcURL}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	instancetest.Eventually(t, 30*time.Second, "the source answers", func(ctx context.Context) error {
		for i := range 20 {
			if _, err := cli.Put(ctx, fmt.Sprintf("k%02d", i), "v"); err != nil {
				return err
			}
		}
		return nil
	})
	if _, err := backup.Take(ctx, &backup.FileStore{Root: stores}, "src", "EtcdCluster", backup.EtcdSource{Member: "e-0", Endpoint: srcURL}, time.Now); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Put(ctx, "after", "v"); err != nil {
		t.Fatal(err)
	}

	dst := newEtcdBed(t, 3)
	for _, m := range []string{"e-0", "e-1", "e-2"} {
		mgr := dst.manager(m, "new")
		mgr.Config.Restore = &instance.Restore{Location: "file://" + stores, Cluster: "src", Backup: "latest"}
		args, err := mgr.Args(ctx)
		if err != nil {
			t.Fatalf("%s: %v", m, err)
		}
		dst.start(m, args)
	}
	for _, m := range []string{"e-0", "e-1", "e-2"} {
		c, err := clientv3.New(clientv3.Config{Endpoints: []string{url(dst.host(m), dst.cli[m])}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
		if err != nil {
			t.Fatal(err)
		}
		instancetest.Eventually(t, 30*time.Second, m+" serves the snapshot's keys", func(ctx context.Context) error {
			got, err := c.Get(ctx, "", clientv3.WithPrefix(), clientv3.WithSerializable())
			if err != nil {
				return err
			}
			ml, err := c.MemberList(ctx)
			if err != nil {
				return err
			}
			if len(got.Kvs) != 20 || len(ml.Members) != 3 {
				return fmt.Errorf("%d keys and %d members, want 20 and 3", len(got.Kvs), len(ml.Members))
			}
			return nil
		})
		c.Close()
	}
}
