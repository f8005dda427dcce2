package renderer

import (
	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/planner/spec"
)

// Kind renders the objects of one database kind. It is pure: the same
// input gives the same objects. The Renderer does what every kind
// shares: the base and one overlay per step, each patching the one
// before, the entry point, PLAN.md and the kustomize builds.
type Kind interface {
	// Kind is the spec kind it renders, as spec.Ref.Kind names it.
	Kind() string
	// Objects are the cluster's objects, each in its own file, as they are
	// at in.Settings.
	Objects(c spec.Cluster, in Input) ([]Object, error)
	// ApplyStep returns the settings after step s of the kind's own (and
	// after a create step: cur then holds what the step's parameters bring
	// up, to adjust with what only the kind's spec says). The steps every
	// kind shares never reach it (settings.go). A step kind it does not
	// render is an error (unknownStep).
	ApplyStep(cur Settings, c spec.Cluster, s plan.Step) (Settings, error)
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
