package etcd

import "testing"

// A merged recovery is acted on once: the members restarted while quorum
// is lost, refused once it is back; either way its ID is then recorded
// and never acted on again.
func TestDecideRecovery(t *testing.T) {
	voter := func(healthy bool) lookedMember {
		return lookedMember{answered: healthy, noErrors: healthy, following: healthy}
	}
	lost := etcdLook{members: []lookedMember{voter(true), voter(false), voter(false)}}
	back := etcdLook{members: []lookedMember{voter(true), voter(true), voter(false)}}
	learnersDoNotCount := etcdLook{members: []lookedMember{voter(true), {learner: true, answered: true, noErrors: true, following: true}, voter(false)}}
	for _, c := range []struct {
		name string
		id   string
		prev *etcdStatus
		seen etcdLook
		want recovery
	}{
		{"no request", "", nil, lost, recoverNothing},
		{"quorum lost: restart", "r1", &etcdStatus{}, lost, recoverRestart},
		{"no status yet: restart", "r1", nil, lost, recoverRestart},
		{"quorum back: refuse", "r1", &etcdStatus{}, back, recoverRefuse},
		{"a learner is no vote", "r1", &etcdStatus{}, learnersDoNotCount, recoverRestart},
		{"done", "r1", &etcdStatus{RecoverDone: "r1"}, lost, recoverNothing},
		{"refused", "r1", &etcdStatus{RecoverRefused: "r1"}, lost, recoverNothing},
		{"a new request", "r2", &etcdStatus{RecoverDone: "r1"}, lost, recoverRestart},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := decideRecovery(c.id, c.prev, c.seen); got != c.want {
				t.Errorf("got %d, want %d", got, c.want)
			}
		})
	}
}
