package planner

import (
	"fmt"
	"slices"
	"strconv"
	"testing"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/planner/spec"
)

// The simulator plays the StatefulSet controller, the kubelet and the
// runtime: it carries a step out on an observed state, either to the
// settled end (apply) or to the moment right after the rendered change was
// synced and before the pods caught up (applyPartial).

func clone(c *live.Cluster) *live.Cluster {
	if c == nil {
		return nil
	}
	out := *c
	out.Members = slices.Clone(c.Members)
	if c.Backup != nil {
		b := *c.Backup
		out.Backup = &b
	}
	if c.Downgrade != nil {
		d := *c.Downgrade
		out.Downgrade = &d
	}
	return &out
}

func member(c *live.Cluster, ord int) *live.Member {
	for i := range c.Members {
		if c.Members[i].Ordinal() == ord {
			return &c.Members[i]
		}
	}
	return nil
}

func settledRole(kind string, ord, primary int) live.Role {
	switch {
	case kind == spec.EtcdKind && ord == primary:
		return live.RoleLeader
	case kind == spec.EtcdKind:
		return live.RoleFollower
	case ord == primary:
		return live.RolePrimary
	}
	return live.RoleReplica
}

// apply carries a step out to its settled end.
func apply(t *testing.T, c *live.Cluster, desired spec.Cluster, s plan.Step) *live.Cluster {
	t.Helper()
	ref := desired.Ref()
	if s.Kind == plan.CreateCluster {
		p := s.Params.CreateCluster
		out := &live.Cluster{Kind: ref.Kind, Name: ref.Name, Storage: p.Storage, Bootstrap: "new", Network: contract.NetworkRestricted,
			Runtime: live.Runtime{ReadOnlyRoot: true}, StatefulSet: live.StatefulSet{Replicas: p.Members, Version: p.Version, ReadOnlyRoot: true, TemplateRevision: p.TemplateRevision}}
		for i := range p.Members {
			out.Members = append(out.Members, live.Member{Name: contract.MemberName(ref.Name, i), Version: p.Version, Ready: true, Role: settledRole(ref.Kind, i, 0),
				TemplateRevision: p.TemplateRevision})
		}
		if b := backupSettings(desired.Common().Backup); b != nil {
			out.Backup = &live.Backup{Schedule: b.Schedule, TimeZone: b.TimeZone, StorageLocation: b.StorageLocation, RetentionCount: b.RetentionCount, RetentionMaxAge: b.RetentionMaxAge}
		}
		out.StatefulSet.Resources, out.StatefulSet.StorageClass = desired.Common().Resources.Contract(), desired.Common().StorageClass
		if e, ok := desired.(*spec.EtcdCluster); ok {
			cp := e.Spec.CompactionPolicy()
			out.Compaction = &live.Compaction{Mode: cp.Mode, Retention: string(cp.Retention), Applied: true}
			out.SpaceQuota = strconv.FormatInt(e.Spec.QuotaBytes(), 10)
			out.TLS = contract.TLSRequire
			for i := range out.Members {
				out.Members[i].TLS, out.Members[i].PeerTLS = true, true
			}
		}
		if pg, ok := desired.(*spec.PostgresCluster); ok {
			out.SynchronousStandbys, out.TLS = pg.Spec.SynchronousStandbys, contract.TLSRequire
			if out.Parameters = pg.Spec.RenderedParameters(); out.Parameters != nil {
				out.ConfigRevision = contract.ConfigRevisionWithTLS(out.Parameters, out.TLS)
			}
			for i := range out.Members {
				out.Members[i].ConfigRevision, out.Members[i].TLS = out.ConfigRevision, true
			}
		}
		return out
	}
	out := clone(c)
	out.Bootstrap = "existing" // every step after the create step seals it
	switch p := s.Params; s.Kind {
	case plan.SealBootstrap:
	case plan.EtcdConfigureCompaction:
		to := p.EtcdConfigureCompaction.To
		out.Compaction = &live.Compaction{Mode: to.Mode, Retention: to.Retention, Applied: true}
	case plan.ConfigureBackup:
		out.Backup = nil
		if b := p.ConfigureBackup.To; b != nil {
			out.Backup = &live.Backup{Schedule: b.Schedule, TimeZone: b.TimeZone, StorageLocation: b.StorageLocation, RetentionCount: b.RetentionCount, RetentionMaxAge: b.RetentionMaxAge}
			if c.Backup != nil {
				out.Backup.LastSuccessful = c.Backup.LastSuccessful
			}
		}
	case plan.TakeBackup:
		out.Backup.LastSuccessful, out.Backup.LastRequest = "2026-11-30T03:00:00Z", s.ID
	case plan.ExpandStorage:
		out.Storage = p.ExpandStorage.To
	case plan.UpgradeMember:
		u := p.UpgradeMember
		if u.Template != nil {
			restartTemplate(out, &plan.RestartMemberParams{Partition: u.Partition, Template: u.Template})
		}
		out.StatefulSet.Version, out.StatefulSet.UpdatePartition = u.To, u.Partition
		for ord := u.Partition; ord < len(out.Members); ord++ {
			m := member(out, ord)
			m.Version = u.To
			if u.Template != nil || m.Version != c.Members[ord].Version {
				// A pod restarted by the StatefulSet runs its template as
				// it is, revision and config.
				m.TemplateRevision, m.ConfigRevision, m.PendingRestart = out.StatefulSet.TemplateRevision, out.ConfigRevision, nil
			}
		}
		endDowngrade(out)
		raiseClusterVersion(out)
	case plan.EtcdDowngrade:
		d := p.EtcdDowngrade
		out.Downgrade = &live.EtcdDowngrade{Done: s.ID}
		if d.Action == contract.EtcdDowngradeEnable {
			out.Downgrade.Enabled, out.Downgrade.Target, out.Downgrade.StorageMigrated = true, d.To, true
			out.ClusterVersion = d.To
		}
	case plan.ScaleIn:
		out.StatefulSet.Replicas = p.ScaleIn.Replicas
		out.Members = out.Members[:p.ScaleIn.Replicas]
	case plan.EtcdAddMember:
		a := p.EtcdAddMember
		out.StatefulSet.Replicas = a.Replicas
		out.Members = append(out.Members, live.Member{Name: a.Member, Version: out.StatefulSet.Version, Ready: true, Role: live.RoleFollower,
			TemplateRevision: out.StatefulSet.TemplateRevision})
	case plan.EtcdRemoveMember:
		m := member(out, p.EtcdRemoveMember.Ordinal)
		if m.Role == live.RoleLeader {
			member(out, 0).Role = live.RoleLeader
		}
		m.Role = live.RoleRemoved
	case plan.PostgresAddReplica:
		a := p.PostgresAddReplica
		out.StatefulSet.Replicas = a.Replicas
		if a.Version != "" {
			out.StatefulSet.Version, out.StatefulSet.UpdatePartition = a.Version, a.Partition
		}
		for _, name := range a.Added() {
			out.Members = append(out.Members, live.Member{Name: name, Version: out.StatefulSet.Version, Ready: true, Role: live.RoleReplica,
				TemplateRevision: out.StatefulSet.TemplateRevision, ConfigRevision: out.ConfigRevision, TLS: contract.TLSOn(out.TLS)})
		}
	case plan.PostgresSwitchover:
		if r := p.PostgresSwitchover.Request; r != "" {
			out.SwitchoverServed = r
		}
		for i := range out.Members {
			switch out.Members[i].Name {
			case p.PostgresSwitchover.From:
				out.Members[i].Role = live.RoleReplica
			case p.PostgresSwitchover.To:
				out.Members[i].Role = live.RolePrimary
			}
		}
	case plan.PostgresUpgradeCheck:
		u := p.PostgresUpgradeCheck
		if u.Remove {
			out.UpgradeCheck = nil
			break
		}
		from, _ := spec.ParseRelease(u.From, 2)
		to, _ := spec.ParseRelease(u.To, 2)
		out.UpgradeCheck = &live.UpgradeCheck{From: from.Major, To: to.Major, StorageLocation: u.StorageLocation, Scratch: out.Storage, Result: live.UpgradeCheckPassed}
	case plan.PostgresMajorUpgrade:
		out.UpgradeCheck = nil // the step's overlay removes the Job
		sts := out.StatefulSet
		out.StatefulSet = live.StatefulSet{Replicas: 1, Version: p.PostgresMajorUpgrade.To, Resources: sts.Resources, StorageClass: sts.StorageClass, TemplateRevision: sts.TemplateRevision,
			ReadOnlyRoot: sts.ReadOnlyRoot}
		out.Members = []live.Member{{Name: p.PostgresMajorUpgrade.Primary, Version: p.PostgresMajorUpgrade.To, Ready: true, Role: live.RolePrimary,
			TemplateRevision: sts.TemplateRevision, ConfigRevision: out.ConfigRevision, TLS: contract.TLSOn(out.TLS)}}
	case plan.PostgresSynchronousStandbys:
		out.SynchronousStandbys = p.PostgresSynchronousStandbys.To
	case plan.RestrictNetwork:
		out.Network = contract.NetworkRestricted
	case plan.HardenRuntime:
		out.Runtime.ReadOnlyRoot, out.Runtime.NoMemoryLimit = true, false
	case plan.PostgresConfigureTLS:
		t := p.PostgresConfigureTLS
		out.TLS, out.ConfigRevision = t.To, t.Revision
		for i := range out.Members {
			out.Members[i].ConfigRevision, out.Members[i].TLS = t.Revision, contract.TLSOn(t.To)
		}
	case plan.PostgresReloadParameters:
		pc := p.PostgresReloadParameters
		out.Parameters, out.ConfigRevision = pc.To, pc.Revision
		for i := range out.Members {
			out.Members[i].ConfigRevision = pc.Revision
		}
	case plan.RestartMember:
		restartTemplate(out, p.RestartMember)
		for ord := p.RestartMember.Partition; ord < len(out.Members); ord++ {
			m := member(out, ord)
			m.TemplateRevision, m.ConfigRevision, m.PendingRestart = out.StatefulSet.TemplateRevision, out.ConfigRevision, nil
			// A member restarted with TLS on serves it (the runtime
			// verifies it and reports so).
			m.TLS = contract.TLSOn(out.TLS)
			m.PeerTLS = out.Kind == spec.EtcdKind && out.TLS == contract.TLSRequire
		}
	default:
		t.Fatalf("simulator cannot apply %s", s.Kind)
	}
	return out
}

