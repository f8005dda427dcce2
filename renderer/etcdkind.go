package renderer

import (
	"strconv"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/planner/spec"
)

// Etcd renders EtcdCluster (etcd.go).
func Etcd() Kind { return etcdKind{} }

type etcdKind struct{}

func (etcdKind) Kind() string { return spec.EtcdKind }

func (etcdKind) Objects(c spec.Cluster, in Input) ([]Object, error) {
	return etcdObjects(c.(*spec.EtcdCluster), in.Settings, in.Options, in.Token, in.InitialMembers)
}

// ApplyStep renders etcd's own steps.
func (etcdKind) ApplyStep(cur Settings, c spec.Cluster, s plan.Step) (Settings, error) {
	next, p := cur, s.Params
	switch s.Kind {
	case plan.CreateCluster:
		e := c.(*spec.EtcdCluster)
		pol := e.Spec.CompactionPolicy()
		next.Compaction = &plan.CompactionSettings{Mode: pol.Mode, Retention: string(pol.Retention)}
		next.SpaceQuota = strconv.FormatInt(e.Spec.QuotaBytes(), 10)
		// A new cluster serves and requires TLS, clients and peers, from
		// its first start, with the certificates of the spec's issuer if
		// it names one.
		next.TLS, next.TLSIssuer = contract.TLSRequire, e.Spec.Issuer()
	case plan.EtcdAddMember:
		next.Replicas = p.EtcdAddMember.Replicas
	case plan.EtcdRemoveMember:
		next.Requests.RemoveID, next.Requests.RemoveMember = s.ID, p.EtcdRemoveMember.Member
	case plan.EtcdConfigureCompaction:
		to := p.EtcdConfigureCompaction.To
		next.Compaction = &to
	case plan.EtcdRecover:
		next.Requests.RecoverID, next.Requests.Recover = s.ID, p.EtcdRecover
	case plan.EtcdDowngrade:
		next.Requests.DowngradeID, next.Requests.Downgrade = s.ID, p.EtcdDowngrade
	default:
		return cur, unknownStep(spec.EtcdKind, s)
	}
	return next, nil
}
