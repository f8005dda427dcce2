package planner

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/planner/spec"
	"github.com/cairn-dev/cairn/policies"
)

// Plan plans every desired cluster against the observed state. Clusters
// that run but have no spec any more get a plan that refuses to delete
// them. Plans are ordered by cluster name.
func (pl *Planner) Plan(desired []spec.Cluster, observed *live.Snapshot, pols policies.Set) plan.List {
	running := map[string]*live.Cluster{}
	if observed != nil {
		for i := range observed.Clusters {
			o := &observed.Clusters[i]
			running[o.Kind+"/"+o.Name] = o
		}
	}
	out := plan.List{Plans: make([]plan.Plan, 0, len(desired))}
	obs := make([]*live.Cluster, len(desired))
	for i, c := range desired {
		key := c.Ref().Kind + "/" + c.Ref().Name
		obs[i] = running[key]
		out.Plans = append(out.Plans, pl.PlanCluster(c, obs[i], pols))
		delete(running, key)
	}
	applyFleetPolicies(desired, obs, out.Plans, pols)
	for _, o := range running {
		out.Plans = append(out.Plans, orphan(o))
	}
	sortPlans(out.Plans)
	return out
}

// PlanCluster plans one cluster; obs is nil when nothing of it runs.
func (pl *Planner) PlanCluster(c spec.Cluster, obs *live.Cluster, pols policies.Set) plan.Plan {
	var r Result
	if s, ok := pl.byKind[c.Ref().Kind]; ok {
		r = s.Plan(c, obs, pl.want(c, obs))
	} else {
		r.refuse(RuleUnknownKind, "kind", "cairn has no planner for kind %q; it plans %s", c.Ref().Kind, strings.Join(pl.Kinds(), ", "))
	}
	ref := c.Ref()
	p := plan.Plan{
		Cluster:             plan.ClusterRef{APIVersion: ref.APIVersion, Kind: ref.Kind, Name: ref.Name, Namespace: ref.Namespace},
		SpecFingerprint:     plan.Fingerprint(c),
		ObservedFingerprint: plan.Fingerprint(obs),
		Baseline:            baseline(obs),
		Steps:               r.Steps,
		Refusals:            r.Refusals,
		Waiting:             r.Waiting,
	}
	switch {
	case len(r.Refusals) > 0:
		p.Status, p.Steps, p.Waiting = plan.StatusRefused, []plan.Step{}, nil
	case len(r.Waiting) > 0:
		p.Status, p.Steps = plan.StatusWaiting, []plan.Step{}
	case len(r.Steps) > 0:
		p.Status = plan.StatusPlanned
	default:
		p.Status = plan.StatusConverged
	}
	if p.Steps == nil {
		p.Steps = []plan.Step{}
	}
	if p.Refusals == nil {
		p.Refusals = []plan.Refusal{}
	}
	p.Notes = append(creationOnly(c, obs), r.Notes...)
	addWindowGates(c, p.Steps)
	ins := make([]policies.Input, len(p.Steps))
	for i := range p.Steps {
		ins[i] = policies.Input{Cluster: c, Observed: obs, Step: p.Steps[i], Index: i}
	}
	for i, ds := range pols.EvaluateSteps(ins) {
		p.Steps[i].Decisions = ds
	}
	p.ID = plan.ComputeID(p.Cluster, p.SpecFingerprint, p.Steps)
	return p
}

// want is what the plan of c brings besides its spec.
func (pl *Planner) want(c spec.Cluster, obs *live.Cluster) Want {
	if pl.images == nil || obs == nil || obs.StatefulSet.Version == "" {
		return Want{}
	}
	images, err := pl.images(c, obs.StatefulSet.Version, obs.StatefulSet.UpgradeFrom)
	if err != nil {
		return Want{} // a version the renderer cannot render: no image change
	}
	return Want{Images: images}
}

// creationOnly notes the spec fields of c that only a cluster's creation
// reads, set while the cluster runs: no step applies them, and the plan
// says so rather than look as if it had.
func creationOnly(c spec.Cluster, obs *live.Cluster) []plan.Note {
	r := c.Common().RestoreFrom
	if obs == nil || r == nil {
		return nil
	}
	src := cmp.Or(r.Cluster, c.Ref().Name)
	return []plan.Note{{Field: "spec.restoreFrom", Reason: fmt.Sprintf(
		"applies only when the cluster is created: %s already runs, so nothing restores the backup of %s from %s into it (a running cluster is never restored in place). To start from that backup, create a new cluster with it; the field may stay or go, it changes nothing here",
		c.Ref().Name, src, r.StorageLocation)}}
}

