package spec

import (
	"fmt"
	"regexp"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/spec/strictyaml"
)

// Switchover is a one-shot request to hand a PostgreSQL cluster's primary
// role to one member: the planner plans it once, as a PostgresSwitchover
// step, and the step it merged records the request's ID as served in the
// rendered config. It is not a standing wish: after a later failover the
// planner does not move the primary back for it. A new switchover needs a
// new ID (cairn switchover writes one).
type Switchover struct {
	To string `json:"to" schema:"required" desc:"The member to make the primary, by name (<name>-<ordinal>, below spec.instances)."`
	ID string `json:"id" schema:"required" desc:"Names this request: lowercase letters, digits and -, up to 40 characters, starting and ending with a letter or digit. The planner plans a request once; once its step is merged the request is served, and it changes nothing more while it stays in the spec. To switch over again, write a new id."`
}

// MaxSwitchoverID bounds spec.switchover.id: it goes into a step's ID and
// a branch name.
const MaxSwitchoverID = 40

var switchoverIDRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,38}[a-z0-9])?$`)

// CheckSwitchoverID reports why id cannot name a switchover request, or nil.
func CheckSwitchoverID(id string) error {
	if !switchoverIDRE.MatchString(id) {
		return fmt.Errorf("must be 1 to %d lowercase letters, digits and -, starting and ending with a letter or digit, got %s", MaxSwitchoverID, strictyaml.Quote(id))
	}
	return nil
}

// switchover checks spec.switchover of the PostgreSQL cluster name: its
// target is a member the spec keeps.
func (v *Validator) switchover(name string, s PostgresSpec) {
	r := s.Switchover
	if r == nil {
		return
	}
	if err := CheckSwitchoverID(r.ID); err != nil {
		v.Fail("spec.switchover.id", "%v", err)
	}
	ord, ok := contract.MemberOrdinal(name, r.To)
	switch {
	case !ok:
		v.Fail("spec.switchover.to", "%s is not a member of %s: members are named %s, %s, ...", strictyaml.Quote(r.To), name,
			contract.MemberName(name, 0), contract.MemberName(name, 1))
	case ord >= s.Instances:
		v.Fail("spec.switchover.to", "%s is beyond spec.instances (%d): the members are %s to %s", r.To, s.Instances,
			contract.MemberName(name, 0), contract.MemberName(name, max(s.Instances-1, 0)))
	}
}