// endDowngrade plays etcd's leader: with every member at the target
// minor of the enabled downgrade, it ends the downgrade.
func endDowngrade(c *live.Cluster) {
	target, on := c.DowngradeEnabled()
	if !on {
		return
	}
	for _, m := range c.Members {
		if v, _ := spec.ParseRelease(m.Version, 3); minorOf(v) != target {
			return
		}
	}
	c.Downgrade.Enabled = false
}

// raiseClusterVersion plays etcd's leader: once every member runs a
// newer minor than the cluster version it reports, it raises it (no
// downgrade enabled). A state that reports none is left so.
func raiseClusterVersion(c *live.Cluster) {
	if c.ClusterVersion == "" || c.Kind != spec.EtcdKind {
		return
	}
	if _, on := c.DowngradeEnabled(); on {
		return
	}
	low, err := spec.ParseRelease(c.Members[0].Version, 3)
	for _, m := range c.Members[1:] {
		if v, verr := spec.ParseRelease(m.Version, 3); verr == nil && v.Compare(low) < 0 {
			low = v
		}
	}
	if cv, cerr := spec.ParseRelease(c.ClusterVersion, 2); err == nil && cerr == nil && low.Major == cv.Major && low.Minor > cv.Minor {
		c.ClusterVersion = minorOf(low)
	}
}

