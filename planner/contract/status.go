package contract

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Keys of the status ConfigMap <cluster>-cairn-status (see
// StatusConfigMap), each a JSON document the runtime writes.
const (
	// StatusKeyEtcd holds an EtcdStatus.
	StatusKeyEtcd = "etcd.json"
	// StatusKeyPostgres holds the PostgreSQL runtime's own record of
	// failovers and switchovers (read only by the runtime).
	StatusKeyPostgres = "postgres.json"
	// StatusKeyBackup holds a BackupStatus.
	StatusKeyBackup = "backup.json"
)

// EtcdStatus is what the runtime reports of an etcd cluster
// (planner/observe/testdata/etcd-status.json is an example the
// runtime's tests decode too).
type EtcdStatus struct {
	// ObservedAt is when the runtime listed the members (RFC 3339).
	ObservedAt     string `json:"observedAt"`
	ClusterVersion string `json:"clusterVersion"`
	// Quorum: more than half of the voters are healthy. While it is lost
	// the members are the last ones known, none healthy or leading.
	Quorum bool `json:"quorum"`
	// QuorumLostAt is when the runtime saw a quorum it had seen before
	// lost (RFC 3339); empty while there is quorum.
	QuorumLostAt string `json:"quorumLostAt,omitempty"`
	// Message says, for people, what the runtime did last or waits for.
	Message string       `json:"message,omitempty"`
	Members []EtcdMember `json:"members"`
	// Replacing names the members the runtime removed because their
	// volume claim was replaced (their data is lost), until they have
	// joined again.
	Replacing []string `json:"replacing,omitempty"`
	// RemoveDone is the ID of the last remove-member request (a merged
	// EtcdRemoveMember step) carried out; it is not acted on again.
	RemoveDone string `json:"removeDone,omitempty"`
	// QuorumRevision is the highest store revision a healthy member
	// reported while the cluster last had quorum: what a recovery is
	// measured against.
	QuorumRevision int64 `json:"quorumRevision,omitempty"`
	// RecoverDone is the ID of the last recovery request (a merged
	// EtcdRecover step) whose members the runtime restarted; RecoverRefused
	// is one it refused (quorum had come back), with why in Message.
	RecoverDone    string `json:"recoverDone,omitempty"`
	RecoverRefused string `json:"recoverRefused,omitempty"`
	// Downgrade is etcd's downgrade as the runtime sees and requests it
	// (etcd_downgrade.go); nil when none was ever enabled or asked for.
	Downgrade *EtcdDowngrade `json:"downgrade,omitempty"`
	// LastLeaderMove is the last leadership move the runtime made; nil
	// when it made none.
	LastLeaderMove *EtcdLeaderMove `json:"lastLeaderMove,omitempty"`
}

// EtcdLeaderMove is a leadership move the runtime made (etcd's
// MoveLeader): from and to which member, when (RFC 3339) and why (the
// leader's node cordoned, or a merged step removing the leader).
type EtcdLeaderMove struct {
	From   string `json:"from"`
	To     string `json:"to"`
	At     string `json:"at"`
	Reason string `json:"reason"`
}

// EtcdMember is one member as etcd lists it, with what its own etcd
// reports of itself.
type EtcdMember struct {
	Name     string   `json:"name"`
	ID       string   `json:"id"`
	PeerURLs []string `json:"peerURLs"`
	Learner  bool     `json:"learner"`
	Leader   bool     `json:"leader"`
	// Healthy: the member answers and follows a leader.
	Healthy bool `json:"healthy"`
	// Version is the etcd version the member reports; empty when it does
	// not answer.
	Version string `json:"version,omitempty"`
	// Revision is the member's store revision (as of the last write of the
	// status: a changed revision alone does not rewrite it).
	Revision int64 `json:"revision,omitempty"`
	// ClaimUID is the UID of the member's volume claim (data-<name>) when
	// the runtime first saw this member ID. A different UID today means a
	// replaced claim: the member's data is gone and the runtime replaces it.
	ClaimUID string `json:"claimUID,omitempty"`
	// TLS: the member answered the runtime over TLS with the cluster's
	// certificate, verified, when the status was written: on its client
	// port, in TLS mode accept or require.
	TLS bool `json:"tls,omitempty"`
}

// EtcdPeerTLS reports whether every one of an etcd member's advertised
// peer URLs is https: its peers reach it over TLS only. false for a
// member with no peer URL.
func EtcdPeerTLS(peerURLs []string) bool {
	for _, u := range peerURLs {
		if !strings.HasPrefix(u, "https://") {
			return false
		}
	}
	return len(peerURLs) > 0
}

// BackupStatus is what the runtime reports of a cluster's backups; the
// runtime writes it and the planner's backup gates read it.
type BackupStatus struct {
	LastSuccessful *BackupDone    `json:"lastSuccessful,omitempty"`
	LastFailure    *BackupFailure `json:"lastFailure,omitempty"`
	// LastRequest is the ID of the last merged TakeBackup step a backup
	// completed; the step's gate waits for it.
	LastRequest string `json:"lastRequest,omitempty"`
	// LastManualRequest is the ID of the last cairn backup run request a
	// backup completed.
	LastManualRequest string `json:"lastManualRequest,omitempty"`
}

// BackupFreshFor is how old the newest complete backup may be for a step
// whose rollback restores it (a PostgreSQL major upgrade, the last member
// of an etcd minor upgrade): the planner gates such a step on a backup
// this fresh, and the observer reports an older one stale
// (live.Backup.Stale), so that the planner asks for a new backup rather
// than wait on a gate that no backup would satisfy.
const BackupFreshFor = 6 * time.Hour

// BackupDone is a complete backup.
type BackupDone struct {
	ID       string    `json:"id"`
	Location string    `json:"location"`
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	Size     int64     `json:"size"`
	Source   string    `json:"source"`
	// Revision is an etcd snapshot's store revision: it holds every write
	// up to it.
	Revision int64 `json:"revision,omitempty"`
}

// BackupFailure is the last failed attempt.
type BackupFailure struct {
	Time  time.Time `json:"time"`
	Error string    `json:"error"`
	// Request is the on-demand request the attempt served, if any.
	Request string `json:"request,omitempty"`
}

// ParseBackupStatus reads the status ConfigMap's backup key; empty data
// is an empty status.
func ParseBackupStatus(data string) (BackupStatus, error) {
	var st BackupStatus
	if data == "" {
		return st, nil
	}
	if err := json.Unmarshal([]byte(data), &st); err != nil {
		return st, fmt.Errorf("backup status: %w", err)
	}
	return st, nil
}

// PostgresMember is one member in the PostgreSQL runtime's status (the
// members of StatusKeyPostgres): its role label, how it answered the
// runtime's last probe, and, for a replica of the one primary, how far
// behind it is as a LagClass. cairn status reads the members from there.
type PostgresMember struct {
	Name   string `json:"name"`
	Role   string `json:"role"`
	Answer string `json:"answer"`
	// Lag is the replica's LagClass; empty for the primary, or while
	// there is not exactly one primary.
	Lag string `json:"lag,omitempty"`
}

// PostgresMembers reads the members of the status ConfigMap's
// StatusKeyPostgres document; empty data is none.
func PostgresMembers(data string) ([]PostgresMember, error) {
	if data == "" {
		return nil, nil
	}
	var st struct {
		Members []PostgresMember `json:"members"`
	}
	if err := json.Unmarshal([]byte(data), &st); err != nil {
		return nil, fmt.Errorf("postgres status: %w", err)
	}
	return st.Members, nil
}

// LagClass says how many bytes of the primary's WAL a replica has not
// replayed, in classes wide enough that a replica streaming a steady
// write load stays in one ("under 16 MiB") and its status is not
// rewritten on every pass: "under 16 MiB", "under 1 GiB", "1 GiB or more".
func LagClass(bytes uint64) string {
	switch {
	case bytes < 16<<20:
		return "under 16 MiB"
	case bytes < 1<<30:
		return "under 1 GiB"
	}
	return "1 GiB or more"
}
