package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/cairn-dev/cairn/planner/contract"
)

// pgStatus is what the PostgreSQL runtime records. A failover or
// switchover is written here before anything is done, so a new leader
// finishes a half-done one.
type pgStatus struct {
	ObservedAt time.Time `json:"observedAt,omitzero"`
	// Primary is the member last seen as the one primary.
	Primary string `json:"primary,omitempty"`
	// Synchronous are the standbys the primary last waited for.
	Synchronous []string `json:"synchronous,omitempty"`
	// SyncSetting is the synchronous_standby_names the primary last
	// reported; "" while the runtime changes it (syncfence.go).
	SyncSetting string `json:"syncSetting,omitempty"`
	// FailsafeSets are the failsafe settings the primary may hold: the
	// one it reported last and any written since (failsafe.go).
	FailsafeSets []string `json:"failsafe,omitempty"`
	// Members are the members' roles and how they answered.
	Members    []contract.PostgresMember `json:"members,omitempty"`
	Failover   *pgFailover               `json:"failover,omitempty"`
	Switchover *pgSwitchover             `json:"switchover,omitempty"`
	// SwitchoverDone is the ID of the last switchover request carried out.
	SwitchoverDone    string    `json:"switchoverDone,omitempty"`
	SwitchoverRetryAt time.Time `json:"switchoverRetryAt,omitzero"`
	Failovers         int       `json:"failovers,omitempty"`
	LastFailover      *pgDone   `json:"lastFailover,omitempty"`
	LastSwitchover    *pgDone   `json:"lastSwitchover,omitempty"`
	// LastRecovery is the primary's last recovery in place from a crash.
	LastRecovery *pgRecovery `json:"lastRecovery,omitempty"`
	Message      string      `json:"message,omitempty"`
	// ArchiveFailing is the WAL segment the primary failed to archive at
	// its last attempt, while it has not archived one since; it changes
	// rarely, so the status is not rewritten at every segment (the
	// metrics say when the last one was archived).
	ArchiveFailing string `json:"archiveFailing,omitempty"`
	// WALRemoved are the replicas that need WAL the primary no longer
	// keeps, each with the position it needs (walgone.go).
	WALRemoved map[string]string `json:"walRemoved,omitempty"`
}

// pgFailover is a failover under way.
type pgFailover struct {
	From      string    `json:"from"`
	Reason    string    `json:"reason"`
	StartedAt time.Time `json:"startedAt"`
	FencedAt  time.Time `json:"fencedAt,omitzero"`
	// To is set once chosen, before it is labelled or promoted.
	To string `json:"to,omitempty"`
	// Detached are the standbys the runtime cut from the old primary
	// (syncfence.go, failsafe.go), each with the primary_conninfo it had, to point
	// it at the new primary once promoted.
	Detached []pgDetached `json:"detached,omitempty"`
}

// pgDetached is a standby detached from the old primary.
type pgDetached struct {
	Member   string `json:"member"`
	Upstream string `json:"upstream"`
	// At is when its WAL receiver was found stopped: it sent the old
	// primary nothing after (failsafe.go). Zero until then.
	At time.Time `json:"at,omitzero"`
}

// pgSwitchover is a switchover under way: a merged step's (ID), or one
// the runtime began because the primary's node is draining (Drain, the
// node; ID "").
type pgSwitchover struct {
	ID        string    `json:"id"`
	Drain     string    `json:"drain,omitempty"`
	From      string    `json:"from"`
	To        string    `json:"to"`
	StartedAt time.Time `json:"startedAt"`
	// LSN is the read-only primary's WAL position the target must replay.
	LSN      uint64    `json:"lsn"`
	FencedAt time.Time `json:"fencedAt,omitzero"`
}

// pgDone is a finished failover or switchover.
type pgDone struct {
	ID      string    `json:"id,omitempty"`
	From    string    `json:"from"`
	To      string    `json:"to"`
	At      time.Time `json:"at"`
	Seconds float64   `json:"seconds"`
	// Reason is why a failover, or a switchover for a drain, was started.
	Reason string `json:"reason,omitempty"`
}

