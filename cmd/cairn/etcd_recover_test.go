package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/testbed"
)

// recoverSoon proposes a recovery 3 s after quorum is lost, not 10 min.
func recoverSoon(s *liveSource) { s.recoverAfter = 3 * time.Second }

// The quorum-loss walkthroughs: three members, two of them lose their
// data for good. cairn reports the loss, proposes a recovery step once it
// has lasted, and only a person's merge carries it out; the cluster comes
// back from the newest of the snapshot and the surviving member's data,
// and the plan converges with no drift.

// TestEtcdQuorumLossRecoversFromTheSnapshot: the surviving member was cut
// off before the last writes and the snapshot, so the snapshot is newer:
// the cluster comes back with exactly the keys the snapshot holds, under a
// new cluster ID, and what was written after the snapshot is gone.
func TestEtcdQuorumLossRecoversFromTheSnapshot(t *testing.T) {
	const kv = "lost"
	l := newLoop(t, etcdSpec(kv, 3, snapshotPolicy(t)...), recoverSoon)
	l.createEtcd(kv, 3)
	cli := l.client(kv, 3)
	before := clusterID(t, l, cli)
	put(t, l, cli, "a", 30)
	// lost-0 goes away: the others keep quorum and take writes it never
	// sees.
	l.bed.Down(t, kv, 0)
	l.podNotReady(kv + "-0")
	others := l.clientOf(kv, l.bed.Endpoints(kv, 3)[1:])
	put(t, l, others, "b", 30)
	snap, snapRev := l.manualBackup(kv, "before-the-loss")
	put(t, l, others, "c", 10) // after the snapshot: lost by the recovery
	// lost-1 and lost-2 lose their disks; lost-0 comes back alone, older
	// than the snapshot.
	l.bed.Destroy(l.ctx, t, kv, 1)
	l.bed.Destroy(l.ctx, t, kv, 2)
	l.bed.Up(kv, 0)

	steps := l.converge(kv, nil)
	if len(steps) != 1 || !strings.HasPrefix(steps[0], "etcd-recover-") {
		t.Fatalf("steps %v, want the one recovery step", steps)
	}
	body := l.mergedBody(kv, steps[0])
	t.Logf("the recovery step: %s", summaryLine(body))
	for _, want := range []string{"restores snapshot " + snap, fmt.Sprintf("revision %d", snapRev), "new cluster ID", "set their data aside"} {
		if !strings.Contains(body, want) {
			t.Errorf("the recovery's pull request does not say %q:\n%s", want, body)
		}
	}
	testbed.Eventually(t, "3 healthy voters after the recovery", l.voters(kv, 3))
	cli = l.client(kv, 3)
	for prefix, want := range map[string]int64{"a": 30, "b": 30, "c": 0} {
		if got := count(t, l, cli, prefix); got != want {
			t.Errorf("%d keys %s-*, want %d (the snapshot's)", got, prefix, want)
		}
	}
	if after := clusterID(t, l, cli); after == before {
		t.Errorf("cluster ID %x is the old one; a restored snapshot is a new cluster", after)
	}
	l.noDrift("after the recovery")
}

