package live

import "github.com/cairn-dev/cairn/planner/spec"

// KindRoles are the roles an observed member of a kind may have, and the
// one role exactly one healthy member holds (etcd's leader, PostgreSQL's
// primary).
type KindRoles struct {
	Roles   []Role
	Leading Role
}

// Kinds are the kinds an observed state describes, with their roles;
// cmd/cairn builds them from its table of kinds.
type Kinds map[string]KindRoles

// builtin are the kinds cairn ships, described by the package's functions
// (RolesOf, Decode, ReadFile). A new kind adds one line here.
var builtin = Kinds{spec.EtcdKind: EtcdRoles(), spec.PostgresKind: PostgresRoles()}

// RolesOf returns the roles of a kind cairn ships; ok is false for a kind
// the observed state does not describe, which every check must treat as
// unhealthy.
func RolesOf(kind string) (KindRoles, bool) { return builtin.RolesOf(kind) }

// RolesOf returns the roles of a kind of k; ok is false for another kind.
func (k Kinds) RolesOf(kind string) (KindRoles, bool) {
	r, ok := k[kind]
	return r, ok
}
