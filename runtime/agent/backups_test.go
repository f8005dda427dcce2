package agent

import (
	"cmp"
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/runtime/backup"
	"github.com/cairn-dev/cairn/testbed"
)

// backupBed is one real etcd member behind a ready pod "kv-0" of the
// cluster "kv", with the cluster's rendered config and StatefulSet.
type backupBed struct {
	t *testing.T
	c kubernetes.Interface
	// cluster is the cluster's name; "" is "kv".
	cluster string
	ns      string
	port    int
	cli     *clientv3.Client
	stores  string
}

func newBackupBed(t *testing.T) *backupBed {
	cp := testbed.Start(t)
	return newBackupBedIn(t, cp, cp.Namespace(t, "backups"))
}

// newBackupBedIn is the bed in namespace ns of control plane cp.
func newBackupBedIn(t *testing.T, cp *testbed.ControlPlane, ns string) *backupBed {
	b := &backupBed{t: t, c: cp.Client(t), ns: ns, stores: t.TempDir()}
	ctx := context.Background()
	curl, cli := testbed.EtcdMember(t, "kv-0", filepath.Join(t.TempDir(), "d"), "")
	b.port, _ = strconv.Atoi(curl[strings.LastIndexByte(curl, ':')+1:])
	b.cli = cli
	sel := contract.Selector(contract.AppEtcd, "kv")
	one := int32(1)
	tmpl := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: sel}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "etcd", Image: "etcd"}}}}
	if _, err := b.c.AppsV1().StatefulSets(b.ns).Create(ctx, &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "kv"},
		Spec: appsv1.StatefulSetSpec{Replicas: &one, Selector: &metav1.LabelSelector{MatchLabels: sel}, Template: tmpl}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	kv0 := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "kv-0", Labels: sel}, Spec: tmpl.Spec}
	ownedByStatefulSet(t, b.c, b.ns, "kv", kv0)
	pod, err := b.c.CoreV1().Pods(b.ns).Create(ctx, kv0, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "127.0.0.1", Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
	if _, err := b.c.CoreV1().Pods(b.ns).UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	return b
}

// source is the etcd keeper's backup source of the cluster "kv".
func (b *backupBed) source() func(context.Context) (backup.Source, string, error) {
	return (&Membership{Client: b.c, Namespace: b.ns, Cluster: "kv", Port: b.port}).BackupSource
}

// setPolicy writes the rendered config's backup policy.
func (b *backupBed) setPolicy(data map[string]string) {
	ctx := context.Background()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: contract.ConfigMap(cmp.Or(b.cluster, "kv"))}, Data: data}
	if _, err := b.c.CoreV1().ConfigMaps(b.ns).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		if _, err := b.c.CoreV1().ConfigMaps(b.ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			b.t.Fatal(err)
		}
	}
}

// runtime runs the cluster's backups until ctx ends; the channel closes
// when they have stopped.
func (b *backupBed) runtime(ctx context.Context) <-chan struct{} {
	bk := &Backups{Client: b.c, Namespace: b.ns, Cluster: "kv", Source: b.source(), Interval: 200 * time.Millisecond,
		Log: testbed.Logger(b.t, 100)}
	done := make(chan struct{})
	go func() { defer close(done); bk.Run(ctx) }()
	return done
}

func (b *backupBed) status() BackupStatus {
	st, _, err := (&Backups{Client: b.c, Namespace: b.ns, Cluster: cmp.Or(b.cluster, "kv")}).readStatus(context.Background())
	if err != nil {
		b.t.Fatal(err)
	}
	return st
}

func (b *backupBed) complete() []backup.Manifest {
	all, err := backup.List(context.Background(), &backup.FileStore{Root: b.stores}, "kv")
	if err != nil {
		b.t.Fatal(err)
	}
	return all
}

func (b *backupBed) put(prefix string, n int) {
	for i := range n {
		if _, err := b.cli.Put(context.Background(), fmt.Sprintf("%s%03d", prefix, i), "v"); err != nil {
			b.t.Fatal(err)
		}
	}
}

