package spec

import (
	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/spec/strictyaml"
)

// The apiVersions and kinds cairn serves.
const (
	PostgresAPIVersion = "db.example.com/v1alpha1"
	PostgresKind       = "PostgresCluster"
	EtcdAPIVersion     = "etcd.database.coreos.com/v1beta2"
	EtcdKind           = "EtcdCluster"
)

// Cluster is one decoded, defaulted and validated cluster document: a
// *PostgresCluster or an *EtcdCluster.
type Cluster interface {
	// Ref names the cluster.
	Ref() Ref
	// Source says where the document was read from.
	Source() *Source
	// Common returns the settings both kinds share.
	Common() Common
}

// Ref identifies a cluster. Names are unique within one GitOps repo.
type Ref struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Name       string `json:"name"`
	Namespace  string `json:"namespace,omitempty"`
}

func (r Ref) String() string { return r.Kind + "/" + r.Name }

// Common holds the settings both kinds share, for code that treats them
// alike.
type Common struct {
	// Labels are the metadata's labels.
	Labels map[string]string
	// Members is the number of members the spec asks for (etcd's size,
	// PostgreSQL's instances).
	Members           int
	Version           string
	Storage           Quantity
	StorageClass      string
	Resources         *Resources
	Backup            *Backup
	MaintenanceWindow *MaintenanceWindow
	RestoreFrom       *RestoreFrom
	// TLSIssuer is spec.tls.issuerRef as written; nil when the runtime
	// issues the certificates.
	TLSIssuer *IssuerRef
}

// ObjectMeta is the part of Kubernetes object metadata a cluster spec uses.
type ObjectMeta struct {
	Name      string            `json:"name" schema:"required" desc:"Cluster name: a DNS-1123 label of at most 52 characters. It names the StatefulSet, Services and the rendered/<name>/ folder, and is unique in the repo."`
	Namespace string            `json:"namespace,omitempty" desc:"Namespace to deploy into. Empty leaves it to Argo CD or Flux (the Application's or Kustomization's target namespace)."`
	Labels    map[string]string `json:"labels,omitempty" desc:"Labels copied to every rendered object; policies select clusters by them (for example environment: production)."`
}

// PostgresCluster is a PostgreSQL primary with streaming replicas.
type PostgresCluster struct {
	APIVersion string       `json:"apiVersion" schema:"required,const=db.example.com/v1alpha1" desc:"Always db.example.com/v1alpha1."`
	Kind       string       `json:"kind" schema:"required,const=PostgresCluster" desc:"Always PostgresCluster."`
	Metadata   ObjectMeta   `json:"metadata" schema:"required" desc:"Name, namespace and labels."`
	Spec       PostgresSpec `json:"spec" schema:"required" desc:"The cluster wanted."`

	src Source
}

// PostgresSpec is the wanted state of a PostgreSQL cluster.
type PostgresSpec struct {
	Version             PostgresVersion    `json:"version" schema:"required" desc:"PostgreSQL major.minor version, quoted, for example \"14.5\". A minor change is a rolling upgrade (replicas first, switchover, old primary last); a major change is an offline pg_upgrade gated on a fresh backup."`
	Instances           int                `json:"instances" schema:"required" desc:"Number of members: one primary and instances-1 streaming replicas. The planner accepts 1..16 and changes it one member at a time."`
	Storage             Quantity           `json:"storage" schema:"required" desc:"Volume size of each member, a Kubernetes quantity such as 100Gi. It can grow (online PVC expansion) but never shrink."`
	StorageClass        string             `json:"storageClass,omitempty" desc:"StorageClass of the members' volumes; empty uses the cluster default. Growing storage needs a class with allowVolumeExpansion."`
	Resources           *Resources         `json:"resources,omitempty" desc:"CPU and memory requests and limits of each member's postgres container."`
	PostgreSQL          *PostgreSQLConfig  `json:"postgresql,omitempty" desc:"PostgreSQL server settings."`
	SynchronousStandbys int                `json:"synchronousStandbys,omitempty" schema:"minimum=0" desc:"Number of synchronous standbys (synchronous_standby_names = FIRST n of the other members, set by the runtime). 0, the default, is asynchronous replication. Must be less than instances. With n >= 1 a failover loses no acknowledged write."`
	Backup              *Backup            `json:"backup,omitempty" desc:"Scheduled base backups, taken by the cairn runtime. A major upgrade needs it."`
	RestoreFrom         *RestoreFrom       `json:"restoreFrom,omitempty" desc:"Create the cluster from a base backup instead of empty (its first member restores it; the others clone from it). Read only by the create step."`
	MaintenanceWindow   *MaintenanceWindow `json:"maintenanceWindow,omitempty" desc:"When disruptive steps may start. Without it they may start any time after review."`
	TLS                 *PostgresTLS       `json:"tls,omitempty" desc:"Where the cluster's TLS certificates come from. Every cluster requires TLS; without this, the cairn runtime keeps a CA of the cluster's own and issues and renews the certificates itself."`
}

