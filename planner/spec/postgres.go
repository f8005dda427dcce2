package spec

import (
	"fmt"
	"maps"
	"regexp"
	"slices"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/spec/strictyaml"
)

// PostgreSQL's documents: their types, defaults, validation and schema
// rules.

// The apiVersion and kind of PostgreSQL's documents.
const (
	PostgresAPIVersion = "db.example.com/v1alpha1"
	PostgresKind       = "PostgresCluster"
)

// Postgres is the kind PostgresCluster, as the spec API serves it.
func Postgres() Kind {
	return Kind{Name: PostgresKind, APIVersion: PostgresAPIVersion, New: func() Document { return &PostgresCluster{} }}
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
	Switchover          *Switchover        `json:"switchover,omitempty" desc:"A one-shot request to make a member the primary (cairn switchover writes it): planned once as a reviewed switchover step, with no committed transaction lost. Served once its step is merged; it is not re-applied after a later failover."`
}

// PostgresTLS says where a cluster's TLS certificates come from.
type PostgresTLS struct {
	IssuerRef *IssuerRef `json:"issuerRef,omitempty" desc:"A cert-manager issuer that issues the members' server certificate and the superuser's client certificate instead of the runtime: cairn renders two cert-manager Certificates, whose Secrets (<name>-server-tls, <name>-superuser-tls) the members and the runtime read. The issuer must write its CA into each Secret's ca.crt (a CA or Vault issuer does). Needs metadata.namespace, since the server certificate names the cluster's Services in it. It takes effect when the cluster is created, or with the step that moves a cluster rendered before TLS to it; changing it on a cluster that serves TLS is refused."`
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

// MaxParameters bounds postgresql.parameters.
const MaxParameters = 200

var paramNameRE = regexp.MustCompile(`^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)?$`)

// Validate implements Document.
func (c *PostgresCluster) Validate(v *Validator) {
	v.Meta(c.Metadata)
	v.postgres(c.Spec)
	v.switchover(c.Metadata.Name, c.Spec)
}

func (v *Validator) postgres(s PostgresSpec) {
	v.Common(Common{Storage: s.Storage, StorageClass: s.StorageClass, Backup: s.Backup, MaintenanceWindow: s.MaintenanceWindow, RestoreFrom: s.RestoreFrom,
		TLSIssuer: s.TLS.issuerRef()}, s.Resources)
	if s.SynchronousStandbys < 0 {
		v.Fail("spec.synchronousStandbys", "must be 0 (asynchronous) or more, got %d", s.SynchronousStandbys)
	} else if s.SynchronousStandbys > 0 && s.SynchronousStandbys >= s.Instances {
		v.Fail("spec.synchronousStandbys", "%d synchronous standbys need at least %d instances, got %d; lower it or add instances",
			s.SynchronousStandbys, s.SynchronousStandbys+1, s.Instances)
	}
	if s.PostgreSQL == nil {
		return
	}
	if len(s.PostgreSQL.Parameters) > MaxParameters {
		v.Fail("spec.postgresql.parameters", "%d parameters; the limit is %d", len(s.PostgreSQL.Parameters), MaxParameters)
		return
	}
	major := s.Version.Parse().Major
	for _, name := range slices.Sorted(maps.Keys(s.PostgreSQL.Parameters)) {
		p := strictyaml.MapPath("spec.postgresql.parameters", name)
		if !paramNameRE.MatchString(name) {
			v.Fail(p, "%s is not a PostgreSQL parameter name (lowercase letters, digits and _, e.g. max_connections)", strictyaml.Quote(name))
		} else if why := checkParameter(name, string(s.PostgreSQL.Parameters[name]), major); why != "" {
			v.Fail(p, "%s", why)
		}
	}
}

// SetDefaults implements Document.
func (c *PostgresCluster) SetDefaults() {
	defaultBackup(c.Spec.Backup)
	defaultWindow(c.Spec.MaintenanceWindow)
}

// schemaRequires implements kindSchema.
func (*PostgresCluster) schemaRequires(string) bool { return false }

// refineSchema implements kindSchema.
func (*PostgresCluster) refineSchema(path string, n *schemaNode) {
	switch path {
	case "spec.instances":
		n.Minimum, n.Maximum = num(1), num(MaxPostgresInstances)
	case "spec.postgresql.parameters":
		*n = *parametersNode(n.Description)
	}
}

// refineSchemaObject implements kindSchema.
func (*PostgresCluster) refineSchemaObject(path string, n *schemaNode) {
	if path == "spec" {
		n.AllOf = append([]*schemaNode{{
			If:   &schemaNode{Required: []string{"synchronousStandbys"}, Properties: map[string]*schemaNode{"synchronousStandbys": {Type: "integer", Minimum: num(1)}}},
			Then: &schemaNode{AllOf: synchronousStandbysRules()},
		}}, parameterVersionRules()...)
	}
}

// synchronousStandbysRules say that synchronousStandbys is below
// instances, one instances value at a time (JSON Schema cannot compare
// two fields; instances has only MaxPostgresInstances valid values).
func synchronousStandbysRules() []*schemaNode {
	var out []*schemaNode
	for n := 1; n <= MaxPostgresInstances; n++ {
		out = append(out, &schemaNode{
			If:   &schemaNode{Required: []string{"instances"}, Properties: map[string]*schemaNode{"instances": {Const: n}}},
			Then: &schemaNode{Properties: map[string]*schemaNode{"synchronousStandbys": {Maximum: num(float64(n - 1)), ErrorMessage: fmt.Sprintf("%d instances allow at most %d synchronous standbys", n, n-1)}}},
		})
	}
	return out
}
