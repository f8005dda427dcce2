package renderer

import (
	"strconv"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/planner/spec"
)

// Kind renders the objects of one database kind. It is pure: the same
// input gives the same objects. The Renderer does what every kind
// shares: the base and one overlay per step, each patching the one
// before, the entry point, PLAN.md and the kustomize builds.
type Kind interface {
	// Kind is the spec kind it renders (spec.EtcdKind, ...).
	Kind() string
	// Objects are the cluster's objects, each in its own file, as they are
	// at in.Settings.
	Objects(c spec.Cluster, in Input) ([]Object, error)
	// Created adjusts the settings a create step brings up (s comes from
	// the step's parameters) with what only the kind's spec says.
	Created(c spec.Cluster, s Settings) Settings
}

// Input is what a Kind renders from.
type Input struct {
	Settings Settings
	Options  Options
	// Token is etcd's initial cluster token of the plan's create step,
	// InitialMembers the members it bootstraps; zero values without one.
	Token          string
	InitialMembers int
}

// Object is one rendered Kubernetes object and the file it goes in.
type Object struct {
	File string
	Obj  any
}

// Etcd renders EtcdCluster (etcd.go).
func Etcd() Kind { return etcdKind{} }

// Postgres renders PostgresCluster (postgres.go).
func Postgres() Kind { return postgresKind{} }

type etcdKind struct{}

func (etcdKind) Kind() string { return spec.EtcdKind }

func (etcdKind) Objects(c spec.Cluster, in Input) ([]Object, error) {
	return etcdObjects(c.(*spec.EtcdCluster), in.Settings, in.Options, in.Token, in.InitialMembers)
}

func (etcdKind) Created(c spec.Cluster, s Settings) Settings {
	e := c.(*spec.EtcdCluster)
	p := e.Spec.CompactionPolicy()
	s.Compaction = &plan.CompactionSettings{Mode: p.Mode, Retention: string(p.Retention)}
	s.SpaceQuota = strconv.FormatInt(e.Spec.QuotaBytes(), 10)
	// A new cluster serves and requires TLS, clients and peers, from its
	// first start, with the certificates of the spec's issuer if it names
	// one.
	s.TLS, s.TLSIssuer = contract.TLSRequire, e.Spec.Issuer()
	return s
}

type postgresKind struct{}

func (postgresKind) Kind() string { return spec.PostgresKind }

func (postgresKind) Objects(c spec.Cluster, in Input) ([]Object, error) {
	return postgresObjects(c.(*spec.PostgresCluster), in.Settings, in.Options, in.InitialMembers)
}

func (postgresKind) Created(c spec.Cluster, s Settings) Settings {
	pg := c.(*spec.PostgresCluster)
	s.Sync = pg.Spec.SynchronousStandbys
	// A new cluster serves and requires TLS from its first start.
	s.TLS, s.TLSIssuer = contract.TLSRequire, pg.Spec.Issuer()
	if s.Parameters = pg.Spec.RenderedParameters(); s.Parameters != nil {
		s.ConfigRevision = contract.ConfigRevisionWithTLS(s.Parameters, s.TLS)
	}
	return s
}
