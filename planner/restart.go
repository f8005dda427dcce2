package planner

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/planner/spec"
)

// A rolling restart brings a changed pod template to every member, one at
// a time from the highest ordinal down, as a version upgrade does: the
// first step changes the template (its resources, its revision
// annotation and, for PostgreSQL parameters that need a restart, the
// config) and restarts the top member; each further step lowers the
// partition by one. Nothing a running member uses changes outside these
// steps, so a change of spec.resources never rides in another step's
// pull request.

// restart is one rolling restart being planned.
type restart struct {
	// revision is the template revision the members restart for.
	revision string
	// template is set while the template has yet to change: the first
	// step carries it.
	template *plan.TemplateChange
	// reason says what the restart brings, for summaries.
	reason string
	// config is the PostgreSQL config revision the members load at their
	// restart; empty when the config does not change.
	config string
	// ordinals are the members to restart, highest first.
	ordinals []int
	// primaryFirst restarts the primary before any replica (a hot-standby
	// parameter is being lowered).
	primaryFirst bool
}

// refuseStorageClass refuses a storage class change: a StatefulSet's
// volumeClaimTemplates cannot change and a bound claim keeps its class.
func refuseStorageClass(r *Result, c spec.Cluster, obs *live.Cluster) {
	want, have := c.Common().StorageClass, obs.StatefulSet.StorageClass
	if want == have {
		return
	}
	show := func(s string) string {
		if s == "" {
			return "the cluster default"
		}
		return s
	}
	r.refuse(RuleStorageClassImmutable, "spec.storageClass",
		"the storage class cannot change from %s to %s: Kubernetes keeps a StatefulSet's volumeClaimTemplates and a bound volume's class as they are. Keep %s; to move the data to another class, create a new cluster with spec.restoreFrom a backup of this one",
		show(have), show(want), show(have))
}

// resourcesChange returns the spec's resources when they differ from the
// template's.
func resourcesChange(c spec.Cluster, obs *live.Cluster) (*contract.Resources, bool) {
	want := c.Common().Resources.Contract()
	if spec.SameResources(want, obs.StatefulSet.Resources) {
		return obs.StatefulSet.Resources, false
	}
	return want, true
}

// resumeRestart finds a rolling restart under way: the template's revision
// is set and members below the partition still run another one. It
// returns the members left, highest first.
func resumeRestart(obs *live.Cluster, size int) *restart {
	sts := obs.StatefulSet
	if sts.TemplateRevision == "" || sts.UpdatePartition == 0 {
		return nil
	}
	var left []int
	for _, m := range obs.Members {
		if o := m.Ordinal(); o < min(sts.UpdatePartition, size) && m.TemplateRevision != sts.TemplateRevision {
			left = append(left, o)
		}
	}
	if len(left) == 0 {
		return nil
	}
	slices.Reverse(left)
	return &restart{revision: sts.TemplateRevision, ordinals: left,
		reason: fmt.Sprintf("the pod template of revision %s (resources %s)", sts.TemplateRevision, resourcesText(sts.Resources))}
}

// newRestart plans a restart of every member below size that does not
// run revision already (after a spec reverted mid-restart, the members
// not yet restarted keep theirs).
func newRestart(obs *live.Cluster, size int, t *plan.TemplateChange, reason string) *restart {
	rs := &restart{revision: t.Revision, template: t, reason: reason}
	for ord := size - 1; ord >= 0; ord-- {
		if ord < len(obs.Members) && obs.Members[ord].TemplateRevision == t.Revision {
			continue
		}
		rs.ordinals = append(rs.ordinals, ord)
	}
	if len(rs.ordinals) == 0 {
		// Every member runs the revision already; the step changes only
		// the template and restarts nobody.
		rs.ordinals = []int{size - 1}
	}
	return rs
}

// step is the restart of member ord, as both kinds start it: its kind
// adds the gates after it. The first step of a restart carries the
// template change; members below the lowest one restarted already run the
// revision, so the partition stops there. who names the member's role in
// the summary ("replica ").
func (rs *restart) step(cluster string, ord, replicas int, who string, disruptive bool) plan.Step {
	p := &plan.RestartMemberParams{Member: contract.MemberName(cluster, ord), Ordinal: ord, Partition: ord, Replicas: replicas, Template: rs.template}
	rs.template = nil
	s := plan.Step{
		ID:         fmt.Sprintf("restart-%d-%s", ord, rs.revision),
		Kind:       plan.RestartMember,
		Summary:    fmt.Sprintf("Restart %s%s with %s (StatefulSet partition %d)", who, p.Member, rs.reason, ord),
		Disruptive: disruptive,
		Reversible: true,
		Rollback:   "Set the spec back as it was: cairn restarts the members that already run the new template back to the previous one, one at a time.",
		Gates:      []plan.Gate{healthyBefore()},
		Params:     plan.Params{RestartMember: p},
	}
	if p.Template != nil {
		s.Summary += "; this step changes the pod template, the members after it follow one per step"
	}
	return s
}

