package observe

import (
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/live"
)

func TestApplyBackupStatus(t *testing.T) {
	status := `{"lastSuccessful":{"id":"20261130T020000Z-1a2b3c","location":"s3://b/x","started":"2026-11-30T02:00:00Z","finished":"2026-11-30T03:04:05+01:00","size":42,"source":"db-1","revision":1234},"lastRequest":"backup-before-upgrade"}`
	finished := time.Date(2026, 11, 30, 2, 4, 5, 0, time.UTC)
	for _, c := range []struct {
		name   string
		at     time.Time
		backup *live.Backup
		data   string
		want   *live.Backup
		err    string
	}{
		{"no policy: nothing to report", finished, nil, status, nil, ""},
		{"never backed up", finished, &live.Backup{Schedule: "@daily"}, "", &live.Backup{Schedule: "@daily"}, ""},
		{"the last success, in UTC, and the last request", finished.Add(time.Hour), &live.Backup{Schedule: "@daily"}, status,
			&live.Backup{Schedule: "@daily", LastSuccessful: "2026-11-30T02:04:05Z", LastStarted: "2026-11-30T02:00:00Z", LastRequest: "backup-before-upgrade", LastID: "20261130T020000Z-1a2b3c", LastLocation: "s3://b/x", LastRevision: 1234}, ""},
		{"just fresh enough", finished.Add(contract.BackupFreshFor), &live.Backup{Schedule: "@daily"}, status,
			&live.Backup{Schedule: "@daily", LastSuccessful: "2026-11-30T02:04:05Z", LastStarted: "2026-11-30T02:00:00Z", LastRequest: "backup-before-upgrade", LastID: "20261130T020000Z-1a2b3c", LastLocation: "s3://b/x", LastRevision: 1234}, ""},
		{"too old for a step that relies on it: stale", finished.Add(contract.BackupFreshFor + time.Second), &live.Backup{Schedule: "@daily"}, status,
			&live.Backup{Schedule: "@daily", LastSuccessful: "2026-11-30T02:04:05Z", LastStarted: "2026-11-30T02:00:00Z", LastRequest: "backup-before-upgrade", LastID: "20261130T020000Z-1a2b3c", LastLocation: "s3://b/x", LastRevision: 1234, Stale: true}, ""},
		{"garbage", finished, &live.Backup{}, "{", nil, "backup status"},
	} {
		t.Run(c.name, func(t *testing.T) {
			defer func(old func() time.Time) { now = old }(now)
			now = func() time.Time { return c.at }
			out := &live.Cluster{Backup: c.backup}
			err := applyBackupStatus(out, c.data)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want %q", err, c.err)
				}
				return
			}
			if err != nil || (c.want == nil) != (out.Backup == nil) || c.want != nil && *out.Backup != *c.want {
				t.Fatalf("got %+v %v, want %+v", out.Backup, err, c.want)
			}
		})
	}
}