// applyPartial is the state right after a step's manifests were synced and
// before the pods (or the runtime) caught up; nil when nothing in between
// can be observed.
func applyPartial(c *live.Cluster, s plan.Step) *live.Cluster {
	out := clone(c)
	switch p := s.Params; s.Kind {
	case plan.UpgradeMember:
		u := p.UpgradeMember
		if u.Template != nil {
			restartTemplate(out, &plan.RestartMemberParams{Partition: u.Partition, Template: u.Template})
		}
		out.StatefulSet.Version, out.StatefulSet.UpdatePartition = u.To, u.Partition
		member(out, u.Ordinal).Ready = false
	case plan.ScaleIn:
		out.StatefulSet.Replicas = p.ScaleIn.Replicas
		member(out, p.ScaleIn.Ordinal).Ready = false
	case plan.EtcdAddMember:
		out.StatefulSet.Replicas = p.EtcdAddMember.Replicas
		if p.EtcdAddMember.Learner {
			out.Members = append(out.Members, live.Member{Name: p.EtcdAddMember.Member, Version: out.StatefulSet.Version, Ready: true, Role: live.RoleLearner})
		}
	case plan.PostgresAddReplica:
		a := p.PostgresAddReplica
		out.StatefulSet.Replicas = a.Replicas
		if a.Version != "" {
			out.StatefulSet.Version, out.StatefulSet.UpdatePartition = a.Version, a.Partition
		}
	case plan.PostgresMajorUpgrade:
		out.StatefulSet = live.StatefulSet{Replicas: 1, Version: p.PostgresMajorUpgrade.To}
		out.Members = []live.Member{{Name: p.PostgresMajorUpgrade.Primary, Version: p.PostgresMajorUpgrade.From, Ready: false, Role: live.RolePrimary}}
	case plan.RestartMember:
		restartTemplate(out, p.RestartMember)
		member(out, p.RestartMember.Ordinal).Ready = false
	default:
		return nil // the runtime acts, or nothing shows before the end
	}
	return out
}

