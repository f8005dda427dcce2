package observe

import (
	"encoding/json"
	"testing"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/live"
)

// A lost quorum is observed with what a recovery needs: since when, the
// last revision with quorum, and each member's revision; revisions are
// observed only while quorum is lost, where they do not move (they would
// change the observed state with every write otherwise).
func TestEtcdQuorumLossIsObserved(t *testing.T) {
	lost := &contract.EtcdStatus{ObservedAt: "2026-11-30T08:01:00Z", QuorumLostAt: "2026-11-30T08:00:00Z", QuorumRevision: 90,
		RecoverDone: "etcd-recover-x", Members: []contract.EtcdMember{{Name: "e-0", Revision: 80}, {Name: "e-1"}}}
	q := quorumLoss(lost)
	if q == nil || q.Since != "2026-11-30T08:00:00Z" || q.Revision != 90 || q.Long {
		t.Fatalf("quorum loss %+v", q)
	}
	if r := etcdRevision("e-0", lost); r != 80 {
		t.Errorf("e-0's revision while quorum is lost: %d", r)
	}
	healthy := *lost
	healthy.Quorum, healthy.QuorumLostAt = true, ""
	if q := quorumLoss(&healthy); q != nil {
		t.Errorf("a cluster with quorum: %+v", q)
	}
	if r := etcdRevision("e-0", &healthy); r != 0 {
		t.Errorf("e-0's revision with quorum: %d, want none observed", r)
	}
	bad := *lost
	bad.QuorumLostAt = "yesterday"
	if q := quorumLoss(&bad); q != nil {
		t.Errorf("an unreadable time: %+v", q)
	}
	out := &live.Cluster{}
	if _, err := Etcd().Status(map[string]string{contract.StatusKeyEtcd: mustJSON(t, lost)}, out); err != nil {
		t.Fatal(err)
	}
	if out.QuorumLost == nil || out.RecoverDone != "etcd-recover-x" {
		t.Errorf("observed %+v", out)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
