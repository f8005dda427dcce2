package observe

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/cairn-dev/cairn/planner/live"
)

// BackupStatusKey is the key of the runtime's status ConfigMap that holds
// a BackupStatus, and BackupRequestAnnotation the annotation on it that
// asks the runtime for a backup now (cairn backup run), by request ID.
const (
	BackupStatusKey         = "backup.json"
	BackupRequestAnnotation = "cairn.dev/backup-request"
)

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

// BackupDone is a complete backup.
type BackupDone struct {
	ID       string    `json:"id"`
	Location string    `json:"location"`
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	Size     int64     `json:"size"`
	Source   string    `json:"source"`
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

// applyBackupStatus puts the runtime's last successful backup and last
// completed request into the observed backup state.
func applyBackupStatus(out *live.Cluster, data string) error {
	st, err := ParseBackupStatus(data)
	if err != nil || out.Backup == nil {
		return err
	}
	if d := st.LastSuccessful; d != nil {
		out.Backup.LastSuccessful = live.Timestamp(d.Finished.UTC().Format(time.RFC3339))
	}
	out.Backup.LastRequest = st.LastRequest
	return nil
}
