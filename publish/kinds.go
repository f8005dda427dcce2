package publish

import "github.com/cairn-dev/cairn/planner/live"

// Wording is what a pull request's body says that depends on the
// cluster's kind; each kind's is in a file of its own (etcd.go,
// postgres.go), and cmd/cairn gives the Publisher every kind's from its
// table of kinds (Publisher.Wording). The zero Wording says the generic
// thing: no release notes, "one of N members restarts; its sessions are
// cut".
type Wording struct {
	// ReleaseNotes names the release notes of a version (plain numbers,
	// such as 14.5 or 3.5.21) the members move to; url "" for none.
	ReleaseNotes func(version string) (name, url string)
	// Restart says what the restart of member, one of replicas (at least
	// 2) members, does, given its role as planned ("" when not known) and
	// whether the planner marks the step disruptive (which it must not
	// contradict); "" says the generic thing.
	Restart func(member string, replicas int, role live.Role, disruptive bool) string
}
