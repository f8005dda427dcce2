package planner

import (
	"fmt"
	"slices"

	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/spec"
)

// Strategy plans the clusters of one kind. It is pure: no I/O, no clock,
// the same input gives the same result. It checks the kind's domain rules
// (Result.Refusals), waits while a change is in flight (Result.Waiting),
// and otherwise returns the steps, in order, that take what runs to the
// spec. The Planner adds what every kind shares: window gates, policy
// decisions, fingerprints and IDs.
type Strategy interface {
	// Kind is the spec kind the strategy plans, as spec.Ref.Kind names it.
	Kind() string
	// Plan plans c, whose Ref().Kind is Kind(), against obs: nil when
	// nothing of the cluster runs.
	Plan(c spec.Cluster, obs *live.Cluster, want Want) Result
}

// Want is what a plan brings besides the spec: the images the rendered
// pod template names for the version that runs (nil when not known, and
// then no image change is planned).
type Want struct {
	Images map[string]string
}

// ImageFunc returns the images, by container name, that the rendered pod
// template of c names at version (with a pg_upgrade init container from
// major upgradeFrom, 0 for none): the renderer's Images.
type ImageFunc func(c spec.Cluster, version string, upgradeFrom int) (map[string]string, error)

// Planner plans the clusters of the kinds it has a strategy for; a
// cluster of any other kind is refused (RuleUnknownKind).
type Planner struct {
	byKind map[string]Strategy
	images ImageFunc
}

// WithImages makes the planner plan a rolling restart when the images the
// renderer names differ from those that run (a new cairn release, another
// registry). Without it images are never changed but by version steps.
func (pl *Planner) WithImages(f ImageFunc) *Planner {
	pl.images = f
	return pl
}

// New returns a planner of these strategies, one per kind. Two strategies
// of one kind are a wiring bug and panic.
func New(strategies ...Strategy) *Planner {
	p := &Planner{byKind: make(map[string]Strategy, len(strategies))}
	for _, s := range strategies {
		if _, dup := p.byKind[s.Kind()]; dup {
			panic(fmt.Sprintf("planner: two strategies for kind %s", s.Kind()))
		}
		p.byKind[s.Kind()] = s
	}
	return p
}

// Kinds are the kinds the planner plans, sorted.
func (pl *Planner) Kinds() []string {
	out := make([]string, 0, len(pl.byKind))
	for k := range pl.byKind {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
