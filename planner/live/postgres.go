package live

// PostgresRoles are a PostgreSQL member's roles; the primary leads.
func PostgresRoles() KindRoles {
	return KindRoles{Roles: []Role{RolePrimary, RoleReplica, RoleUnknown}, Leading: RolePrimary}
}
