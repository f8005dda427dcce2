package fleet

import (
	"fmt"
	"slices"

	"github.com/cairn-dev/cairn/planner/contract"
)

// Advance plays the next step of a cluster's change out in the live
// state, as the cluster shows it once the step is merged, synced and
// done:
//
//   - create: every member running and ready, bootstrap new; then the
//     bootstrap sealed (existing);
//   - scale-out: one member more, ready (an etcd one voting);
//   - storage growth: the volumes at the new size;
//   - minor upgrade: the member of the highest ordinal still on the old
//     version upgraded, the StatefulSet's partition lowered to it; for
//     PostgreSQL, once only the primary is left, the switchover to the
//     upgraded replica of the lowest ordinal first.
//
// It fails when the cluster runs as its spec says.
func (f *Fleet) Advance(name string) error {
	i := slices.IndexFunc(f.Clusters, func(c Cluster) bool { return c.Name == name })
	if i < 0 {
		return fmt.Errorf("advance %s: no such cluster", name)
	}
	return f.Clusters[i].advance()
}

func (c *Cluster) advance() error {
	s := c.running
	switch {
	case s == nil:
		c.running = c.runningAs(c.size, c.version, c.storage)
		c.running.bootstrap = "new"
	case s.bootstrap == "new":
		s.bootstrap = "existing"
	case len(s.members) < c.size:
		s.members = append(s.members, member{s.version, c.role(false)})
	case s.storage != c.storage:
		s.storage = c.storage
	case c.outdated() >= 0:
		k := c.outdated()
		if c.Kind == Postgres && s.members[k].role == contract.RolePrimary {
			j := slices.IndexFunc(s.members, func(m member) bool { return m.version == c.version })
			if j < 0 {
				return fmt.Errorf("advance %s: no upgraded replica to switch over to", c.Name)
			}
			s.members[k].role, s.members[j].role = "replica", "primary"
			return nil
		}
		s.members[k].version, s.version, s.partition = c.version, c.version, k
	default:
		return fmt.Errorf("advance %s: it runs as its spec says", c.Name)
	}
	return nil
}

// outdated is the highest ordinal of a member not on the spec's
// version; -1 when none is.
func (c *Cluster) outdated() int {
	ms := c.running.members
	for k := len(ms) - 1; k >= 0; k-- {
		if ms[k].version != c.version {
			return k
		}
	}
	return -1
}
