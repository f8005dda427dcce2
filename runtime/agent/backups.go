package agent

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/robfig/cron/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/runtime/backup"
)

// requestRetry is how long a failed on-demand backup waits before it is
// tried again.
const requestRetry = time.Minute

// The backup status is the contract's document, under
// contract.StatusKeyBackup: the planner's gates read what the runtime
// writes.
type (
	BackupStatus  = contract.BackupStatus
	BackupDone    = contract.BackupDone
	BackupFailure = contract.BackupFailure
)

// BackupRequestAnnotation asks the runtime for a backup now.
const BackupRequestAnnotation = contract.AnnotationBackupRequest

// Backups runs a cluster's scheduled and requested backups while its
// runtime leads: a robfig/cron scheduler on the policy of the rendered
// <cluster>-cairn ConfigMap (rebuilt when it changes), one catch-up
// backup when a scheduled run was missed while no runtime led, and
// on-demand requests. Never two backups of one cluster at once.
type Backups struct {
	Client             kubernetes.Interface
	Namespace, Cluster string
	// Source picks the member to back up from and names the cluster's
	// kind: the BackupSource of the kind's Keeper.
	Source func(ctx context.Context) (backup.Source, string, error)
	// Open opens a policy's location; nil opens it with the S3 settings
	// of the runtime's environment.
	Open    func(loc backup.Location) (backup.Store, error)
	Metrics *BackupMetrics
	Log     *slog.Logger
	// Interval is how often the policy and requests are read again.
	Interval time.Duration
	now      func() time.Time

	running sync.Mutex
	// takes are the backups started by requests and catch-ups, waited
	// for when Run returns.
	takes  sync.WaitGroup
	policy backup.Policy
	cron   *cron.Cron
}