// PostgresTLS says where a cluster's TLS certificates come from.
type PostgresTLS struct {
	IssuerRef *IssuerRef `json:"issuerRef,omitempty" desc:"A cert-manager issuer that issues the members' server certificate and the superuser's client certificate instead of the runtime: cairn renders two cert-manager Certificates, whose Secrets (<name>-server-tls, <name>-superuser-tls) the members and the runtime read. The issuer must write its CA into each Secret's ca.crt (a CA or Vault issuer does). Needs metadata.namespace, since the server certificate names the cluster's Services in it. It takes effect when the cluster is created, or with the step that moves a cluster rendered before TLS to it; changing it on a cluster that serves TLS is refused."`
}

// IssuerRef names a cert-manager issuer.
type IssuerRef struct {
	Name  string `json:"name" schema:"required" desc:"The issuer's name."`
	Kind  string `json:"kind,omitempty" desc:"Issuer (in the cluster's namespace; the default) or ClusterIssuer."`
	Group string `json:"group,omitempty" desc:"The issuer's API group; default cert-manager.io."`
}

// Contract is the issuer with its defaults (kind Issuer, group
// cert-manager.io), as the renderer writes it and the rendered config
// records it; nil for nil. Both kinds default it here, so an issuer
// written the same way is the same issuer for either.
func (r *IssuerRef) Contract() *contract.IssuerRef {
	if r == nil {
		return nil
	}
	out := &contract.IssuerRef{Name: r.Name, Kind: r.Kind, Group: r.Group}
	if out.Kind == "" {
		out.Kind = contract.IssuerKind
	}
	if out.Group == "" {
		out.Group = contract.CertManagerGroup
	}
	return out
}

// Issuer is the issuer spec.tls names, with its defaults; nil when the
// runtime issues the certificates.
func (s PostgresSpec) Issuer() *contract.IssuerRef { return s.TLS.issuerRef().Contract() }

func (t *PostgresTLS) issuerRef() *IssuerRef {
	if t == nil {
		return nil
	}
	return t.IssuerRef
}

// PostgreSQLConfig holds postgresql.conf settings.
type PostgreSQLConfig struct {
	Parameters map[string]ParamValue `json:"parameters,omitempty" desc:"postgresql.conf parameters, name: value. Values may be written unquoted (max_connections: 200) and must have the parameter's type (boolean, integer or number in range with an optional unit, enum value). Parameters that run a program, load code, include a file or name a path, and settings cairn manages itself (ports, replication, archiving, synchronous_standby_names, TLS), are refused; see PostgreSQL parameters."`
}

// EtcdCluster is an etcd cluster.
type EtcdCluster struct {
	APIVersion string     `json:"apiVersion" schema:"required,const=etcd.database.coreos.com/v1beta2" desc:"Always etcd.database.coreos.com/v1beta2."`
	Kind       string     `json:"kind" schema:"required,const=EtcdCluster" desc:"Always EtcdCluster."`
	Metadata   ObjectMeta `json:"metadata" schema:"required" desc:"Name, namespace and labels."`
	Spec       EtcdSpec   `json:"spec" schema:"required" desc:"The cluster wanted."`

	src Source
}