// resourcesText describes resources for summaries.
func resourcesText(r *contract.Resources) string {
	if r == nil || r.IsZero() {
		return "no requests or limits"
	}
	var parts []string
	for _, f := range [][2]string{{"cpu request", r.Requests.CPU}, {"memory request", r.Requests.Memory}, {"cpu limit", r.Limits.CPU}, {"memory limit", r.Limits.Memory}} {
		if f[1] != "" {
			parts = append(parts, f[0]+" "+f[1])
		}
	}
	return strings.Join(parts, ", ")
}

// parametersText describes a parameter change for summaries: each changed
// name with its old and new value, sorted.
func parametersText(from, to map[string]string) string {
	var parts []string
	for _, k := range changedParameters(from, to) {
		switch old, now := from[k], to[k]; {
		case old == "":
			parts = append(parts, fmt.Sprintf("%s = %s (was the default)", k, now))
		case now == "":
			parts = append(parts, fmt.Sprintf("%s back to its default (was %s)", k, old))
		default:
			parts = append(parts, fmt.Sprintf("%s %s -> %s", k, old, now))
		}
	}
	return strings.Join(parts, ", ")
}

// changedParameters lists the names whose values differ, sorted.
func changedParameters(from, to map[string]string) []string {
	names := map[string]bool{}
	for k := range from {
		names[k] = true
	}
	for k := range to {
		names[k] = true
	}
	var out []string
	for _, k := range slices.Sorted(maps.Keys(names)) {
		if from[k] != to[k] {
			out = append(out, k)
		}
	}
	return out
}

// imagesChange returns the images the renderer names where they differ
// from those that run, by container name, and says the change; nil when
// nothing differs, when the images are not known, or when a version step
// of this plan changes the template (and brings them) anyway.
func imagesChange(r *Result, obs *live.Cluster, want map[string]string) (map[string]string, string) {
	if slices.ContainsFunc(r.Steps, changesTemplateVersion) {
		return nil, ""
	}
	changed, text := imageDiff(obs, want)
	if len(changed) == 0 {
		return nil, ""
	}
	revision := make(map[string]string, len(changed))
	for name, image := range changed {
		revision["image:"+name] = image
	}
	return revision, "images " + text
}

// imageDiff returns the images of want that differ from those the pod
// template runs, by container name, and says each change ("name old ->
// new", sorted); containers the template does not run, and skip, are
// left out.
func imageDiff(obs *live.Cluster, want map[string]string, skip ...string) (map[string]string, string) {
	changed := map[string]string{}
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(want)) {
		if have, ok := obs.StatefulSet.Images[name]; ok && have != want[name] && !slices.Contains(skip, name) {
			changed[name] = want[name]
			parts = append(parts, fmt.Sprintf("%s %s -> %s", name, have, want[name]))
		}
	}
	return changed, strings.Join(parts, ", ")
}

// changesTemplateVersion: a step that renders the template at a version,
// with the images the renderer names for it.
func changesTemplateVersion(s plan.Step) bool {
	return s.Kind == plan.UpgradeMember || s.Kind == plan.PostgresMajorUpgrade ||
		s.Kind == plan.PostgresAddReplica && s.Params.PostgresAddReplica.Version != ""
}

// revisionInputs are what a template revision hashes besides the
// resources: the restart-only parameters, any changed images, and
// whether the restart brings read-only root filesystems.
func revisionInputs(restartParams, images map[string]string, harden bool) map[string]string {
	out := maps.Clone(restartParams)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, images)
	if harden {
		out["readOnlyRootFilesystem"] = "true"
	}
	return out
}

// hardenChange: the pod template was rendered before cairn gave its
// containers read-only root filesystems, which only a rolling restart
// brings (the base keeps the template as it runs until then).
func hardenChange(obs *live.Cluster) bool { return !obs.StatefulSet.ReadOnlyRoot }

// hardenText says what such a restart brings.
const hardenText = "read-only root filesystems (the containers write only to their volumes)"

// sayImages adds to the first step of the plan that changes the template
// by version the images it brings besides the version's own (a new cairn
// release, another registry): what its pull request changes, it says.
// database names the database container, whose image changes with the
// version the step says.
func sayImages(r *Result, obs *live.Cluster, want map[string]string, database string) {
	i := slices.IndexFunc(r.Steps, changesTemplateVersion)
	if i < 0 {
		return
	}
	if changed, text := imageDiff(obs, want, database, contract.PGUpgradeInitContainer); len(changed) > 0 {
		r.Steps[i].Summary += "; it also brings the images " + text
	}
}
