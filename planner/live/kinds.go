package live

import "github.com/cairn-dev/cairn/planner/spec"

// KindRoles are the roles an observed member of a kind may have, and the
// one role exactly one healthy member holds (etcd's leader, PostgreSQL's
// primary).
type KindRoles struct {
	Roles   []Role
	Leading Role
}

// kinds are the kinds an observed state describes. A new kind adds one
// line here.
var kinds = map[string]KindRoles{
	spec.EtcdKind:     {Roles: []Role{RoleLeader, RoleFollower, RoleLearner, RoleRemoved, RoleUnknown}, Leading: RoleLeader},
	spec.PostgresKind: {Roles: []Role{RolePrimary, RoleReplica, RoleUnknown}, Leading: RolePrimary},
}

// RolesOf returns the roles of a kind; ok is false for a kind the observed
// state does not describe, which every check must treat as unhealthy.
func RolesOf(kind string) (KindRoles, bool) {
	k, ok := kinds[kind]
	return k, ok
}