// EtcdSpec is the wanted state of an etcd cluster.
type EtcdSpec struct {
	Size              int                `json:"size" schema:"required" desc:"Number of voting members. The planner accepts odd sizes 1..7 (even sizes only as a step in between) and changes membership one member at a time, adding each new member as a learner from etcd 3.4 on."`
	Version           EtcdVersion        `json:"version" schema:"required" desc:"etcd version, quoted, for example \"3.5.21\". Upgrades move one minor version at a time (3.2 -> 3.3 -> ... -> 3.7) and one member at a time. From 3.6 on, one minor down (3.7 -> 3.6, 3.6 -> 3.5) is planned through etcd's downgrade protocol; older downgrades across minors are refused."`
	Storage           Quantity           `json:"storage,omitempty" desc:"Volume size of each member, a Kubernetes quantity. Default 8Gi. It can grow but never shrink."`
	StorageClass      string             `json:"storageClass,omitempty" desc:"StorageClass of the members' volumes; empty uses the cluster default."`
	Resources         *Resources         `json:"resources,omitempty" desc:"CPU and memory requests and limits of each member's etcd container."`
	Backup            *Backup            `json:"backup,omitempty" desc:"Scheduled snapshots, taken by the cairn runtime."`
	RestoreFrom       *RestoreFrom       `json:"restoreFrom,omitempty" desc:"Create the cluster from a snapshot instead of empty (every member of the create step restores it). Read only by the create step."`
	MaintenanceWindow *MaintenanceWindow `json:"maintenanceWindow,omitempty" desc:"When disruptive steps may start. Without it they may start any time after review."`
	Compaction        *EtcdCompaction    `json:"compaction,omitempty" desc:"How the cairn runtime compacts etcd's history (revisions older than the retention are dropped; their space is reused, and defragmentation gives it back). Default: periodic, keeping 1h. etcd itself never compacts unless told to, so without compaction every revision of every key is kept and the database grows until it reaches spaceQuota and etcd stops taking writes; one hour keeps enough history for a watch that reconnects within the hour to resume without a full re-list. A change is a step of its own that changes only the runtime's config: no member restarts."`
	SpaceQuota        Quantity           `json:"spaceQuota,omitempty" desc:"etcd's space quota (--quota-backend-bytes), a Kubernetes quantity: once a member's database file reaches it, etcd raises the NOSPACE alarm and takes no writes until the runtime has compacted, defragmented and disarmed it. Default 2Gi, etcd's own default. 1Mi to 10Gi (etcd suggests at most 8Gi and warns above it; beyond 10Gi, the memory map etcd opens its database with, growing the file blocks reads and writes); when written, at most half of storage, since defragmentation writes a copy of the database beside it. A change is a rolling restart, one member at a time."`
	TLS               *EtcdTLS           `json:"tls,omitempty" desc:"Where the cluster's TLS certificates come from. Every etcd cluster cairn creates requires TLS, for clients and for peers; without this, the cairn runtime keeps a CA of the cluster's own and issues and renews the certificates itself."`
}

// EtcdTLS says where an etcd cluster's TLS certificates come from.
type EtcdTLS struct {
	IssuerRef *IssuerRef `json:"issuerRef,omitempty" desc:"A cert-manager issuer that issues the members' peer certificate (server and client authentication, common name *.<name>, which the members admit as peers) and root's client certificate instead of the runtime: cairn renders two cert-manager Certificates, whose Secrets (<name>-server-tls, <name>-superuser-tls) the members mount and the runtime reads. The issuer must write its CA into each Secret's ca.crt (a CA or Vault issuer does). Needs metadata.namespace, since the peer certificate names the cluster's Services in it. It takes effect when the cluster is created, or, for a cluster rendered before etcd TLS, with its first restart into TLS; changing it on a cluster that serves TLS is refused."`
}

// Issuer is the issuer spec.tls names, with its defaults; nil when the
// runtime issues the certificates.
func (s EtcdSpec) Issuer() *contract.IssuerRef { return s.TLS.issuerRef().Contract() }

func (t *EtcdTLS) issuerRef() *IssuerRef {
	if t == nil {
		return nil
	}
	return t.IssuerRef
}

// EtcdCompaction is how etcd's history is compacted.
type EtcdCompaction struct {
	Mode      string              `json:"mode" schema:"required" desc:"periodic keeps the revisions of the last retention (a duration); revision keeps the last retention revisions (a number)."`
	Retention CompactionRetention `json:"retention" schema:"required" desc:"periodic: a duration of at least 1m, such as 1h or 1d; the runtime records the store's revision every tenth of it and compacts to the newest one recorded at least a retention ago, so a retention of history, and at most a tenth more, is kept. revision: a number of revisions, 1 to 1000000000, such as 10000; the runtime compacts to the newest revision minus it once the store has moved on by a tenth of it."`
}

// Resources are a container's compute requests and limits.
type Resources struct {
	Requests *ResourceList `json:"requests,omitempty" desc:"What the scheduler reserves."`
	Limits   *ResourceList `json:"limits,omitempty" desc:"The most the container may use; each limit must be at least its request."`
}

// ResourceList is CPU and memory.
type ResourceList struct {
	CPU    Quantity `json:"cpu,omitempty" desc:"CPU, a Kubernetes quantity such as 500m or 2."`
	Memory Quantity `json:"memory,omitempty" desc:"Memory, a Kubernetes quantity such as 4Gi."`
}

