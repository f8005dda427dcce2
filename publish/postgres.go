package publish

import (
	"fmt"
	"strings"

	"github.com/cairn-dev/cairn/planner/live"
)

// PostgresWording is what the bodies of a PostgreSQL cluster's pull
// requests say of it: PostgreSQL's release page of a version, and a
// restart's effect on writes.
func PostgresWording() Wording {
	return Wording{ReleaseNotes: postgresReleaseNotes, Restart: postgresRestart}
}

func postgresReleaseNotes(to string) (name, url string) {
	if !strings.Contains(to, ".") {
		to += ".0" // a major's first release, 14.0
	}
	return "PostgreSQL " + to, "https://www.postgresql.org/docs/release/" + to + "/"
}

func postgresRestart(member string, _ int, role live.Role, disruptive bool) string {
	switch {
	case role == live.RolePrimary:
		return fmt.Sprintf("the primary (%s, as planned) restarts: writes fail until it is back", md(member))
	case role == live.RoleReplica && disruptive:
		// The planner marks a replica's restart disruptive when the
		// synchronous standbys wanted need it.
		return fmt.Sprintf("one replica (%s, as planned) restarts: its sessions are cut, and commits wait until it is back (the synchronous standbys wanted need it)", md(member))
	case role == live.RoleReplica:
		return fmt.Sprintf("one replica (%s, as planned) restarts: its sessions are cut; the primary keeps taking writes", md(member))
	}
	return ""
}
