package spec

import (
	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/spec/strictyaml"
)

// Cluster is one decoded, defaulted and validated cluster document: a
// document of one of the kinds served (kinds.go).
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
	// TrustForeignBucket is the reviewed opt-in to restore from a bucket
	// that is not the cluster's own (ForeignBucket).
	TrustForeignBucket bool `json:"trustForeignBucket,omitempty" desc:"Set to true to restore from a bucket that is not the cluster's own (not the bucket of spec.backup.storageLocation, for file:// not its folder; any bucket when the cluster has no backup): the new cluster's data then comes from whoever can write there. Without it such a restore is refused; the create step's pull request shows it."`
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
