package observe

import (
	"time"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/live"
)

// now is when a backup status is observed; tests set it.
var now = time.Now

// applyBackupStatus puts the runtime's last successful backup and last
// completed request into the observed backup state, and whether that
// backup was already too old, as observed now, for a step whose rollback
// restores it (contract.BackupFreshFor). That one fact of the clock is
// read here, where the state is observed, so that the planner stays pure
// and still asks for a new backup once the last one has aged.
func applyBackupStatus(out *live.Cluster, data string) error {
	st, err := contract.ParseBackupStatus(data)
	if err != nil || out.Backup == nil {
		return err
	}
	if d := st.LastSuccessful; d != nil {
		out.Backup.LastSuccessful = live.Timestamp(d.Finished.UTC().Format(time.RFC3339))
		if !d.Started.IsZero() {
			out.Backup.LastStarted = live.Timestamp(d.Started.UTC().Format(time.RFC3339))
		}
		out.Backup.Stale = now().Sub(d.Finished) > contract.BackupFreshFor
		out.Backup.LastID, out.Backup.LastLocation, out.Backup.LastRevision = d.ID, d.Location, d.Revision
	}
	out.Backup.LastRequest = st.LastRequest
	return nil
}