// pgRecovery is a primary's recovery in place from a crash: its instance
// manager restarted its server, which replayed its WAL.
type pgRecovery struct {
	Member    string    `json:"member"`
	CrashedAt time.Time `json:"crashedAt"`
	// At is when the runtime first saw it answer as the primary again,
	// Seconds how long after the crash that was.
	At      time.Time `json:"at"`
	Seconds float64   `json:"seconds"`
}

// pgStatusStore reads and writes the status with resourceVersion
// preconditions: a runtime replica acting on a status another one has
// changed since gets a Conflict.
type pgStatusStore struct {
	Client    kubernetes.Interface
	Namespace string
	Name      string
	// version is the resourceVersion last read or written; "" when the
	// ConfigMap does not exist.
	version string
	// config is the members' config status as last read or written, and
	// last the status.
	config contract.PostgresConfigStatus
	last   pgStatus
}

func (s *pgStatusStore) read(ctx context.Context) (pgStatus, error) {
	cm, err := s.Client.CoreV1().ConfigMaps(s.Namespace).Get(ctx, s.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		s.version = ""
		return pgStatus{}, nil
	}
	if err != nil {
		return pgStatus{}, fmt.Errorf("read status: %w", err)
	}
	s.version = cm.ResourceVersion
	if s.config, err = contract.ParsePostgresConfigStatus(cm.Data[contract.StatusKeyPostgresConfig]); err != nil {
		s.config = contract.PostgresConfigStatus{} // rewritten on the next check
	}
	var st pgStatus
	if raw := cm.Data[contract.StatusKeyPostgres]; raw != "" {
		if err := json.Unmarshal([]byte(raw), &st); err != nil {
			return pgStatus{}, fmt.Errorf("read status %s: %w", contract.StatusKeyPostgres, err)
		}
	}
	s.last = st
	return st, nil
}

// errStatusMoved: another writer changed the status since it was read.
var errStatusMoved = errors.New("the status changed since it was read")

// write writes the status and, when config is not empty, the members'
// config status beside it.
func (s *pgStatusStore) write(ctx context.Context, st pgStatus, config string) error {
	if err := s.put(ctx, st, config); err != nil {
		return err
	}
	s.last = st
	if config != "" {
		if c, err := contract.ParsePostgresConfigStatus(config); err == nil {
			s.config = c
		}
	}
	return nil
}

func (s *pgStatusStore) put(ctx context.Context, st pgStatus, config string) error {
	data, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("write status: %w", err)
	}
	cms := s.Client.CoreV1().ConfigMaps(s.Namespace)
	if s.version == "" {
		cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: s.Name,
			Labels: map[string]string{contract.LabelManagedBy: contract.ManagedByRuntime}},
			Data: withConfig(map[string]string{contract.StatusKeyPostgres: string(data)}, config)}, metav1.CreateOptions{FieldManager: contract.FieldManager})
		return s.wrote(cm, err)
	}
	cm, err := cms.Get(ctx, s.Name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("write status: %w", err)
	}
	if cm.ResourceVersion != s.version {
		return fmt.Errorf("write status: %w", errStatusMoved)
	}
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
	cm.Data[contract.StatusKeyPostgres] = string(data)
	withConfig(cm.Data, config)
	cm, err = cms.Update(ctx, cm, metav1.UpdateOptions{FieldManager: contract.FieldManager})
	return s.wrote(cm, err)
}

func (s *pgStatusStore) wrote(cm *corev1.ConfigMap, err error) error {
	if apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("write status: %w", errStatusMoved)
	}
	if err != nil {
		return fmt.Errorf("write status: %w", err)
	}
	s.version = cm.ResourceVersion
	return nil
}

// samePgStatus compares two statuses but for when they were taken.
func samePgStatus(a, b pgStatus) bool {
	a.ObservedAt, b.ObservedAt = time.Time{}, time.Time{}
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

func withConfig(data map[string]string, config string) map[string]string {
	if config != "" {
		data[contract.StatusKeyPostgresConfig] = config
	}
	return data
}
