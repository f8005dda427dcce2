package agent_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/runtime/agent"
	"github.com/cairn-dev/cairn/runtime/backup"
	"github.com/cairn-dev/cairn/testbed"
	"github.com/cairn-dev/cairn/testbed/agentbed"
	"github.com/cairn-dev/cairn/testbed/promtest"
)

// runBackups runs the backups of b's cluster until ctx ends; the channel
// closes when they have stopped.
func runBackups(ctx context.Context, b *agentbed.BackupBed) <-chan struct{} {
	bk := &agent.Backups{Client: b.Client, Namespace: b.Namespace, Cluster: "kv", Source: b.Source, Interval: 200 * time.Millisecond,
		Log: testbed.Logger(b.T, 100)}
	done := make(chan struct{})
	go func() { defer close(done); bk.Run(ctx) }()
	return done
}

// A scheduled backup runs on its cron tick and holds exactly the keys
// written before it began; retention keeps the newest two; the status
// says when the last one finished.
func TestScheduledBackupsAndRetention(t *testing.T) {
	testbed.Require(t, testbed.TierIntegration, "an etcd member")
	b := agentbed.NewBackupBed(t)
	b.Put("before", 50)
	b.SetPolicy(map[string]string{"backup.schedule": "*/2 * * * * *", "backup.storage-location": "file://" + b.Stores, "backup.retention.count": "2"})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	runBackups(ctx, b)
	var first backup.Manifest
	testbed.Eventually(t, "a scheduled backup", func() error {
		if all := b.Complete(); len(all) > 0 {
			first = all[0]
			return nil
		}
		return fmt.Errorf("none yet; status %+v", b.Status())
	})
	testbed.Eventually(t, "two more backups, one pruned", func() error {
		all := b.Complete()
		if len(all) != 2 || all[0].ID == first.ID {
			return fmt.Errorf("%d complete backups, the oldest %s", len(all), all[0].ID)
		}
		return nil
	})
	st := b.Status()
	all := b.Complete()
	if st.LastSuccessful == nil || st.LastSuccessful.ID != all[1].ID && st.LastSuccessful.ID != all[0].ID || st.LastFailure != nil {
		t.Fatalf("status %+v", st)
	}
	// What the schedule kept restores (backup's own tests check the
	// restored keys one by one).
	dir := filepath.Join(t.TempDir(), "restored")
	if err := backup.RestoreEtcd(context.Background(), &backup.FileStore{Root: b.Stores}, all[1], backup.EtcdRestore{DataDir: dir, Name: "kv-0", PeerURL: "http://127.0.0.1:2380", Token: "r"}); err != nil {
		t.Fatal(err)
	}
}

