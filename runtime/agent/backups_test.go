package agent

import (
	"testing"
	"time"

	"github.com/cairn-dev/cairn/planner/contract"
)

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
