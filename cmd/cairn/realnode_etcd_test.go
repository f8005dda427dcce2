package main

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cairn-dev/cairn/runtime/backup"
	"github.com/cairn-dev/cairn/testbed"
	"github.com/cairn-dev/cairn/testbed/kubenode"
)

// Walkthrough 2 on a real node: an etcd upgrade across minors, from the
// etcd-3.6 image to the etcd-3.7 image. The hop starts with a snapshot
// the runtime takes from its pod into the S3-protocol server (the last
// member's step cannot be undone; its rollback restores that snapshot,
// pinned against retention), then moves one member per pull request,
// each only once the one before rejoined at the new version and the
// cluster is healthy, with a client writing throughout.
func TestRealNodeEtcdUpgradeAcrossMinors(t *testing.T) {
	const kv = "kv"
	const loc = "s3://cairn/backups"
	from, to := kubenode.ImageVersion(t, "etcd-3.6"), kubenode.ImageVersion(t, "etcd-3.7")
	policy := []string{smallEtcd, "backup:", `  schedule: "0 3 * * *"`, `  storageLocation: "` + loc + `"`}
	start := time.Now()
	l := newNodeLoop(t, etcdSpecAt(kv, 3, from, policy...), []string{kv}, "etcd-3.6", "etcd-3.7")
	s3 := testbed.S3ServerAt(t, "cairn", net.ParseIP(l.node.HostIP))
	l.s3Secret(s3, kv)
	if steps := l.converge(kv, nil); strings.Join(steps, ",") != "create,seal-bootstrap" {
		t.Fatalf("create: steps %v", steps)
	}
	testbed.Eventually(t, "3 healthy voters at "+from, l.nodeVoters(kv, 3))
	created := time.Since(start)
	cli, eps, err := l.nodeEtcdClient(kv, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	w := startWriter(l.ctx, cli)

	began := time.Now()
	l.editSpec(etcdSpecAt(kv, 3, to, policy...))
	steps := l.converge(kv, nil)
	testbed.Eventually(t, "3 healthy voters at "+to, l.nodeVoters(kv, 3))
	took := time.Since(began)
	acked, failed, outage := w.stop()
	want := "backup-before-" + to + ",upgrade-2-to-" + to + ",upgrade-1-to-" + to + ",upgrade-0-to-" + to
	if strings.Join(steps, ",") != want {
		t.Fatalf("steps %v, want %s", steps, want)
	}
	ctx, cancel := context.WithTimeout(l.ctx, 30*time.Second)
	defer cancel()
	for i, ep := range eps {
		st, err := cli.Status(ctx, ep)
		if err != nil || st.Version != to {
			t.Fatalf("member %d: %+v %v, want etcd %s", i, st, err, to)
		}
	}
	resp, err := cli.Get(ctx, "w-", clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, kv := range resp.Kvs {
		have[string(kv.Key)] = true
	}
	for _, k := range acked {
		if !have[k] {
			t.Fatalf("acknowledged write %s is gone", k)
		}
	}
	if len(acked) == 0 {
		t.Fatal("no write was acknowledged")
	}

	// The snapshot the hop relies on is in the bucket, complete, pinned
	// to the step that asked for it, taken at the old version.
	all, err := backup.List(ctx, s3Store(t, s3, loc), kv)
	if err != nil {
		t.Fatal(err)
	}
	pinned := backup.Pinned(all)
	if len(pinned) != 1 || pinned[0].Request != "backup-before-"+to || !strings.HasPrefix(pinned[0].Version, strings.Join(strings.Split(from, ".")[:2], ".")+".") {
		t.Fatalf("pinned backups %+v, want the one snapshot of %s for backup-before-%s", pinned, from, to)
	}
	l.noDrift("after the upgrade")
	t.Logf("created in %.1fs; %s -> %s in %.1fs, steps %v; snapshot %s (%d bytes, pinned); %d writes acknowledged, 0 lost, %d failed, longest outage %s; merge to next pull request: %s",
		created.Seconds(), from, to, took.Seconds(), steps, pinned[0].ID, pinned[0].Size, len(acked), failed, outage, strings.Join(l.timings, ", "))
}