// A scheduled backup runs on its cron tick and holds exactly the keys
// written before it began; retention keeps the newest two; the status
// says when the last one finished.
func TestScheduledBackupsAndRetention(t *testing.T) {
	b := newBackupBed(t)
	b.put("before", 50)
	b.setPolicy(map[string]string{"backup.schedule": "*/2 * * * * *", "backup.storage-location": "file://" + b.stores, "backup.retention.count": "2"})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b.runtime(ctx)
	var first backup.Manifest
	testbed.Eventually(t, "a scheduled backup", func() error {
		if all := b.complete(); len(all) > 0 {
			first = all[0]
			return nil
		}
		return fmt.Errorf("none yet; status %+v", b.status())
	})
	testbed.Eventually(t, "two more backups, one pruned", func() error {
		all := b.complete()
		if len(all) != 2 || all[0].ID == first.ID {
			return fmt.Errorf("%d complete backups, the oldest %s", len(all), all[0].ID)
		}
		return nil
	})
	st := b.status()
	all := b.complete()
	if st.LastSuccessful == nil || st.LastSuccessful.ID != all[1].ID && st.LastSuccessful.ID != all[0].ID || st.LastFailure != nil {
		t.Fatalf("status %+v", st)
	}
	// What the schedule kept restores (backup's own tests check the
	// restored keys one by one).
	dir := filepath.Join(t.TempDir(), "restored")
	if err := backup.RestoreEtcd(context.Background(), &backup.FileStore{Root: b.stores}, all[1], backup.EtcdRestore{DataDir: dir, Name: "kv-0", PeerURL: "http://127.0.0.1:2380", Token: "r"}); err != nil {
		t.Fatal(err)
	}
}

// An on-demand request (cairn backup run's annotation) runs at once and
// is recorded; a missed scheduled run is caught up once at start.
func TestRequestedAndMissedBackups(t *testing.T) {
	b := newBackupBed(t)
	ctx := context.Background()
	b.setPolicy(map[string]string{"backup.schedule": "0 3 * * *", "backup.storage-location": "file://" + b.stores})
	// A backup finished two days ago: today's 03:00 run was missed.
	long := &Backups{Client: b.c, Namespace: b.ns, Cluster: "kv"}
	if err := long.updateStatus(ctx, func(s *BackupStatus) {
		s.LastSuccessful = &BackupDone{ID: "old", Finished: time.Now().Add(-48 * time.Hour)}
	}); err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	b.runtime(rctx)
	testbed.Eventually(t, "the missed run caught up", func() error {
		if n := len(b.complete()); n != 1 {
			return fmt.Errorf("%d backups", n)
		}
		return nil
	})
	// A merged TakeBackup step asks, then cairn backup run: both are
	// served, each recorded on its own.
	b.setPolicy(map[string]string{contract.KeyBackupSchedule: "0 3 * * *", contract.KeyBackupStorageLocation: "file://" + b.stores, contract.KeyRequestBackupID: "backup-before-upgrade"})
	testbed.Eventually(t, "the step's backup", func() error {
		if st := b.status(); st.LastRequest != "backup-before-upgrade" || len(b.complete()) != 2 {
			return fmt.Errorf("status %+v, %d backups", st, len(b.complete()))
		}
		return nil
	})
	patch := []byte(`{"metadata":{"annotations":{"` + BackupRequestAnnotation + `":"by-hand-1"}}}`)
	if _, err := b.c.CoreV1().ConfigMaps(b.ns).Patch(ctx, contract.StatusConfigMap("kv"), types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	testbed.Eventually(t, "the requested backup", func() error {
		if st := b.status(); st.LastManualRequest != "by-hand-1" || st.LastRequest != "backup-before-upgrade" || len(b.complete()) != 3 {
			return fmt.Errorf("status %+v, %d backups", st, len(b.complete()))
		}
		return nil
	})
	time.Sleep(time.Second)
	if n := len(b.complete()); n != 3 {
		t.Fatalf("%d backups: a served request was served again", n)
	}
}

// A backup that cannot be stored is a clear error in the status and an
// Event, and deletes no earlier backup.
func TestFailedBackupIsReported(t *testing.T) {
	b := newBackupBed(t)
	ctx := context.Background()
	b.setPolicy(map[string]string{"backup.schedule": "*/2 * * * * *", "backup.storage-location": "file://" + b.stores, "backup.retention.count": "1"})
	rctx, cancel := context.WithCancel(ctx)
	done := b.runtime(rctx)
	testbed.Eventually(t, "a first backup", func() error {
		if len(b.complete()) == 0 {
			return fmt.Errorf("none yet")
		}
		return nil
	})
	cancel()
	<-done
	good := b.complete()
	const secret = "s3cr3t-n0t-t0-be-s33n"
	// The location turns into an S3 bucket nobody can reach.
	b.setPolicy(map[string]string{contract.KeyBackupSchedule: "*/2 * * * * *", contract.KeyBackupStorageLocation: "s3://no-such-bucket/x", contract.KeyBackupRetentionCount: "1"})
	rctx, cancel = context.WithCancel(ctx)
	defer cancel()
	bk := &Backups{Client: b.c, Namespace: b.ns, Cluster: "kv", Source: b.source(), Interval: 200 * time.Millisecond, Log: testbed.Logger(t, 100),
		Open: func(loc backup.Location) (backup.Store, error) {
			return backup.NewS3Store(loc, backup.S3Config{Endpoint: "http://127.0.0.1:1", AccessKeyID: "k", SecretAccessKey: secret})
		}}
	go bk.Run(rctx)
	testbed.Eventually(t, "the failure in the status", func() error {
		if st := b.status(); st.LastFailure == nil || !strings.Contains(st.LastFailure.Error, "cannot be reached") {
			return fmt.Errorf("status %+v", st)
		}
		return nil
	})
	// The Event is recorded after the status is written.
	testbed.Eventually(t, "the failure's Event", func() error {
		evs, err := b.c.CoreV1().Events(b.ns).List(ctx, metav1.ListOptions{})
		if err != nil || len(evs.Items) == 0 {
			return fmt.Errorf("events %+v %v", evs, err)
		}
		return nil
	})
	evs, err := b.c.CoreV1().Events(b.ns).List(ctx, metav1.ListOptions{})
	if err != nil || len(evs.Items) == 0 || evs.Items[0].Reason != "BackupFailed" || strings.Contains(evs.Items[0].Message, secret) {
		t.Fatalf("events %+v %v", evs, err)
	}
	if st := b.status(); strings.Contains(st.LastFailure.Error, secret) {
		t.Fatalf("the secret is in the status: %s", st.LastFailure.Error)
	}
	if after := b.complete(); len(after) != len(good) || after[0].ID != good[0].ID {
		t.Fatalf("backups after the failure %v, before %v", after, good)
	}
}

// A PostgreSQL backup is taken from a ready replica when there is one,
// else from the primary, as the replication user.
func TestPostgresBackupSource(t *testing.T) {
	cp := testbed.Start(t)
	c, ns := cp.Client(t), cp.Namespace(t, "pgsrc")
	ctx := context.Background()
	if _, err := c.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: contract.ReplicationSecret("db")},
		Data: map[string][]byte{contract.SecretKeyPassword: []byte("r3pl")}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := func(name, role, ip string, ready bool) {
		member := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name,
			Labels: map[string]string{contract.LabelName: contract.AppPostgres, contract.LabelInstance: "db", contract.LabelRole: role}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: contract.PostgresContainer, Image: "postgres"}}}}
		ownedByStatefulSet(t, c, ns, "db", member)
		p, err := c.CoreV1().Pods(ns).Create(ctx, member, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		st := corev1.ConditionFalse
		if ready {
			st = corev1.ConditionTrue
		}
		p.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: st}}}
		if _, err := c.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	r := &Roles{Client: c, Namespace: ns, Cluster: "db", Port: 5433}
	pod("db-0", contract.RolePrimary, "127.0.0.1", true)
	pod("db-1", contract.RoleReplica, "127.0.0.2", false)
	for i, want := range []string{"db-0", "db-2"} {
		if i == 1 {
			pod("db-2", contract.RoleReplica, "127.0.0.3", true) // a ready replica is preferred
		}
		src, kind, err := r.BackupSource(ctx)
		if err != nil {
			t.Fatal(err)
		}
		pg, ok := src.(backup.PostgresSource)
		if !ok || kind != "PostgresCluster" || pg.Member != want || pg.User != "replicator" || pg.Password != "r3pl" || pg.Port != 5433 {
			t.Fatalf("source %+v %s, want %s", src, kind, want)
		}
	}
}

