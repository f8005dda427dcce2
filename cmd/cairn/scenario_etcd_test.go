package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/publish"
	"github.com/cairn-dev/cairn/runtime/backup"
	"github.com/cairn-dev/cairn/testbed"
)

// Walkthrough 1, the classic operator walkthrough, end to end, in
// process: etcdWalkthrough.
func TestLoopEndToEnd(t *testing.T) { etcdWalkthrough(newBed(t)) }

// Walkthrough 1 on a real node, once per sync engine (engines: Flux,
// Argo CD): the etcd cluster cairn renders runs in containers (cairn's
// instance manager installed by its init container, etcd from its image,
// cairn's runtime as its Deployment's pods, volumes from the node's
// provisioner, peers finding each other through the headless Service's
// DNS names), and the real engine applies every merged step and reports
// no drift at every settled point.
func TestRealNodeEtcdWalkthrough(t *testing.T) {
	engineTable(t, func(t *testing.T, start func(*testing.T, *testbed.ControlPlane) engine) {
		etcdWalkthrough(newNodeBedWith(t, start, "etcd-3.7"))
	})
}

// etcdWalkthrough: the spec {size: 3} in Git gives the creation PR;
// merged and synced, the StatefulSet controller makes the pods and three
// real etcd members form a healthy cluster, with a client writing from
// then on. Size 5 gives one step PR at a time, each only once the last
// merged step shows done (the runtime promotes the learners). A pod
// deleted by hand is made again on its volume and rejoins, and cairn
// opens no PR meanwhile, nor after. Size 3 again: the runtime removes
// the members first, then the StatefulSet shrinks. No drift at any step,
// and no acknowledged write lost.
func etcdWalkthrough(l *loop) {
	t := l.t
	const demo = "demo"
	l.begin(l.etcdSpecAt(demo, 3, "3.7.3"), []string{demo})
	steps := l.create(demo)
	l.eventually("3 healthy voters", l.voters(demo, 3))
	if strings.Join(steps, ",") != "create,seal-bootstrap" {
		t.Fatalf("create: steps %v", steps)
	}
	created := time.Since(l.began)
	l.noDrift("once created")
	l.runsByDigest(demo)
	cli := l.client(demo, 3)
	w := startWriter(l.ctx, cli)

	l.editSpec(l.etcdSpecAt(demo, 5, "3.7.3"))
	if steps := l.converge(demo, nil); strings.Join(steps, ",") != "etcd-add-3,etcd-add-4" {
		t.Fatalf("3 -> 5: steps %v", steps)
	}
	l.eventually("5 healthy voters", l.voters(demo, 5))
	l.noDrift("at 5 members")

	healed := l.podDeletedRejoins(demo, 2, 5)
	l.noDrift("once the deleted pod rejoined")

	l.editSpec(l.etcdSpecAt(demo, 3, "3.7.3"))
	steps = l.converge(demo, nil)
	l.eventually("3 healthy voters at the end", l.voters(demo, 3))
	acked, failed, outage := w.stop()
	l.noDrift("at the end")
	lost := l.lostWrites(cli, acked)
	if lost > 0 || len(acked) == 0 {
		t.Fatalf("%d of %d acknowledged writes lost", lost, len(acked))
	}
	t.Logf("5 -> 3: steps %v", steps)
	t.Logf("created in %.1fs; pod deleted to healthy voter again %.1fs; wall time %.1fs; %d writes acknowledged, %d lost, %d failed, longest outage %s; from each merge (or spec push) to the next pull request: %s",
		created.Seconds(), healed.Seconds(), time.Since(l.began).Seconds(), len(acked), lost, failed, outage, strings.Join(l.timings, ", "))
}