// An on-demand request (cairn backup run's annotation) runs at once and
// is recorded; a missed scheduled run is caught up once at start.
func TestRequestedAndMissedBackups(t *testing.T) {
	testbed.Require(t, testbed.TierIntegration, "an etcd member")
	b := agentbed.NewBackupBed(t)
	ctx := context.Background()
	b.SetPolicy(map[string]string{"backup.schedule": "0 3 * * *", "backup.storage-location": "file://" + b.Stores})
	// A backup finished two days ago: today's 03:00 run was missed.
	agentbed.WriteBackupStatus(t, b.Client, b.Namespace, "kv", agent.BackupStatus{
		LastSuccessful: &agent.BackupDone{ID: "old", Finished: time.Now().Add(-48 * time.Hour)}})
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	runBackups(rctx, b)
	testbed.Eventually(t, "the missed run caught up", func() error {
		if n := len(b.Complete()); n != 1 {
			return fmt.Errorf("%d backups", n)
		}
		return nil
	})
	// A merged TakeBackup step asks, then cairn backup run: both are
	// served, each recorded on its own.
	b.SetPolicy(map[string]string{contract.KeyBackupSchedule: "0 3 * * *", contract.KeyBackupStorageLocation: "file://" + b.Stores, contract.KeyRequestBackupID: "backup-before-upgrade"})
	testbed.Eventually(t, "the step's backup", func() error {
		if st := b.Status(); st.LastRequest != "backup-before-upgrade" || len(b.Complete()) != 2 {
			return fmt.Errorf("status %+v, %d backups", st, len(b.Complete()))
		}
		return nil
	})
	patch := []byte(`{"metadata":{"annotations":{"` + agent.BackupRequestAnnotation + `":"by-hand-1"}}}`)
	if _, err := b.Client.CoreV1().ConfigMaps(b.Namespace).Patch(ctx, contract.StatusConfigMap("kv"), types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	testbed.Eventually(t, "the requested backup", func() error {
		if st := b.Status(); st.LastManualRequest != "by-hand-1" || st.LastRequest != "backup-before-upgrade" || len(b.Complete()) != 3 {
			return fmt.Errorf("status %+v, %d backups", st, len(b.Complete()))
		}
		return nil
	})
	time.Sleep(time.Second)
	if n := len(b.Complete()); n != 3 {
		t.Fatalf("%d backups: a served request was served again", n)
	}
}

// A backup that cannot be stored is a clear error in the status and an
// Event, and deletes no earlier backup.
func TestFailedBackupIsReported(t *testing.T) {
	testbed.Require(t, testbed.TierIntegration, "an etcd member")
	b := agentbed.NewBackupBed(t)
	ctx := context.Background()
	b.SetPolicy(map[string]string{"backup.schedule": "*/2 * * * * *", "backup.storage-location": "file://" + b.Stores, "backup.retention.count": "1"})
	rctx, cancel := context.WithCancel(ctx)
	done := runBackups(rctx, b)
	testbed.Eventually(t, "a first backup", func() error {
		if len(b.Complete()) == 0 {
			return fmt.Errorf("none yet")
		}
		return nil
	})
	cancel()
	<-done
	good := b.Complete()
	const secret = "s3cr3t-n0t-t0-be-s33n"
	// The location turns into an S3 bucket nobody can reach.
	b.SetPolicy(map[string]string{contract.KeyBackupSchedule: "*/2 * * * * *", contract.KeyBackupStorageLocation: "s3://no-such-bucket/x", contract.KeyBackupRetentionCount: "1"})
	rctx, cancel = context.WithCancel(ctx)
	defer cancel()
	bk := &agent.Backups{Client: b.Client, Namespace: b.Namespace, Cluster: "kv", Source: b.Source, Interval: 200 * time.Millisecond, Log: testbed.Logger(t, 100),
		Open: func(loc backup.Location) (backup.Store, error) {
			return backup.NewS3Store(loc, backup.S3Config{Endpoint: "http://127.0.0.1:1", AccessKeyID: "k", SecretAccessKey: secret})
		}}
	go bk.Run(rctx)
	testbed.Eventually(t, "the failure in the status", func() error {
		if st := b.Status(); st.LastFailure == nil || !strings.Contains(st.LastFailure.Error, "cannot be reached") {
			return fmt.Errorf("status %+v", st)
		}
		return nil
	})
	// The Event is recorded after the status is written.
	testbed.Eventually(t, "the failure's Event", func() error {
		evs, err := b.Client.CoreV1().Events(b.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil || len(evs.Items) == 0 {
			return fmt.Errorf("events %+v %v", evs, err)
		}
		return nil
	})
	evs, err := b.Client.CoreV1().Events(b.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil || len(evs.Items) == 0 || evs.Items[0].Reason != "BackupFailed" || strings.Contains(evs.Items[0].Message, secret) {
		t.Fatalf("events %+v %v", evs, err)
	}
	if st := b.Status(); strings.Contains(st.LastFailure.Error, secret) {
		t.Fatalf("the secret is in the status: %s", st.LastFailure.Error)
	}
	if after := b.Complete(); len(after) != len(good) || after[0].ID != good[0].ID {
		t.Fatalf("backups after the failure %v, before %v", after, good)
	}
}

// The backup gauges the alerts read follow what Run does: while a policy
// is on, when a backup is due; a failed scheduled backup as the last
// failure, with no success; no policy, nothing due.
func TestBackupGaugesFollowTheSchedule(t *testing.T) {
	testbed.Require(t, testbed.TierIntegration, "an etcd member")
	b := agentbed.NewBackupBed(t)
	// A location whose folder is a file: every backup fails.
	blocked := filepath.Join(t.TempDir(), "blocked")
	if err := os.WriteFile(blocked, []byte("not a folder"), 0o644); err != nil {
		t.Fatal(err)
	}
	b.SetPolicy(map[string]string{"backup.schedule": "*/2 * * * * *", "backup.storage-location": "file://" + blocked})
	reg := prometheus.NewRegistry()
	m, err := agent.NewBackupMetrics(reg, "kv")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	bk := &agent.Backups{Client: b.Client, Namespace: b.Namespace, Cluster: "kv", Source: b.Source, Interval: 200 * time.Millisecond,
		Metrics: m, Log: testbed.Logger(t, 100)}
	start := time.Now()
	go bk.Run(ctx)
	const due, failed, success = `cairn_backup_due_timestamp_seconds{cluster="kv"}`, `cairn_backup_last_failure_timestamp_seconds{cluster="kv"}`, `cairn_backup_last_success_timestamp_seconds{cluster="kv"}`
	testbed.Eventually(t, "a failed scheduled backup in the gauges", func() error {
		s := promtest.Series(t, reg)
		if _, ok := s[failed]; !ok {
			return fmt.Errorf("series %v", s)
		}
		if st := b.Status(); st.LastFailure == nil {
			return fmt.Errorf("status %+v", st)
		}
		return nil
	})
	s := promtest.Series(t, reg)
	// Due: the first run (every 2 s) after scheduling began, which was
	// between start and now: none has completed.
	if d, now := s[due], time.Now(); d <= float64(start.Unix()) || d > float64(now.Add(2*time.Second).Unix()) {
		t.Errorf("due at %v, want the first run after scheduling began, between %v and %v", d, start.Unix(), now.Add(2*time.Second).Unix())
	}
	if _, ok := s[success]; ok {
		t.Errorf("a success gauge with every backup failing: %v", s)
	}
	if st := b.Status(); st.LastSuccessful != nil {
		t.Errorf("status %+v", st)
	}
	b.SetPolicy(map[string]string{})
	testbed.Eventually(t, "nothing due without a policy", func() error {
		if _, ok := promtest.Series(t, reg)[due]; ok {
			return fmt.Errorf("a due series without a policy")
		}
		return nil
	})
}
