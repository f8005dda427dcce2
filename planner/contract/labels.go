package contract

// Label keys on every rendered object, and on the members' pods.
const (
	// LabelPrefix starts every label and annotation key of cairn's own;
	// specs may not set them.
	LabelPrefix = "cairn.dev/"

	// LabelName is the application: AppEtcd, AppPostgres or AppRuntime.
	LabelName = "app.kubernetes.io/name"
	// LabelInstance is the cluster's name.
	LabelInstance = "app.kubernetes.io/instance"
	// LabelComponent is the part of the cluster an object belongs to.
	LabelComponent = "app.kubernetes.io/component"
	// LabelManagedBy is ManagedByCairn on rendered objects and
	// ManagedByRuntime on what the runtime creates itself.
	LabelManagedBy = "app.kubernetes.io/managed-by"

	// LabelRole is the runtime's, on PostgreSQL pods: RolePrimary,
	// RoleReplica or RoleFenced. Rendered Services select on it; rendered
	// manifests never set it.
	LabelRole = "cairn.dev/role"
	// LabelNoPromote, set to "true" on a pod by a person, keeps the
	// runtime from promoting that member in a failover.
	LabelNoPromote = "cairn.dev/no-promote"

	// LabelLease marks the Leases of a sharded cairn reconcile (value:
	// shard, replica or trigger; reconcile/shard); the install's RBAC
	// and its replicas list only them.
	LabelLease = "cairn.dev/lease"
	// AnnotationShardMap, on a replica's Lease, is the shard map its
	// holder publishes with.
	AnnotationShardMap = "cairn.dev/shard-map"
)

// Values of LabelName.
const (
	AppEtcd     = "etcd"
	AppPostgres = "postgresql"
	AppRuntime  = "cairn-runtime"
)

// Values of LabelManagedBy, and the field manager the runtime writes with.
const (
	ManagedByCairn   = "cairn"
	ManagedByRuntime = "cairn-runtime"
	FieldManager     = ManagedByRuntime
)

// Values of LabelRole: what the runtime says a PostgreSQL pod is.
const (
	RolePrimary = "primary"
	RoleReplica = "replica"
	// RoleFenced: a former primary no Service sends writes to; its
	// instance manager stops it, then rewinds it to follow.
	RoleFenced = "fenced"
)

// Values of LabelRole on an etcd member's pod: the one member that leads,
// and the others. The etcd runtime keeps them, so that a drain of the
// leader's node waits (its own disruption budget) until leadership has
// moved to a member on another node.
const (
	RoleLeader   = "leader"
	RoleFollower = "follower"
)

// PostgresConfirmChannel is the PostgreSQL notification channel a
// primary's instance manager LISTENs on: the runtime NOTIFYs it when the
// member answers as a primary while labelled fenced or replica, and the
// instance manager confirms its label through the API server at once
// instead of at its next confirmation. A notification decides nothing:
// only the label the API server returns does.
const PostgresConfirmChannel = "cairn_confirm_role"

// Follows reports whether a pod with this role label must run as a
// replica (a fenced member follows too, once rewound).
func Follows(role string) bool { return role == RoleReplica || role == RoleFenced }

// AnnotationBackupRequest, on the status ConfigMap, asks the runtime for
// a backup now (cairn backup run); the value is the request's ID.
const AnnotationBackupRequest = "cairn.dev/backup-request"

// Selector are the labels that select a cluster's member pods (app is
// AppEtcd or AppPostgres); they never change after creation.
func Selector(app, cluster string) map[string]string {
	return map[string]string{LabelName: app, LabelInstance: cluster}
}
