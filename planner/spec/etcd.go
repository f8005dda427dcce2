package spec

import (
	"fmt"

	"github.com/cairn-dev/cairn/planner/contract"
)

// etcd's documents: their types, defaults, validation and schema rules.

// The apiVersion and kind of etcd's documents.
const (
	EtcdAPIVersion = "etcd.database.coreos.com/v1beta2"
	EtcdKind       = "EtcdCluster"
)

// Etcd is the kind EtcdCluster, as the spec API serves it.
func Etcd() Kind {
	return Kind{Name: EtcdKind, APIVersion: EtcdAPIVersion, New: func() Document { return &EtcdCluster{} }}
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

// Compaction is the compaction policy the spec asks for, with its
// defaults (EtcdSpec.CompactionPolicy).
func (c *EtcdCluster) Compaction() (mode, retention string) {
	p := c.Spec.CompactionPolicy()
	return p.Mode, string(p.Retention)
}

// Validate implements Document.
func (c *EtcdCluster) Validate(v *Validator) {
	v.Meta(c.Metadata)
	v.Common(c.Common(), c.Spec.Resources)
	v.etcdMaintenance(c.Spec)
	if r := c.Spec.RestoreFrom; r != nil && (r.Backup == "" || r.Backup == contract.RestoreLatest) {
		// Every member restores on its own: "latest" could name a
		// different backup for each.
		v.Fail("spec.restoreFrom.backup", "an etcd cluster needs the backup's ID (cairn backup list shows them), so that every member restores the same snapshot")
	}
	if r := c.Spec.RestoreFrom; r != nil && r.TargetTime != "" {
		v.Fail("spec.restoreFrom.targetTime", "an etcd snapshot restores as it was taken: etcd has no log archive to replay to a point in time")
	}
}

// DefaultEtcdStorage is spec.storage when left out.
const DefaultEtcdStorage Quantity = "8Gi"

// SetDefaults implements Document.
func (c *EtcdCluster) SetDefaults() {
	if c.Spec.Storage == "" {
		c.Spec.Storage = DefaultEtcdStorage
	}
	defaultBackup(c.Spec.Backup)
	defaultWindow(c.Spec.MaintenanceWindow)
}

// schemaRequires implements kindSchema: every etcd member restores on its
// own, so "latest" could name a different backup for each (Validate).
func (*EtcdCluster) schemaRequires(path string) bool { return path == "spec.restoreFrom.backup" }

// refineSchema implements kindSchema.
func (*EtcdCluster) refineSchema(path string, n *schemaNode) {
	switch path {
	case "spec.size":
		n.Enum = anys(EtcdSizes())
		n.ErrorMessage = fmt.Sprintf("an etcd cluster has an odd number of members, 1 to %d", MaxEtcdSize)
	case "spec.compaction.mode":
		n.Enum = anys([]string{contract.EtcdCompactionPeriodic, contract.EtcdCompactionRevision})
	case "spec.restoreFrom.backup":
		n.Pattern = backupIDRE.String() // a backup's ID, never latest
		n.PatternErrorMessage = "an etcd cluster needs the backup's ID (cairn backup list shows them), so that every member restores the same snapshot"
	}
}

// refineSchemaObject implements kindSchema.
func (*EtcdCluster) refineSchemaObject(path string, n *schemaNode) {
	if path == "spec.compaction" {
		n.AllOf = compactionRules()
	}
}

// compactionRules say what the retention is in each compaction mode: a
// duration (periodic), a number of revisions (revision).
func compactionRules() []*schemaNode {
	mode := func(m string) *schemaNode {
		return &schemaNode{Required: []string{"mode"}, Properties: map[string]*schemaNode{"mode": {Const: m}}}
	}
	periodic := durationNode()
	periodic.PatternErrorMessage = "in periodic mode, a duration such as 1h or 1d"
	revisions := &schemaNode{AnyOf: []*schemaNode{
		{Type: "integer", Minimum: num(1), Maximum: num(MaxEtcdRevisionRetention)},
		{Type: "string", Pattern: revisionsRE.String()},
	}, ErrorMessage: "in revision mode, a number of revisions such as 10000"}
	return []*schemaNode{
		{If: mode(contract.EtcdCompactionPeriodic), Then: &schemaNode{Properties: map[string]*schemaNode{"retention": periodic}}},
		{If: mode(contract.EtcdCompactionRevision), Then: &schemaNode{Properties: map[string]*schemaNode{"retention": revisions}}},
	}
}
