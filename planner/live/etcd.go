package live

// EtcdRoles are an etcd member's roles; the leader leads.
func EtcdRoles() KindRoles {
	return KindRoles{Roles: []Role{RoleLeader, RoleFollower, RoleLearner, RoleRemoved, RoleUnknown}, Leading: RoleLeader}
}
