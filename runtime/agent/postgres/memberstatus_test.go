package postgres

import (
	"reflect"
	"testing"

	"github.com/cairn-dev/cairn/planner/contract"
)

// The status gives each replica of the one primary its lag class; the
// primary has none, nor does anyone while there is not one primary.
func TestMemberStatusesCarryTheLagClass(t *testing.T) {
	primary := pgMember{Name: "db-0", Label: contract.RolePrimary, Probe: pgProbe{Reach: reachUp, Received: 2 << 30, Replayed: 2 << 30}}
	near := pgMember{Name: "db-1", Label: contract.RoleReplica, Probe: pgProbe{Reach: reachUp, InRecovery: true, Streaming: true, Received: 2 << 30, Replayed: 2<<30 - 1<<20}}
	far := pgMember{Name: "db-2", Label: contract.RoleReplica, Probe: pgProbe{Reach: reachUp, InRecovery: true, Received: 1 << 30, Replayed: 1 << 29}}
	got := memberStatuses([]pgMember{primary, near, far}, []pgMember{primary})
	want := []contract.PostgresMember{
		{Name: "db-0", Role: "primary", Answer: "primary"},
		{Name: "db-1", Role: "replica", Answer: "streaming replica", Lag: "under 16 MiB"},
		{Name: "db-2", Role: "replica", Answer: "replica, not streaming", Lag: "1 GiB or more"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	recovering := pgMember{Name: "db-0", Label: contract.RolePrimary, Probe: pgProbe{Reach: reachDown, Starting: true}}
	if got := memberStatuses([]pgMember{recovering}, nil); got[0].Answer != "starting" {
		t.Errorf("a member in crash recovery answers %q", got[0].Answer)
	}
	for _, m := range memberStatuses([]pgMember{primary, near}, nil) {
		if m.Lag != "" {
			t.Errorf("%s has a lag with no primary: %q", m.Name, m.Lag)
		}
	}
}