// Run schedules backups until ctx ends (leadership lost).
func (b *Backups) Run(ctx context.Context) {
	defer b.takes.Wait()
	defer b.stopCron()
	t := time.NewTicker(cmp.Or(b.Interval, 5*time.Second))
	defer t.Stop()
	first := true
	for {
		if err := b.pass(ctx, first); err != nil && ctx.Err() == nil {
			b.logger().Warn("backup pass failed", "cluster", b.Cluster, "err", err.Error())
		} else if err == nil {
			first = false
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// pass reads the policy and the requests, reschedules when the policy
// changed, and starts a backup for a missed run or a request.
func (b *Backups) pass(ctx context.Context, first bool) error {
	cfg, err := b.Client.CoreV1().ConfigMaps(b.Namespace).Get(ctx, contract.ConfigMap(b.Cluster), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		b.dropCron() // not synced yet, or gone: no policy
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", contract.ConfigMap(b.Cluster), err)
	}
	policy, on, err := backup.PolicyFromConfig(cfg.Data)
	if err != nil {
		return err
	}
	if !on {
		b.dropCron()
		return nil // no policy, no backups: the status is not read
	}
	status, annotations, err := b.readStatus(ctx)
	if err != nil {
		return err
	}
	sched, _ := policy.Parse() // checked by PolicyFromConfig
	if policy != b.policy || b.cron == nil {
		b.schedule(ctx, policy, sched)
	}
	var last time.Time
	if status.LastSuccessful != nil {
		last = status.LastSuccessful.Finished
	}
	switch req, ok := pendingRequest(cfg.Data, annotations, status, b.clock()); {
	case ok:
		b.takes.Go(func() { b.take(ctx, policy, req) })
	case first && sched.Missed(last, b.clock()):
		b.takes.Go(func() { b.take(ctx, policy, request{}) })
	}
	return nil
}

// request is an on-demand backup: a merged TakeBackup step's (recorded as
// LastRequest, which the step's gate reads) or cairn backup run's
// (recorded as LastManualRequest). Zero is a scheduled backup.
type request struct {
	id     string
	manual bool
}

// pendingRequest is the on-demand request to serve now, if any: the
// step's first, then the manual one; a request that just failed waits
// requestRetry before it is tried again.
func pendingRequest(config, statusAnnotations map[string]string, st BackupStatus, now time.Time) (request, bool) {
	for _, r := range []request{{id: config[contract.KeyRequestBackupID]}, {id: statusAnnotations[BackupRequestAnnotation], manual: true}} {
		done := st.LastRequest
		if r.manual {
			done = st.LastManualRequest
		}
		if r.id == "" || r.id == done {
			continue
		}
		if f := st.LastFailure; f != nil && f.Request == r.id && now.Sub(f.Time) < requestRetry {
			continue
		}
		return r, true
	}
	return request{}, false
}

// schedule replaces the scheduler with one for policy p. A backup the old
// one started runs on (nothing waits for it here, so requests are still
// served); a new tick meanwhile is skipped, as never two run at once.
func (b *Backups) schedule(ctx context.Context, p backup.Policy, s backup.Schedule) {
	b.dropCron()
	c := cron.New(cron.WithLocation(s.Loc))
	c.Schedule(s.Schedule, cron.FuncJob(func() { b.take(ctx, p, request{}) }))
	c.Start()
	b.cron, b.policy = c, p
	b.Metrics.scheduled(s, b.clock())
	b.logger().Info("backups scheduled", "cluster", b.Cluster, "schedule", p.Schedule, "timeZone", s.Loc.String(), "next", s.NextAfter(b.clock()))
}

// dropCron stops the scheduler without waiting for a backup it is
// running: the passes go on meanwhile.
func (b *Backups) dropCron() {
	b.Metrics.unscheduled()
	if b.cron != nil {
		b.cron.Stop()
		b.cron = nil
	}
}

// stopCron stops the scheduler and waits for a backup it is running
// (which stops soon: its context ends with the leadership).
func (b *Backups) stopCron() {
	if b.cron != nil {
		<-b.cron.Stop().Done()
		b.cron = nil
	}
}

// take runs one backup unless one is running, then prunes and reports.
func (b *Backups) take(ctx context.Context, p backup.Policy, req request) {
	if !b.running.TryLock() {
		return
	}
	defer b.running.Unlock()
	start := b.clock()
	st, m, err := b.backup(ctx, p)
	if ctx.Err() != nil {
		return // leadership lost mid-backup: nothing complete was reported
	}
	if err != nil {
		b.failed(ctx, start, req, err)
		return
	}
	deleted, perr := backup.Prune(ctx, st, b.Cluster, p.Retention, b.clock())
	if perr != nil {
		b.logger().Warn("backup retention failed", "cluster", b.Cluster, "err", perr.Error())
	}
	b.Metrics.succeeded(m, b.clock().Sub(start))
	b.logger().Info("backup complete", "cluster", b.Cluster, "id", m.ID, "bytes", m.Size, "source", m.Source, "pruned", len(deleted))
	done := &BackupDone{ID: m.ID, Location: p.Location, Started: m.Started, Finished: m.Finished, Size: m.Size, Source: m.Source}
	if m.Etcd != nil {
		done.Revision = m.Etcd.Revision
	}
	if err := b.updateStatus(ctx, func(s *BackupStatus) {
		s.LastSuccessful = done
		switch {
		case req.manual:
			s.LastManualRequest = req.id
		case req.id != "":
			s.LastRequest = req.id
		}
	}); err != nil {
		b.logger().Warn("backup status not written", "cluster", b.Cluster, "err", err.Error())
	}
}

func (b *Backups) failed(ctx context.Context, start time.Time, req request, err error) {
	b.Metrics.failed(start)
	b.logger().Error("backup failed", "cluster", b.Cluster, "request", req.id, "err", err.Error())
	failure := &BackupFailure{Time: start, Error: err.Error(), Request: req.id}
	if serr := b.updateStatus(ctx, func(s *BackupStatus) { s.LastFailure = failure }); serr != nil {
		b.logger().Warn("backup status not written", "cluster", b.Cluster, "err", serr.Error())
	}
	if eerr := RecordClusterEvent(ctx, b.Client, b.Namespace, b.Cluster, b.clock(), Event{corev1.EventTypeWarning, "BackupFailed", err.Error()}); eerr != nil {
		b.logger().Warn("backup event not recorded", "cluster", b.Cluster, "err", eerr.Error())
	}
}

func (b *Backups) open(p backup.Policy) (backup.Store, error) {
	if b.Open == nil {
		return backup.OpenFromEnv(p.Location)
	}
	loc, err := backup.ParseLocation(p.Location)
	if err != nil {
		return nil, err
	}
	return b.Open(loc)
}

// backup takes one backup into the policy's location and returns the
// store it opened.
func (b *Backups) backup(ctx context.Context, p backup.Policy) (backup.Store, backup.Manifest, error) {
	st, err := b.open(p)
	if err != nil {
		return nil, backup.Manifest{}, err
	}
	if b.Source == nil {
		return nil, backup.Manifest{}, errNoSource
	}
	src, kind, err := b.Source(ctx)
	if err != nil {
		return nil, backup.Manifest{}, err
	}
	m, err := backup.Take(ctx, st, b.Cluster, kind, src, b.clock)
	return st, m, err
}

func (b *Backups) clock() time.Time {
	if b.now != nil {
		return b.now()
	}
	return time.Now()
}

func (b *Backups) logger() *slog.Logger {
	if b.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return b.Log
}

// readStatus reads the backup status and the status ConfigMap's
// annotations; a missing ConfigMap is an empty status.
func (b *Backups) readStatus(ctx context.Context) (BackupStatus, map[string]string, error) {
	var st BackupStatus
	cm, err := b.Client.CoreV1().ConfigMaps(b.Namespace).Get(ctx, contract.StatusConfigMap(b.Cluster), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return st, nil, nil
	}
	if err != nil {
		return st, nil, fmt.Errorf("read %s: %w", contract.StatusConfigMap(b.Cluster), err)
	}
	st, err = contract.ParseBackupStatus(cm.Data[contract.StatusKeyBackup])
	if err != nil {
		return st, nil, fmt.Errorf("%s: %w", contract.StatusConfigMap(b.Cluster), err)
	}
	return st, cm.Annotations, nil
}

// updateStatus changes the backup status with a merge patch of its one
// key, so the other keys' writers are never overwritten.
func (b *Backups) updateStatus(ctx context.Context, change func(*BackupStatus)) error {
	st, _, err := b.readStatus(ctx)
	if err != nil {
		return err
	}
	change(&st)
	data, err := json.Marshal(st)
	if err != nil {
		return err
	}
	patch, _ := json.Marshal(map[string]any{"data": map[string]string{contract.StatusKeyBackup: string(data)}})
	cms := b.Client.CoreV1().ConfigMaps(b.Namespace)
	_, err = cms.Patch(ctx, contract.StatusConfigMap(b.Cluster), types.MergePatchType, patch, metav1.PatchOptions{FieldManager: contract.FieldManager})
	if apierrors.IsNotFound(err) {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: contract.StatusConfigMap(b.Cluster), Namespace: b.Namespace},
			Data: map[string]string{contract.StatusKeyBackup: string(data)}}
		if _, err = cms.Create(ctx, cm, metav1.CreateOptions{FieldManager: contract.FieldManager}); apierrors.IsAlreadyExists(err) {
			return b.updateStatus(ctx, change)
		}
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", contract.StatusConfigMap(b.Cluster), err)
	}
	return nil
}

// errNoSource: Backups was built without a Source.
var errNoSource = errors.New("no backup source")