func TestPendingRequest(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	step := map[string]string{contract.KeyRequestBackupID: "backup-before-x"}
	manual := map[string]string{BackupRequestAnnotation: "manual-1"}
	failed := func(req string, ago time.Duration) *BackupFailure {
		return &BackupFailure{Time: now.Add(-ago), Request: req, Error: "boom"}
	}
	for _, c := range []struct {
		name          string
		config, annot map[string]string
		st            BackupStatus
		want          request
		ok            bool
	}{
		{"nothing asked", nil, nil, BackupStatus{}, request{}, false},
		{"a step asks", step, nil, BackupStatus{}, request{id: "backup-before-x"}, true},
		{"the step's request done", step, nil, BackupStatus{LastRequest: "backup-before-x"}, request{}, false},
		{"a manual request beside a done step", step, manual, BackupStatus{LastRequest: "backup-before-x"}, request{id: "manual-1", manual: true}, true},
		{"the step first", step, manual, BackupStatus{}, request{id: "backup-before-x"}, true},
		{"both done", step, manual, BackupStatus{LastRequest: "backup-before-x", LastManualRequest: "manual-1"}, request{}, false},
		{"just failed: wait", nil, manual, BackupStatus{LastFailure: failed("manual-1", 10*time.Second)}, request{}, false},
		{"failed a minute ago: again", nil, manual, BackupStatus{LastFailure: failed("manual-1", time.Minute)}, request{id: "manual-1", manual: true}, true},
		{"another's failure does not hold it", nil, manual, BackupStatus{LastFailure: failed("", time.Second)}, request{id: "manual-1", manual: true}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, ok := pendingRequest(c.config, c.annot, c.st, now)
			if got != c.want || ok != c.ok {
				t.Fatalf("got %+v %v, want %+v %v", got, ok, c.want, c.ok)
			}
		})
	}
}