func voters(c *live.Cluster) int {
	n := 0
	for _, m := range c.Members {
		if m.IsVoter() {
			n++
		}
	}
	return n
}

func primaries(c *live.Cluster) []int {
	var out []int
	for _, m := range c.Members {
		if m.Role == live.RolePrimary {
			out = append(out, m.Ordinal())
		}
	}
	return out
}

// checkInvariants holds for every step taken from a settled state.
func checkInvariants(before *live.Cluster, s plan.Step, after *live.Cluster) error {
	if before == nil {
		return nil
	}
	if spec.Quantity(after.Storage).Cmp(spec.Quantity(before.Storage)) < 0 {
		return fmt.Errorf("storage shrank from %s to %s", before.Storage, after.Storage)
	}
	// One member at a time, except an upgrade's re-clone and the replicas
	// a primary running alone gets in one step.
	alone := s.Kind == plan.PostgresAddReplica && len(before.Members) == 1
	if d := len(after.Members) - len(before.Members); (d > 1 || d < -1) && s.Kind != plan.PostgresMajorUpgrade && !alone {
		return fmt.Errorf("%d members changed at once", d)
	}
	if before.Kind == spec.EtcdKind {
		return checkEtcd(before, s, after)
	}
	return checkPostgres(before, s, after)
}

