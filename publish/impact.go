package publish

import (
	"fmt"
	"strings"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/plan"
)

// impact is what a step does to the running members, derived from its
// kind and parameters only (roles from the live state the plan was made
// against, said to be as planned): the pods it restarts, in order, and
// the disruption clients should expect. A kind it does not know says
// nothing (known is false).
type impact struct {
	known    bool
	restarts []string
	effect   string
}

// stepImpact derives a step's impact. Only UpgradeMember and
// RestartMember (the update partition moves to one member's ordinal)
// and PostgresMajorUpgrade (the StatefulSet keeps one pod, restarted)
// restart pods through the manifests (an EtcdRecover step's runtime
// restarts every member, which its effect says); the other kinds change a ConfigMap the runtime reads, add
// or remove a pod, or grow volumes (renderer/settings.go).
func stepImpact(w Wording, s plan.Step, c *live.Cluster) impact {
	pa := s.Params
	switch {
	case pa.UpgradeMember != nil:
		u := pa.UpgradeMember
		return impact{true, []string{u.Member}, memberRestart(w, u.Member, u.Replicas, c, s.Disruptive) + fmt.Sprintf("; it comes back at %s (from %s)", md(u.To), md(u.From))}
	case pa.RestartMember != nil:
		r := pa.RestartMember
		if r.Template != nil && r.Template.TLS == contract.TLSRequire {
			// What is disruptive is said here: who the member refuses.
			return impact{true, []string{r.Member}, memberRestart(w, r.Member, r.Replicas, c, false) +
				"; from then on it refuses every client without a certificate of the cluster's CA (TLS required)"}
		}
		return impact{true, []string{r.Member}, memberRestart(w, r.Member, r.Replicas, c, s.Disruptive)}
	case pa.PostgresMajorUpgrade != nil:
		m := pa.PostgresMajorUpgrade
		return impact{true, []string{m.Primary}, fmt.Sprintf("downtime: the replicas stop (the StatefulSet keeps one pod) and %s restarts to run pg_upgrade from %s to %s; "+
			"the cluster takes no reads or writes until it is back", md(m.Primary), md(m.From), md(m.To))}
	case pa.PostgresSwitchover != nil:
		w := pa.PostgresSwitchover
		effect := fmt.Sprintf("one switchover from %s to %s: writes pause while %s turns read-only and %s replays its last WAL and is promoted "+
			"(a few seconds when %s keeps up); sessions on %s are cut", md(w.From), md(w.To), md(w.From), md(w.To), md(w.To), md(w.From))
		if w.Request != "" {
			effect += fmt.Sprintf(". %s is promoted only once it has replayed all of %s's WAL, so no committed transaction is lost; should it not catch up "+
				"within the runtime's catch-up time (30 s), %s gets its writes back and the runtime tries again later. Afterwards %s is the primary and %s a streaming replica. "+
				"This serves spec.switchover request %s once: a later failover does not bring it back",
				md(w.To), md(w.From), md(w.From), md(w.To), md(w.From), md(w.Request))
		}
		return impact{true, nil, effect}
	case pa.CreateCluster != nil:
		return impact{true, nil, fmt.Sprintf("none: nothing runs yet; %d member(s) start for the first time", pa.CreateCluster.Members)}
	case pa.ScaleIn != nil:
		return impact{true, nil, fmt.Sprintf("the pod of %s%s stops for good and its connections drop; the other members keep serving", md(pa.ScaleIn.Member), asPlanned(c, pa.ScaleIn.Member))}
	case pa.EtcdAddMember != nil:
		a := pa.EtcdAddMember
		switch {
		case a.Learner:
			return impact{true, nil, fmt.Sprintf("none expected: %s joins as a learner; the members keep serving", md(a.Member))}
		case a.Replicas <= 2:
			// One voter becomes two: quorum is both.
			return impact{true, nil, fmt.Sprintf("writes stop from when %s is added as a voter until it has started and joined: two voters need both for quorum", md(a.Member))}
		}
		return impact{true, nil, fmt.Sprintf("none expected: %s joins as a voter; the members keep quorum without it", md(a.Member))}
	case pa.EtcdRemoveMember != nil:
		r := pa.EtcdRemoveMember
		effect := fmt.Sprintf("%s leaves the etcd membership; its pod keeps running until the step that removes it", md(r.Member))
		switch {
		case r.TransferLeadership:
			effect = fmt.Sprintf("one leader change: leadership moves away from %s first (writes pause briefly), then ", md(r.Member)) + effect
		case s.Disruptive:
			// The planner marks the removal of a leader that etcd cannot
			// move away from first.
			effect += fmt.Sprintf("; %s leads and etcd cannot move leadership first, so writes stop until a new leader is elected (about one election timeout)", md(r.Member))
		}
		return impact{true, nil, effect}
	case pa.PostgresAddReplica != nil:
		if added := pa.PostgresAddReplica.Added(); len(added) > 1 {
			names := make([]string, len(added))
			for i, n := range added {
				names[i] = md(n)
			}
			return impact{true, nil, fmt.Sprintf("none expected: the new replicas %s clone from the primary one after another; the members keep serving", strings.Join(names, ", "))}
		}
		return impact{true, nil, fmt.Sprintf("none expected: the new replica %s clones from the primary; the members keep serving", md(pa.PostgresAddReplica.Member))}
	case pa.ExpandStorage != nil:
		return impact{true, nil, fmt.Sprintf("the volume claims grow from %s to %s in place; the step restarts no pod", md(pa.ExpandStorage.From), md(pa.ExpandStorage.To))}
	case pa.ConfigureBackup != nil:
		return impact{true, nil, "none: the runtime changes its backup policy"}
	case pa.EtcdConfigureCompaction != nil:
		return impact{true, nil, "none: the runtime changes how it compacts etcd's history (each compaction is a short pause of the members' writes)"}
	case pa.TakeBackup != nil:
		return impact{true, nil, "none: the runtime takes a backup"}
	case pa.PostgresUpgradeCheck != nil && pa.PostgresUpgradeCheck.Remove:
		return impact{true, nil, fmt.Sprintf("none: the finished pre-flight check Job %s is removed; no member is touched", md(pa.PostgresUpgradeCheck.Job))}
	case pa.PostgresUpgradeCheck != nil:
		return impact{true, nil, fmt.Sprintf("none: Job %s reads the newest backup from the backup store and runs pg\\_upgrade --check on a copy of its own; no member is touched (it uses a node's CPU, memory and a scratch volume the size of a member's)", md(pa.PostgresUpgradeCheck.Job))}
	case pa.EtcdDowngrade != nil:
		return impact{true, nil, etcdDowngradeEffect(pa.EtcdDowngrade)}
	case pa.PostgresSynchronousStandbys != nil:
		return impact{true, nil, fmt.Sprintf("none expected: the synchronous standbys go from %d to %d", pa.PostgresSynchronousStandbys.From, pa.PostgresSynchronousStandbys.To)}
	case pa.PostgresReloadParameters != nil:
		return impact{true, nil, "none: every member reloads its configuration"}
	case pa.PostgresConfigureTLS != nil:
		if pa.PostgresConfigureTLS.To == contract.TLSRequire {
			secret := contract.ServerTLSSecret("<cluster>")
			if c != nil {
				secret = contract.ServerTLSSecret(c.Name)
			}
			return impact{true, nil, "every member reloads its configuration; from then on the servers refuse every connection without TLS: " +
				"clients that connect in plain text fail until they use TLS (libpq's sslmode=verify-full with the CA in the Secret " +
				md(secret) + ", key " + md(contract.TLSKeyCA) + ")"}
		}
		return impact{true, nil, "every member reloads its configuration and starts offering TLS; plain connections are still admitted, " +
			"except the superuser's: a superuser connecting in plain text is refused from then on (over TLS it needs the cluster's client certificate)"}
	case pa.RestrictNetwork != nil:
		n := pa.RestrictNetwork
		return impact{true, nil, "no member restarts; once the NetworkPolicy " + md(n.Policy) + " applies, the members admit only each other, the cluster's runtime " +
			"and pods of the cluster's namespace labelled " + md(n.ClientLabel+"="+contract.ClientLabelValue) + ": every other client is cut off " +
			"(where the cluster's network enforces NetworkPolicies). Label the clients' pods before merging"}
	case pa.HardenRuntime != nil:
		return impact{true, nil, "no member restarts; the runtime's pods (Deployment " + md(pa.HardenRuntime.Deployment) + ") are replaced one at a time. " +
			"While the leading one is replaced, failover and backups wait until the other takes its Lease over once it expires (15 s); a backup under way is cut off, and the new leader takes the missed one at once"}
	case pa.SealBootstrap != nil:
		return impact{true, nil, "none: the rendered config switches from bootstrap to join"}
	case pa.EtcdRecover != nil:
		r := pa.EtcdRecover
		var all []string
		if cluster, ok := contract.MemberCluster(r.Seed); ok {
			for i := range r.Members {
				all = append(all, contract.MemberName(cluster, i))
			}
		}
		return impact{true, all, fmt.Sprintf("the cluster serves nothing now (quorum is lost); the runtime restarts every member pod, %s starts the new cluster, "+
			"and it serves again once it is up; the other members rejoin one at a time", md(r.Seed))}
	}
	return impact{}
}

