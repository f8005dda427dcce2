package contract

// Names of a cluster's objects, from the cluster's name.

// ConfigMap is <cluster>-cairn: what Git tells the instance managers and
// the runtime (the Key* keys). Pods mount it.
func ConfigMap(cluster string) string { return cluster + "-cairn" }

// StatusConfigMap is <cluster>-cairn-status: what the runtime reports
// (the StatusKey* keys). The runtime creates it; it is never rendered.
func StatusConfigMap(cluster string) string { return cluster + "-cairn-status" }

// Runtime names the runtime's ServiceAccount, Role, RoleBinding,
// Deployment and its leader-election Lease.
func Runtime(cluster string) string { return cluster + "-runtime" }

// MemberAccount is the PostgreSQL members' ServiceAccount, with which a
// primary confirms its role label through the API server.
func MemberAccount(cluster string) string { return cluster + "-member" }

// SuperuserSecret and ReplicationSecret hold PostgreSQL's passwords under
// SecretKeyPassword; BackupSecret the optional backup store credentials.
func SuperuserSecret(cluster string) string   { return cluster + "-superuser" }
func ReplicationSecret(cluster string) string { return cluster + "-replication" }
func BackupSecret(cluster string) string      { return cluster + "-backup" }

// SecretKeyPassword is the key of a password in a Secret.
const SecretKeyPassword = "password"

// PostgresConfig is the ConfigMap of postgresql.conf and pg_hba.conf.
func PostgresConfig(cluster string) string { return cluster + "-config" }

// Files of PostgresConfig.
const (
	PostgresConfFile = "postgresql.conf"
	PostgresHBAFile  = "pg_hba.conf"
)

// PostgreSQL Services: PrimaryService sends to the primary (-rw),
// ReplicaService to replicas (-ro), ReadService to every member (-r),
// HeadlessService names each member (-hl).
func PrimaryService(cluster string) string  { return cluster + "-rw" }
func ReplicaService(cluster string) string  { return cluster + "-ro" }
func ReadService(cluster string) string     { return cluster + "-r" }
func HeadlessService(cluster string) string { return cluster + "-hl" }

// etcd Services: EtcdPeerService is headless and names each member (the
// cluster's own name), EtcdClientService balances clients over members.
func EtcdPeerService(cluster string) string   { return cluster }
func EtcdClientService(cluster string) string { return cluster + "-client" }

// Default ports.
const (
	EtcdClientPort = 2379
	EtcdPeerPort   = 2380
	PostgresPort   = 5432
)

// StatefulSet names the cluster's StatefulSet of members (the cluster's
// own name); the runtime reads it and records its Events on it.
func StatefulSet(cluster string) string { return cluster }

// PostgreSQL's own names the instance manager creates and the runtime
// connects with: PostgresSuperuser (password in SuperuserSecret) to
// PostgresDatabase, PostgresReplicationUser (REPLICATION, password in
// ReplicationSecret) for streaming and base backups. PostgresContainer is
// the members' container whose state the runtime reads.
const (
	PostgresSuperuser       = "postgres"
	PostgresDatabase        = "postgres"
	PostgresReplicationUser = "replicator"
	PostgresContainer       = "postgres"
)

// PostgresRequireAuth is the require_auth of every connection cairn makes
// to a PostgreSQL server (pgx's, as libpq's): SCRAM, or no exchange at
// all (a client certificate, peer on the local socket). A server, or a
// pod posing as a member, that asks for the password in cleartext or as
// MD5 gets nothing: the connection fails before a credential is sent.
// cairn renders no pg_hba line that would ask for either.
const PostgresRequireAuth = "scram-sha-256,none"