// applyFleetPolicies adds the decisions of the policies that need the
// whole fleet in view (concurrency) to each plan's next step. plans[i] is
// the plan of desired[i], made against obs[i].
func applyFleetPolicies(desired []spec.Cluster, obs []*live.Cluster, plans []plan.Plan, pols policies.Set) {
	entries := make([]policies.FleetEntry, len(desired))
	for i, c := range desired {
		entries[i] = policies.FleetEntry{Cluster: c, Observed: obs[i], Status: plans[i].Status}
		if len(plans[i].Steps) > 0 {
			entries[i].Next = &plans[i].Steps[0]
			entries[i].Decisions = plans[i].Steps[0].Decisions
		}
	}
	for i, ds := range pols.EvaluateFleet(entries) {
		if len(ds) == 0 {
			continue
		}
		step := &plans[i].Steps[0]
		step.Decisions = append(slices.Clone(step.Decisions), ds...)
		slices.SortStableFunc(step.Decisions, func(a, b plan.Decision) int { return cmp.Compare(a.Policy, b.Policy) })
	}
}

// baseline records what the running cluster's manifests set.
func baseline(obs *live.Cluster) *plan.Baseline {
	if obs == nil {
		return nil
	}
	tmpl := obs.StatefulSet.VolumeClaimStorage
	if tmpl == "" {
		tmpl = obs.Storage
	}
	return &plan.Baseline{
		Replicas:             obs.StatefulSet.Replicas,
		UpdatePartition:      obs.StatefulSet.UpdatePartition,
		Version:              obs.StatefulSet.Version,
		Storage:              obs.Storage,
		TemplateStorage:      tmpl,
		Backup:               observedBackup(obs.Backup),
		SynchronousStandbys:  obs.SynchronousStandbys,
		UpgradeFrom:          obs.StatefulSet.UpgradeFrom,
		Resources:            obs.StatefulSet.Resources,
		StorageClass:         obs.StatefulSet.StorageClass,
		Images:               obs.StatefulSet.Images,
		TemplateRevision:     obs.StatefulSet.TemplateRevision,
		Parameters:           obs.Parameters,
		ConfigRevision:       obs.ConfigRevision,
		Compaction:           observedCompaction(obs.Compaction),
		SpaceQuota:           obs.SpaceQuota,
		TLS:                  obs.TLS,
		TLSIssuer:            obs.TLSIssuer,
		Network:              obs.Network,
		ReadOnlyRoot:         obs.StatefulSet.ReadOnlyRoot,
		RuntimeReadOnlyRoot:  obs.Runtime.ReadOnlyRoot,
		RuntimeNoMemoryLimit: obs.Runtime.NoMemoryLimit,
		UpgradeCheck:         observedUpgradeCheck(obs.UpgradeCheck),
		SwitchoverServed:     obs.SwitchoverServed,
	}
}

// observedUpgradeCheck is the pre-flight Job the manifests hold, so every
// step renders it as it runs until the major upgrade's step removes it.
func observedUpgradeCheck(u *live.UpgradeCheck) *plan.UpgradeCheckJob {
	if u == nil {
		return nil
	}
	return &plan.UpgradeCheckJob{From: u.From, To: u.To, StorageLocation: u.StorageLocation, Scratch: u.Scratch,
		ScratchClaim: u.ScratchClaim, ScratchClass: u.ScratchClass, Images: u.Images}
}

func observedCompaction(c *live.Compaction) *plan.CompactionSettings {
	if c == nil {
		return nil
	}
	return &plan.CompactionSettings{Mode: c.Mode, Retention: c.Retention}
}

// orphan is the plan for a cluster that runs but whose spec was removed:
// cairn never deletes a database on its own.
func orphan(o *live.Cluster) plan.Plan {
	api, _ := spec.APIVersion(o.Kind)
	p := plan.Plan{
		Cluster:             plan.ClusterRef{APIVersion: api, Kind: o.Kind, Name: o.Name, Namespace: o.Namespace},
		SpecFingerprint:     plan.Fingerprint(nil),
		ObservedFingerprint: plan.Fingerprint(o),
		Status:              plan.StatusRefused,
		Steps:               []plan.Step{},
		Refusals: []plan.Refusal{{
			Rule:   RuleSpecRemoved,
			Reason: "the cluster runs but its spec is gone from the repo; cairn never deletes a database or its volumes on its own. Restore the spec, or delete the cluster and its PVCs by hand once its data is safe",
		}},
	}
	p.ID = plan.ComputeID(p.Cluster, p.SpecFingerprint, nil)
	return p
}

func sortPlans(ps []plan.Plan) {
	slices.SortStableFunc(ps, func(a, b plan.Plan) int {
		return cmp.Or(strings.Compare(a.Cluster.Name, b.Cluster.Name), strings.Compare(a.Cluster.Kind, b.Cluster.Kind))
	})
}