// podDeletedRejoins deletes the pod of member ord of an etcd cluster of
// n: the StatefulSet makes it again on its volume, it rejoins as a
// healthy voter, and no pull request opens meanwhile, nor once the
// cluster shows converged again. It returns how long the member took to
// come back.
func (l *loop) podDeletedRejoins(cluster string, ord, n int) time.Duration {
	t := l.t
	c := l.cp.Client(t)
	pod := fmt.Sprintf("%s-%d", cluster, ord)
	old, err := c.CoreV1().Pods(l.ns).Get(l.ctx, pod, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	deleted := time.Now()
	if err := c.CoreV1().Pods(l.ns).Delete(l.ctx, pod, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	l.eventually("the deleted pod back as a healthy voter", func() error {
		if o := l.pass()[cluster]; o.Action == publish.ActionOpened {
			t.Fatalf("a pull request while a pod came back: %+v", o)
		}
		p, err := c.CoreV1().Pods(l.ns).Get(l.ctx, pod, metav1.GetOptions{})
		if err != nil || p.UID == old.UID || p.DeletionTimestamp != nil || p.Status.PodIP == "" {
			return fmt.Errorf("not made again yet: %v", err)
		}
		return l.voters(cluster, n)()
	})
	healed := time.Since(deleted)
	l.eventually("converged again, with no pull request", func() error {
		o := l.pass()[cluster]
		if o.Action == publish.ActionOpened || len(l.gh.Open()) != 0 {
			t.Fatalf("a pull request after the pod came back: %+v", o)
		}
		if o.Status != plan.StatusConverged {
			return fmt.Errorf("%s: %s", o.Status, o.Note)
		}
		return nil
	})
	return healed
}

// lostWrites counts the keys of acked that cli does not find.
func (l *loop) lostWrites(cli *clientv3.Client, acked []string) int {
	ctx, cancel := context.WithTimeout(l.ctx, 10*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, "w-", clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		l.t.Fatal(err)
	}
	have := map[string]bool{}
	for _, kv := range resp.Kvs {
		have[string(kv.Key)] = true
	}
	lost := 0
	for _, k := range acked {
		if !have[k] {
			lost++
		}
	}
	return lost
}

// Walkthrough 2 in process: etcdUpgradeAcrossMinors from etcd 3.6 (the
// oldest the test bed builds for it) to 3.7.
func TestEtcdUpgradeAcrossMinors(t *testing.T) {
	testbed.Bin(t, "etcd-3.6")
	etcdUpgradeAcrossMinors(newBed(t))
}

// Walkthrough 2 on a real node: from the etcd-3.6 image to the etcd-3.7
// image, the snapshot taken by the runtime from its pod into the
// S3-protocol server.
func TestRealNodeEtcdUpgradeAcrossMinors(t *testing.T) {
	etcdUpgradeAcrossMinors(newNodeBed(t, "etcd-3.6", "etcd-3.7"))
}

// etcdUpgradeAcrossMinors: an etcd upgrade across minors. The hop starts
// with a snapshot the runtime takes (the last member's step cannot be
// undone; its rollback restores that snapshot, pinned against
// retention), then moves one member per pull request, each only once the
// one before rejoined at the new version and the cluster is healthy; a
// client writing throughout loses no acknowledged write.
func etcdUpgradeAcrossMinors(l *loop) {
	t := l.t
	const kv = "kv"
	from, to := l.version("etcd-3.6", "3.6.16"), l.version("etcd-3.7", "3.7.3")
	loc, store := l.backupLocation(kv)
	policy := []string{"backup:", `  schedule: "0 3 * * *"`, `  storageLocation: "` + loc + `"`}
	l.begin(l.etcdSpecAt(kv, 3, from, policy...), []string{kv})
	if steps := l.create(kv); strings.Join(steps, ",") != "create,seal-bootstrap" {
		t.Fatalf("create: steps %v", steps)
	}
	l.eventually("3 healthy voters at "+from, l.voters(kv, 3))
	created := time.Since(l.began)
	cli, urls, err := l.etcdClient(kv, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	w := startWriter(l.ctx, cli)

	began := time.Now()
	l.editSpec(l.etcdSpecAt(kv, 3, to, policy...))
	steps := l.converge(kv, nil)
	l.eventually("3 healthy voters at "+to, l.voters(kv, 3))
	took := time.Since(began)
	acked, failed, outage := w.stop()
	want := "backup-before-" + to + ",upgrade-2-to-" + to + ",upgrade-1-to-" + to + ",upgrade-0-to-" + to
	if strings.Join(steps, ",") != want {
		t.Fatalf("steps %v, want %s", steps, want)
	}
	ctx, cancel := context.WithTimeout(l.ctx, 30*time.Second)
	defer cancel()
	for i, u := range urls {
		st, err := cli.Status(ctx, u)
		if err != nil || !l.isRelease(st.Version, to, 2) {
			t.Fatalf("member %d: %+v %v, want etcd %s", i, st, err, to)
		}
	}
	if lost := l.lostWrites(cli, acked); lost > 0 || len(acked) == 0 {
		t.Fatalf("%d of %d acknowledged writes lost", lost, len(acked))
	}

	// The snapshot the hop relies on is in the backup location, complete,
	// pinned to the step that asked for it, taken at the old version.
	all, err := backup.List(ctx, store, kv)
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