func checkEtcd(before *live.Cluster, s plan.Step, after *live.Cluster) error {
	if d := voters(after) - voters(before); d > 1 || d < -1 {
		return fmt.Errorf("%d voters changed at once", d)
	}
	// During the step: how many voters there are and how many are up.
	n, up := voters(before), voters(before)
	switch s.Kind {
	case plan.UpgradeMember, plan.RestartMember:
		up--
	case plan.EtcdAddMember:
		if !s.Params.EtcdAddMember.Learner {
			n++ // a new voter that has not started yet
		}
	case plan.EtcdRemoveMember:
		if s.Params.EtcdRemoveMember.Ordinal == leaderOf(before) && !s.Params.EtcdRemoveMember.TransferLeadership {
			up-- // an election follows
		}
	}
	if up < n/2+1 && !s.Disruptive {
		return fmt.Errorf("step %s loses quorum (%d of %d up) but is not marked disruptive", s.ID, up, n)
	}
	if u := s.Params.UpgradeMember; u != nil {
		from, _ := spec.ParseRelease(u.From, 3)
		to, _ := spec.ParseRelease(u.To, 3)
		target, down := before.DowngradeEnabled()
		down = down && minorOf(to) == target && to.Minor == from.Minor-1
		if !down && (to.Major != from.Major || to.Minor < from.Minor || to.Minor > from.Minor+1) {
			return fmt.Errorf("step %s moves %s -> %s: not along one minor", s.ID, u.From, u.To)
		}
	}
	return nil
}

func leaderOf(c *live.Cluster) int {
	for _, m := range c.Members {
		if m.Role == live.RoleLeader {
			return m.Ordinal()
		}
	}
	return -1
}

func checkPostgres(before *live.Cluster, s plan.Step, after *live.Cluster) error {
	if p := primaries(after); len(p) != 1 {
		return fmt.Errorf("after %s the primaries are %v", s.ID, p)
	}
	primary := primaries(before)[0]
	switch s.Kind {
	case plan.UpgradeMember:
		u := s.Params.UpgradeMember
		if u.Ordinal == primary && len(before.Members) > 1 {
			return fmt.Errorf("step %s restarts the primary of a %d-member cluster", s.ID, len(before.Members))
		}
		from, _ := spec.ParseRelease(u.From, 2)
		to, _ := spec.ParseRelease(u.To, 2)
		if from.Major != to.Major {
			return fmt.Errorf("step %s changes the major version in a rolling restart", s.ID)
		}
	case plan.RestartMember:
		// Only a lowered hot-standby parameter restarts the primary of a
		// cluster with replicas, in place, and says so.
		if rm := s.Params.RestartMember; rm.Ordinal == primary && len(before.Members) > 1 && !s.Disruptive {
			return fmt.Errorf("step %s restarts the primary of a %d-member cluster and is not marked disruptive", s.ID, len(before.Members))
		}
	case plan.ScaleIn:
		if s.Params.ScaleIn.Ordinal == primary {
			return fmt.Errorf("step %s removes the primary", s.ID)
		}
	case plan.PostgresMajorUpgrade:
		from, _ := spec.ParseRelease(s.Params.PostgresMajorUpgrade.From, 2)
		to, _ := spec.ParseRelease(s.Params.PostgresMajorUpgrade.To, 2)
		if to.Major <= from.Major || s.Reversible {
			return fmt.Errorf("step %s: major %s -> %s reversible=%v", s.ID, from, to, s.Reversible)
		}
	}
	return nil
}

// restartTemplate is what a synced restart step changes in the
// StatefulSet and the config; members not restarted yet read the new
// config, and wait for a restart to apply what needs one.
func restartTemplate(out *live.Cluster, rm *plan.RestartMemberParams) {
	out.StatefulSet.UpdatePartition = rm.Partition
	t := rm.Template
	if t == nil {
		return
	}
	out.StatefulSet.TemplateRevision, out.StatefulSet.Resources = t.Revision, t.Resources
	if t.SpaceQuota != "" {
		out.SpaceQuota = t.SpaceQuota
	}
	if t.ReadOnlyRoot {
		out.StatefulSet.ReadOnlyRoot = true
	}
	if t.TLS != "" {
		out.TLS = t.TLS
	}
	if pc := t.Parameters; pc != nil {
		out.Parameters, out.ConfigRevision = pc.To, pc.Revision
		for i := range out.Members {
			m := &out.Members[i]
			m.ConfigRevision, m.PendingRestart = pc.Revision, pc.Restart
			if m.TemplateRevision == t.Revision {
				// It runs that template already, with the values that
				// need a restart (a restart reverted before it came).
				m.PendingRestart = nil
			}
		}
	}
}