// Backup is a backup policy.
type Backup struct {
	Schedule        Schedule   `json:"schedule" schema:"required" desc:"When to back up: a cron expression with 5 fields (minute hour day-of-month month day-of-week, for example \"0 2 * * *\"), 6 fields with seconds first, or a descriptor such as @daily. Evaluated in UTC unless timeZone is set."`
	TimeZone        string     `json:"timeZone,omitempty" desc:"IANA time zone of schedule, for example Europe/Berlin. Default UTC."`
	StorageLocation Location   `json:"storageLocation" schema:"required" desc:"Where backups go: s3://bucket/prefix (any S3-compatible endpoint; endpoint, region and credentials come from the runtime's environment or Secret) or file:///absolute/path."`
	Retention       *Retention `json:"retention,omitempty" desc:"Which old backups to delete once a newer one is complete. Without it, nothing is deleted."`
}

// RestoreFrom names a backup a new cluster starts from.
type RestoreFrom struct {
	StorageLocation Location `json:"storageLocation" schema:"required" desc:"Where the backup is: the backup.storageLocation of the cluster it was taken of (s3://bucket/prefix or file:///path)."`
	Cluster         string   `json:"cluster,omitempty" desc:"Name of the cluster the backup was taken of. Default: this cluster's name."`
	Backup          string   `json:"backup,omitempty" desc:"ID of the backup (cairn backup list shows them), or latest, the default: the newest complete one (with targetTime, the newest that finished before it)."`
	TargetTime      string   `json:"targetTime,omitempty" desc:"PostgreSQL only: replay the archived WAL past the base backup up to this moment, an RFC 3339 time such as 2026-11-30T14:05:00Z (the new cluster holds exactly the transactions committed by then), or latest for all of it. Without it the cluster holds what the backup held when it ended. The restore refuses a target the archive does not reach, or a gap in the archive before it, saying where."`
}

// Retention bounds how many backups are kept and for how long.
type Retention struct {
	Count  int      `json:"count,omitempty" schema:"minimum=1" desc:"Keep at most this many complete backups."`
	MaxAge Duration `json:"maxAge,omitempty" desc:"Delete complete backups older than this, for example 30d or 720h. The newest complete backup is always kept."`
}

// MaintenanceWindow says when disruptive steps may start.
type MaintenanceWindow struct {
	Schedule Schedule `json:"schedule" schema:"required" desc:"When each window opens, a cron expression (see backup.schedule), for example \"0 22 * * 1-5\"."`
	Duration Duration `json:"duration" schema:"required" desc:"How long each window stays open, for example 2h; at most 7d."`
	TimeZone string   `json:"timeZone,omitempty" desc:"IANA time zone of schedule. Default UTC."`
}

// Source says where a document was read from.
type Source struct {
	File string
	// Doc is the document's index within its file, from 0.
	Doc int
	pos strictyaml.Positions
}

// Position returns the line and column where path (or its nearest written
// ancestor) was written; 0, 0 when unknown.
func (s *Source) Position(path string) (line, col int) {
	p := s.pos.Lookup(path)
	return p.Line, p.Col
}

// Has reports whether path was written in the document.
func (s *Source) Has(path string) bool {
	_, ok := s.pos[path]
	return ok
}

// Ref implements Cluster.
func (c *PostgresCluster) Ref() Ref {
	return Ref{APIVersion: PostgresAPIVersion, Kind: PostgresKind, Name: c.Metadata.Name, Namespace: c.Metadata.Namespace}
}

// Source implements Cluster.
func (c *PostgresCluster) Source() *Source { return &c.src }

// Common implements Cluster.
func (c *PostgresCluster) Common() Common {
	s := c.Spec
	return Common{Labels: c.Metadata.Labels, Members: s.Instances, Version: string(s.Version), Storage: s.Storage, StorageClass: s.StorageClass, Resources: s.Resources, Backup: s.Backup, MaintenanceWindow: s.MaintenanceWindow, RestoreFrom: s.RestoreFrom,
		TLSIssuer: s.TLS.issuerRef()}
}

// Ref implements Cluster.
func (c *EtcdCluster) Ref() Ref {
	return Ref{APIVersion: EtcdAPIVersion, Kind: EtcdKind, Name: c.Metadata.Name, Namespace: c.Metadata.Namespace}
}

// Source implements Cluster.
func (c *EtcdCluster) Source() *Source { return &c.src }

// Common implements Cluster.
func (c *EtcdCluster) Common() Common {
	s := c.Spec
	return Common{Labels: c.Metadata.Labels, Members: s.Size, Version: string(s.Version), Storage: s.Storage, StorageClass: s.StorageClass, Resources: s.Resources, Backup: s.Backup, MaintenanceWindow: s.MaintenanceWindow, RestoreFrom: s.RestoreFrom,
		TLSIssuer: s.TLS.issuerRef()}
}
