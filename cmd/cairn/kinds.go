package main

import (
	"github.com/cairn-dev/cairn/planner"
	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/observe"
	"github.com/cairn-dev/cairn/planner/spec"
	"github.com/cairn-dev/cairn/publish"
	"github.com/cairn-dev/cairn/renderer"
)

// kind is one database kind cairn serves: its implementation in each
// layer, by the interface that layer owns.
type kind struct {
	// name is the spec's kind (spec.EtcdKind, spec.PostgresKind).
	name string
	// spec decodes, defaults and validates its documents.
	spec spec.Kind
	// roles are its members' roles in the live state; the gates judge
	// its health by them.
	roles live.KindRoles
	// planner plans its clusters.
	planner planner.Strategy
	// renderer renders their manifests.
	renderer renderer.Kind
	// observer reads what is particular to the kind in a live cluster.
	observer observe.Kind
	// wording is what its pull requests say of it.
	wording publish.Wording
	// status is what `cairn status` shows of it beyond the rest.
	status kindStatus
	// instance is its instance manager's `cairn instance` subcommands.
	instance instanceCommands
	// restore brings a backup of the kind back (`cairn restore`).
	restore restorer
	// runtime is its part of `cairn runtime` (runtime_<kind>.go): its
	// flags and its keeper.
	runtime func() kindRuntime
}

// kinds is the one table of the database kinds cairn serves; every
// layer gets its per-kind implementations from here, explicitly. Adding a
// kind adds a row (docs/adding-a-kind.md).
var kinds = []kind{
	{
		name:     spec.EtcdKind,
		spec:     spec.Etcd(),
		roles:    live.EtcdRoles(),
		wording:  publish.EtcdWording(),
		planner:  planner.Etcd(),
		renderer: renderer.Etcd(),
		observer: observe.Etcd(),
		instance: instanceEtcd,
		runtime:  newEtcdRuntime,
		restore:  etcdRestorer,
	},
	{
		name:     spec.PostgresKind,
		spec:     spec.Postgres(),
		roles:    live.PostgresRoles(),
		wording:  publish.PostgresWording(),
		status:   postgresStatus,
		planner:  planner.Postgres(),
		renderer: renderer.Postgres(),
		observer: observe.Postgres(),
		instance: instancePostgres,
		runtime:  newPostgresRuntime,
		restore:  postgresRestorer,
	},
}

// kindNamed returns the row of the named kind.
func kindNamed(name string) (kind, bool) {
	for _, k := range kinds {
		if k.name == name {
			return k, true
		}
	}
	return kind{}, false
}

// newPlanner is the planner of every kind of the table.
func newPlanner() *planner.Planner {
	var s []planner.Strategy
	for _, k := range kinds {
		if k.planner != nil {
			s = append(s, k.planner)
		}
	}
	return planner.New(s...)
}

// newRenderer is the renderer of every kind of the table.
func newRenderer(o renderer.Options) (*renderer.Renderer, error) {
	var k []renderer.Kind
	for _, row := range kinds {
		if row.renderer != nil {
			k = append(k, row.renderer)
		}
	}
	return renderer.New(o, k...)
}

// observeKinds are the observers of every kind of the table.
func observeKinds() []observe.Kind {
	var out []observe.Kind
	for _, k := range kinds {
		if k.observer != nil {
			out = append(out, k.observer)
		}
	}
	return out
}
