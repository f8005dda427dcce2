package renderer

import (
	"fmt"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/planner/spec"
)

// Postgres renders PostgresCluster (postgres.go).
func Postgres() Kind { return postgresKind{} }

type postgresKind struct{}

func (postgresKind) Kind() string { return spec.PostgresKind }

func (postgresKind) Objects(c spec.Cluster, in Input) ([]Object, error) {
	return postgresObjects(c.(*spec.PostgresCluster), in.Settings, in.Options, in.InitialMembers)
}

// ApplyStep renders PostgreSQL's own steps.
func (postgresKind) ApplyStep(cur Settings, c spec.Cluster, s plan.Step) (Settings, error) {
	next, p := cur, s.Params
	switch s.Kind {
	case plan.CreateCluster:
		pg := c.(*spec.PostgresCluster)
		next.Sync = pg.Spec.SynchronousStandbys
		// A new cluster serves and requires TLS from its first start.
		next.TLS, next.TLSIssuer = contract.TLSRequire, pg.Spec.Issuer()
		if next.Parameters = pg.Spec.RenderedParameters(); next.Parameters != nil {
			next.ConfigRevision = contract.ConfigRevisionWithTLS(next.Parameters, next.TLS)
		}
	case plan.PostgresAddReplica:
		a := p.PostgresAddReplica
		next.Replicas = a.Replicas
		if a.Version != "" {
			next.Version, next.Partition, next.Images = a.Version, a.Partition, nil
		}
	case plan.PostgresSwitchover:
		next.Requests.SwitchoverID, next.Requests.SwitchoverTo = s.ID, p.PostgresSwitchover.To
		if r := p.PostgresSwitchover.Request; r != "" {
			next.SwitchoverServed = r
		}
	case plan.PostgresMajorUpgrade:
		from, err := spec.ParseRelease(p.PostgresMajorUpgrade.From, 2)
		if err != nil {
			return cur, fmt.Errorf("step %s: %w", s.ID, err)
		}
		next.Version, next.Replicas, next.Partition, next.UpgradeFrom = p.PostgresMajorUpgrade.To, 1, 0, from.Major
		next.Images, next.UpgradeCheck = nil, nil
	case plan.PostgresUpgradeCheck:
		check, err := pgUpgradeCheckSettings(cur, s)
		if err != nil {
			return cur, err
		}
		next.UpgradeCheck = check
	case plan.PostgresSynchronousStandbys:
		next.Sync = p.PostgresSynchronousStandbys.To
	case plan.PostgresReloadParameters:
		next.Parameters, next.ConfigRevision = p.PostgresReloadParameters.To, p.PostgresReloadParameters.Revision
	case plan.PostgresConfigureTLS:
		t := p.PostgresConfigureTLS
		next.TLS, next.ConfigRevision = t.To, t.Revision
		if t.From == contract.TLSOff {
			next.TLSIssuer = t.Issuer
		}
	default:
		return cur, unknownStep(spec.PostgresKind, s)
	}
	return next, nil
}

// pgUpgradeCheckSettings is the pre-flight check Job after a
// PostgresUpgradeCheck step: nil once the step removes it.
func pgUpgradeCheckSettings(cur Settings, s plan.Step) (*plan.UpgradeCheckJob, error) {
	u := s.Params.PostgresUpgradeCheck
	if u.Remove {
		return nil, nil
	}
	from, err := spec.ParseRelease(u.From, 2)
	if err != nil {
		return nil, fmt.Errorf("step %s: %w", s.ID, err)
	}
	to, err := spec.ParseRelease(u.To, 2)
	if err != nil {
		return nil, fmt.Errorf("step %s: %w", s.ID, err)
	}
	return &plan.UpgradeCheckJob{From: from.Major, To: to.Major, StorageLocation: u.StorageLocation,
		Scratch: cur.Storage, ScratchClaim: true, ScratchClass: cur.StorageClass}, nil
}
