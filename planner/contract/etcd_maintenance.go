package contract

import (
	"encoding/json"
	"fmt"
)

// etcd maintenance: what keeps an etcd cluster within its space quota.
// The rendered ConfigMap <cluster>-cairn tells the runtime how to compact
// (KeyEtcdCompaction*) and the instance managers which quota to start
// the members with (KeyEtcdQuotaBackendBytes); the runtime reports what
// it did and the alarms etcd raised under StatusKeyEtcdMaintenance.

// Keys of the ConfigMap <cluster>-cairn.
const (
	// KeyEtcdCompactionMode is EtcdCompactionPeriodic or
	// EtcdCompactionRevision; absent, the runtime does not compact (a
	// cluster rendered before compaction was planned).
	KeyEtcdCompactionMode = "etcd.compaction.mode"
	// KeyEtcdCompactionRetention is a duration ("1h") in periodic mode and
	// a number of revisions ("10000") in revision mode.
	KeyEtcdCompactionRetention = "etcd.compaction.retention"
	// KeyEtcdQuotaBackendBytes is etcd's --quota-backend-bytes, in bytes;
	// absent, etcd's own default (EtcdDefaultQuotaBytes).
	KeyEtcdQuotaBackendBytes = "etcd.quota-backend-bytes"
)

// The compaction modes.
const (
	EtcdCompactionPeriodic = "periodic"
	EtcdCompactionRevision = "revision"
)

// EtcdDefaultQuotaBytes is etcd's own space quota when
// --quota-backend-bytes is not given (every release from 3.2 to 3.7).
const EtcdDefaultQuotaBytes int64 = 2 << 30

// EtcdDisarmBelowPercent: the runtime disarms NOSPACE only once every
// member's database file is below this share of its space quota, so that
// the cluster does not raise it again with the next few writes; the
// planner refuses a quota the data in use would not fit below.
const EtcdDisarmBelowPercent = 80

// The alarms etcd raises that the runtime reports, as etcd names them.
const (
	// EtcdAlarmNoSpace: a member's database reached the space quota; the
	// cluster takes no more writes until the alarm is disarmed.
	EtcdAlarmNoSpace = "NOSPACE"
	// EtcdAlarmCorrupt: a member's data disagrees with the others' at the
	// same revision (etcd's corruption check).
	EtcdAlarmCorrupt = "CORRUPT"
)

// StatusKeyEtcdMaintenance, in the status ConfigMap, holds an
// EtcdMaintenanceStatus.
const StatusKeyEtcdMaintenance = "etcd-maintenance.json"

// The reasons of the Events the runtime records for etcd maintenance.
const (
	// ReasonEtcdAlarmRaised: etcd raised an alarm (Warning), once per
	// member and alarm.
	ReasonEtcdAlarmRaised = "EtcdAlarmRaised"
	// ReasonEtcdAlarmCleared: an alarm is no longer raised, once per
	// member and alarm: the runtime disarmed it or a person did.
	ReasonEtcdAlarmCleared = "EtcdAlarmCleared"
	// ReasonEtcdDefragmented: the runtime defragmented one member.
	ReasonEtcdDefragmented = "EtcdDefragmented"
)

// EtcdMaintenanceStatus is what the runtime reports of an etcd cluster's
// space: each member's database, the alarms raised, the compaction it
// runs and the defragmentation under way. The runtime rewrites it when
// something changed, and at least once a minute; a member's sizes change
// in it only once they moved by a twentieth (or 1 MiB at small sizes), so
// that a steady cluster's report, and the observed state, stay the same.
type EtcdMaintenanceStatus struct {
	// ObservedAt is when the runtime last looked (RFC 3339).
	ObservedAt string            `json:"observedAt"`
	Members    []EtcdMemberSpace `json:"members,omitempty"`
	// Alarms are the alarms raised, by member, sorted.
	Alarms []EtcdAlarm `json:"alarms,omitempty"`
	// Compaction is the policy the runtime runs and where it stands.
	Compaction EtcdCompactionState `json:"compaction"`
	// Defragmenting is the member the runtime is defragmenting: written
	// before it starts and cleared when it ends, so that a runtime replica
	// taking over never starts a second one at the same time.
	Defragmenting *EtcdDefrag `json:"defragmenting,omitempty"`
	// LastDefrag is the last defragmentation that ended.
	LastDefrag *EtcdDefrag `json:"lastDefrag,omitempty"`
	// Message says, for people, what the runtime did last or waits for.
	Message string `json:"message,omitempty"`
}

// EtcdMemberSpace is one member's database, as its Status call reports it.
type EtcdMemberSpace struct {
	Name string `json:"name"`
	ID   string `json:"id"`
	// DBSize is the size of the database file; DBSizeInUse the part that
	// holds data. The rest is free pages a defragmentation gives back.
	DBSize      int64 `json:"dbSize"`
	DBSizeInUse int64 `json:"dbSizeInUse"`
	// Quota is the space quota the member runs with, as it reports it
	// (etcd 3.6 on); 0 when it does not say.
	Quota int64 `json:"quota,omitempty"`
	// Defragmented is when the runtime last defragmented it (RFC 3339).
	Defragmented string `json:"defragmented,omitempty"`
}

// EtcdAlarm is one alarm etcd raised.
type EtcdAlarm struct {
	// Member is the member's name; ID its etcd ID (hex).
	Member string `json:"member,omitempty"`
	ID     string `json:"id"`
	// Alarm is EtcdAlarmNoSpace, EtcdAlarmCorrupt or another name etcd
	// gives.
	Alarm string `json:"alarm"`
	// Since is when the runtime first saw it raised (RFC 3339).
	Since string `json:"since"`
}

// EtcdCompactionState is the compaction the runtime runs.
type EtcdCompactionState struct {
	// Mode and Retention are the policy of the rendered config the runtime
	// runs (KeyEtcdCompaction*); empty when it does not compact.
	Mode      string `json:"mode,omitempty"`
	Retention string `json:"retention,omitempty"`
	// Revision is the revision the runtime last compacted to, At when.
	Revision int64  `json:"revision,omitempty"`
	At       string `json:"at,omitempty"`
	// Samples are, in periodic mode, the store revisions the runtime
	// recorded every tenth of the retention, oldest first: it compacts to
	// the newest one at least a retention old, so that a retention of
	// history (and at most a tenth more) is kept.
	Samples []EtcdRevisionSample `json:"samples,omitempty"`
}

// EtcdRevisionSample is the store revision at a time.
type EtcdRevisionSample struct {
	At       string `json:"at"`
	Revision int64  `json:"revision"`
}

// EtcdDefrag is one defragmentation of one member.
type EtcdDefrag struct {
	Member string `json:"member"`
	// Started is when it started, Ended when it ended (RFC 3339).
	Started string `json:"started"`
	Ended   string `json:"ended,omitempty"`
	// Freed is how many bytes the database file shrank by.
	Freed int64 `json:"freed,omitempty"`
	// Error is why it failed; empty when it succeeded.
	Error string `json:"error,omitempty"`
}

// ParseEtcdMaintenanceStatus reads the status ConfigMap's key; empty data
// is an empty status.
func ParseEtcdMaintenanceStatus(data string) (EtcdMaintenanceStatus, error) {
	var st EtcdMaintenanceStatus
	if data == "" {
		return st, nil
	}
	if err := json.Unmarshal([]byte(data), &st); err != nil {
		return st, fmt.Errorf("etcd maintenance status: %w", err)
	}
	return st, nil
}
