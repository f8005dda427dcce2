package observe

import (
	"time"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/live"
)

// applyBackupStatus puts the runtime's last successful backup and last
// completed request into the observed backup state.
func applyBackupStatus(out *live.Cluster, data string) error {
	st, err := contract.ParseBackupStatus(data)
	if err != nil || out.Backup == nil {
		return err
	}
	if d := st.LastSuccessful; d != nil {
		out.Backup.LastSuccessful = live.Timestamp(d.Finished.UTC().Format(time.RFC3339))
	}
	out.Backup.LastRequest = st.LastRequest
	return nil
}