// memberRestart is the disruption of one member's restart: the kind's
// wording, else the generic one. disruptive is the planner's verdict on
// the step, which the wording never contradicts.
func memberRestart(w Wording, member string, replicas int, c *live.Cluster, disruptive bool) string {
	if replicas <= 1 {
		return "the only member restarts: the cluster is down until it is back"
	}
	if w.Restart != nil {
		if s := w.Restart(member, replicas, roleOf(c, member), disruptive); s != "" {
			return s
		}
	}
	if disruptive {
		return fmt.Sprintf("one of %d members restarts (%s): clients are interrupted until it is back (the summary says how)", replicas, md(member))
	}
	return fmt.Sprintf("one of %d members restarts (%s); its sessions are cut", replicas, md(member))
}

// roleOf is member's role in c; "" when c does not show it.
func roleOf(c *live.Cluster, member string) live.Role {
	if c == nil {
		return ""
	}
	for _, m := range c.Members {
		if m.Name == member && m.Role != live.RoleUnknown {
			return m.Role
		}
	}
	return ""
}

// asPlanned is ", a <role> as planned" when c shows member's role.
func asPlanned(c *live.Cluster, member string) string { return plannedRole(roleOf(c, member)) }

// plannedRole is ", a <role> as planned"; "" for no role.
func plannedRole(r live.Role) string {
	if r == "" {
		return ""
	}
	return fmt.Sprintf(", a %s as planned", md(string(r)))
}

// writeImpact writes the pods the step restarts, in order, the expected
// disruption, and, for a plan that restarts pods in several steps, the
// order across the plan. Nothing for a kind stepImpact does not know.
func writeImpact(b *strings.Builder, w Wording, p plan.Plan, current int, c *live.Cluster) {
	im := stepImpact(w, p.Steps[current], c)
	if !im.known {
		return
	}
	if len(im.restarts) == 0 {
		b.WriteString("- **Pods that restart:** none\n")
	} else {
		fmt.Fprintf(b, "- **Pods that restart, in order:** %s\n", pods(im.restarts))
	}
	fmt.Fprintf(b, "- **Expected disruption:** %s\n", im.effect)
	var across []string
	for i, s := range p.Steps {
		// Roles change along a plan (a switchover): only the order is said.
		for _, pod := range stepImpact(w, s, nil).restarts {
			across = append(across, fmt.Sprintf("%s (step %d)", md(pod), i+1))
		}
	}
	if len(across) > 1 {
		fmt.Fprintf(b, "- **Across the plan, pods restart in this order:** %s\n", strings.Join(across, ", "))
	}
	b.WriteString("\n")
}

func pods(names []string) string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = md(n)
	}
	return strings.Join(out, ", then ")
}