// TestEtcdQuorumLossKeepsTheNewerMember: the surviving member holds every
// write, newer than the snapshot: its data is kept (--force-new-cluster),
// nothing acknowledged is lost, and the cluster ID stays.
func TestEtcdQuorumLossKeepsTheNewerMember(t *testing.T) {
	const kv = "kept"
	l := newLoop(t, etcdSpec(kv, 3, snapshotPolicy(t)...), recoverSoon)
	l.createEtcd(kv, 3)
	cli := l.client(kv, 3)
	before := clusterID(t, l, cli)
	put(t, l, cli, "a", 30)
	_, snapRev := l.manualBackup(kv, "before-the-loss")
	put(t, l, cli, "b", 30)
	// kept-0 has applied every write before the others lose their disks.
	head, err := cli.Get(l.ctx, "b-", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	testbed.Eventually(t, "kept-0 at the cluster's revision", func() error {
		st, err := cli.Status(l.ctx, l.bed.ClientURL(kv, 0))
		if err != nil || st.Header.Revision < head.Header.Revision {
			return fmt.Errorf("kept-0: %v %v", st, err)
		}
		return nil
	})
	l.bed.Destroy(l.ctx, t, kv, 1)
	l.bed.Destroy(l.ctx, t, kv, 2)

	steps := l.converge(kv, nil)
	if len(steps) != 1 || !strings.HasPrefix(steps[0], "etcd-recover-") {
		t.Fatalf("steps %v, want the one recovery step", steps)
	}
	body := l.mergedBody(kv, steps[0])
	t.Logf("the recovery step: %s", summaryLine(body))
	for _, want := range []string{"kept-0 keeps its data", fmt.Sprintf("%d revisions newer than the newest snapshot", head.Header.Revision-snapRev), "keeps its cluster ID"} {
		if !strings.Contains(body, want) {
			t.Errorf("the recovery's pull request does not say %q:\n%s", want, body)
		}
	}
	testbed.Eventually(t, "3 healthy voters after the recovery", l.voters(kv, 3))
	cli = l.client(kv, 3)
	for prefix, want := range map[string]int64{"a": 30, "b": 30} {
		if got := count(t, l, cli, prefix); got != want {
			t.Errorf("%d keys %s-*, want %d", got, prefix, want)
		}
	}
	if after := clusterID(t, l, cli); after != before {
		t.Errorf("cluster ID %x, want the old %x: --force-new-cluster keeps it", after, before)
	}
	l.noDrift("after the recovery")
}

// snapshotPolicy is a backup policy whose schedule never fires during a
// test: its snapshots are the ones the test asks for.
func snapshotPolicy(t *testing.T) []string {
	return []string{"backup:", `  schedule: "0 3 1 1 *"`, `  storageLocation: "file://` + t.TempDir() + `"`}
}

// put writes keys <prefix>-000 and on, each until it is acknowledged (a
// leader lost just before is a wait, not a failure).
func put(t *testing.T, l *loop, cli *clientv3.Client, prefix string, n int) {
	t.Helper()
	for i := range n {
		key := fmt.Sprintf("%s-%03d", prefix, i)
		testbed.Eventually(t, "put "+key, func() error {
			ctx, cancel := context.WithTimeout(l.ctx, 5*time.Second)
			defer cancel()
			_, err := cli.Put(ctx, key, "v")
			return err
		})
	}
}

func count(t *testing.T, l *loop, cli *clientv3.Client, prefix string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(l.ctx, 5*time.Second)
	defer cancel()
	got, err := cli.Get(ctx, prefix+"-", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	return got.Count
}

func clusterID(t *testing.T, l *loop, cli *clientv3.Client) uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(l.ctx, 5*time.Second)
	defer cancel()
	got, err := cli.MemberList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return got.Header.ClusterId
}

// podNotReady waits until the pod reports not ready.
func (l *loop) podNotReady(name string) {
	testbed.Eventually(l.t, name+" not ready", func() error {
		p, err := l.cp.Client(l.t).CoreV1().Pods(l.ns).Get(l.ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				return fmt.Errorf("ready")
			}
		}
		return nil
	})
}

// manualBackup asks the cluster's runtime for a snapshot now, as cairn
// backup run does, and returns its ID and revision once it is complete.
func (l *loop) manualBackup(cluster, id string) (string, int64) {
	t := l.t
	c := l.cp.Client(t)
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{contract.AnnotationBackupRequest: id}}})
	if _, err := c.CoreV1().ConfigMaps(l.ns).Patch(l.ctx, contract.StatusConfigMap(cluster), types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	var done *contract.BackupDone
	testbed.Eventually(t, "snapshot "+id, func() error {
		cm, err := c.CoreV1().ConfigMaps(l.ns).Get(l.ctx, contract.StatusConfigMap(cluster), metav1.GetOptions{})
		if err != nil {
			return err
		}
		st, err := contract.ParseBackupStatus(cm.Data[contract.StatusKeyBackup])
		if err != nil || st.LastManualRequest != id || st.LastSuccessful == nil {
			return fmt.Errorf("backup status %+v %v", st, err)
		}
		done = st.LastSuccessful
		return nil
	})
	if done.Revision == 0 {
		t.Fatalf("snapshot %s reports no revision", done.ID)
	}
	return done.ID, done.Revision
}

// mergedBody is the body of the merged pull request of cluster's step.
func (l *loop) mergedBody(cluster, step string) string {
	for _, pr := range l.gh.PRs {
		if pr.Merged && pr.Head.Ref == "cairn/"+cluster+"/"+step {
			return pr.Body
		}
	}
	l.t.Fatalf("no merged pull request for %s/%s", cluster, step)
	return ""
}

// summaryLine is the line of a recovery pull request's body that says
// what it does.
func summaryLine(body string) string {
	for _, l := range strings.Split(body, "\n") {
		if strings.Contains(l, "whose quorum has been lost since") {
			return strings.TrimSpace(l)
		}
	}
	return "(no summary line)"
}
