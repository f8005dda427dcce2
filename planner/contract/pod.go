package contract

// What the rendered pod templates give the instance manager in a
// member's pod: its environment, and where the ConfigMaps and the
// downward API's files are mounted.

// Environment variables of the members' containers.
const (
	// EnvPodName, EnvPodNamespace (from the downward API) and EnvCluster
	// name the pod, its namespace and its cluster.
	EnvPodName      = "POD_NAME"
	EnvPodNamespace = "POD_NAMESPACE"
	EnvCluster      = "CAIRN_CLUSTER"
	// EnvPGData is a PostgreSQL member's data directory.
	EnvPGData = "PGDATA"
	// EnvSuperuserPassword and EnvReplicationPassword carry the passwords
	// of SuperuserSecret and ReplicationSecret.
	EnvSuperuserPassword   = "POSTGRES_PASSWORD"
	EnvReplicationPassword = "CAIRN_REPLICATION_PASSWORD"
)

// Mount paths in the members' containers.
const (
	// ConfigDir holds the files of ConfigMap(cluster), one per key.
	ConfigDir = "/etc/cairn"
	// PostgresConfigDir holds the files of PostgresConfig(cluster).
	PostgresConfigDir = "/etc/postgresql-cairn"
	// PodInfoDir holds the downward API's files; PodInfoLabels is the
	// pod's labels (lines key="value"), LabelRole among them.
	PodInfoDir    = "/etc/podinfo"
	PodInfoLabels = PodInfoDir + "/labels"
)

// Container names of the members' pods: the database container, whose
// image tag is the members' version, and PostgreSQL's pg_upgrade init
// container of a major upgrade (its --from flag is the old major).
const (
	EtcdContainer          = "etcd"
	PGUpgradeInitContainer = "pg-upgrade"
)

// RuntimeContainer is the container of the runtime's Deployment
// (Runtime(cluster)), whose security context observe reads back.
const RuntimeContainer = "runtime"

// RuntimeTmpDir is the runtime container's only writable folder under its
// read-only root (an emptyDir of at most RuntimeTmpSizeLimit): Go's
// os.TempDir, which nothing of cairn's writes to today, kept bounded for
// the libraries that might.
const (
	RuntimeTmpDir       = "/tmp"
	RuntimeTmpSizeLimit = "64Mi"
)

// The runtime container's memory request and limit, and the soft limit
// of its Go heap (the GOMEMLIMIT it runs with). The request is above the
// runtime's peak RSS measured leading, keeping a cluster and taking a
// base backup into S3 (agentbed.ReadOnlyRoot logs it: 133 MiB for
// PostgreSQL, 99 MiB for etcd, under Go's default GC; docs/security.md).
// The heap's soft limit is the floor cairn's GC tuning keeps anyway
// (cmd/cairn/gc.go), and holds the most an upload keeps in memory (up
// to 256 MiB of parts, runtime/backup's uploadMemory; 64 MiB at the
// default 16 MiB parts) over the runtime's own ~70 MiB; the limit leaves
// 128 MiB above it for what is not heap.
const (
	RuntimeMemoryRequest = "192Mi"
	RuntimeMemoryLimit   = "512Mi"
	RuntimeGoMemoryLimit = "384MiB"
	EnvGoMemoryLimit     = "GOMEMLIMIT"
)
