package publish

import (
	"fmt"
	"strings"

	"github.com/cairn-dev/cairn/planner/live"
)

// EtcdWording is what the bodies of an etcd cluster's pull requests say
// of it: etcd's CHANGELOG of a minor, and a restart's effect on quorum.
func EtcdWording() Wording {
	return Wording{ReleaseNotes: etcdReleaseNotes, Restart: etcdRestart}
}

func etcdReleaseNotes(to string) (name, url string) {
	parts := strings.Split(to, ".")
	if len(parts) < 2 {
		return "", ""
	}
	minor := parts[0] + "." + parts[1]
	return "etcd " + minor + " CHANGELOG", "https://github.com/etcd-io/etcd/blob/main/CHANGELOG/CHANGELOG-" + minor + ".md"
}

func etcdRestart(member string, replicas int, role live.Role, disruptive bool) string {
	var s string
	switch {
	case replicas == 2:
		return fmt.Sprintf("one of 2 members restarts (%s): etcd has no quorum until it is back", md(member))
	case role == live.RoleLeader:
		s = fmt.Sprintf("one of %d members restarts (%s, the leader as planned): a new leader is elected (writes pause briefly); the others keep quorum", replicas, md(member))
	default:
		s = fmt.Sprintf("one of %d members restarts (%s%s); the others keep quorum", replicas, md(member), plannedRole(role))
	}
	if disruptive {
		// With quorum kept, what the planner marks disruptive is what
		// the member serves its clients from then on (TLS required).
		s += ", but its clients are interrupted: the summary says which ones are refused from then on"
	}
	return s
}
