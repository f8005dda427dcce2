package policies

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/plan"
)

// upgradeKinds are the steps that move a cluster to another version.
var upgradeKinds = []plan.Kind{plan.UpgradeMember, plan.PostgresMajorUpgrade}

// Promotion lets the selected clusters (production, say) take a version
// only after a cluster of the same kind matching After (staging) has run it
// healthy for Soak. A cluster runs a version healthy when every member runs
// it and is ready; it has done so since the last of its members became
// ready. The version is the one the cluster's spec asks for, so the
// intermediate hops of a multi-minor etcd upgrade are covered by the
// staging cluster running the final version.
type Promotion struct {
	PolicyName string
	Selector   Selector
	After      Selector
	Soak       time.Duration
	Now        time.Time
}

// Name implements Policy.
func (p Promotion) Name() string { return p.PolicyName }

// Evaluate implements Policy; promotion needs the fleet in view.
func (p Promotion) Evaluate(Input) plan.Decision { return plan.Decision{} }

// EvaluateFleet implements FleetPolicy.
func (p Promotion) EvaluateFleet(entries []FleetEntry) []plan.Decision {
	// vouchers are the clusters matching After, by kind and the version
	// all their members run healthy, each with since when.
	type voucher struct {
		name  string
		since time.Time
	}
	vouchers := map[[2]string][]voucher{}
	for _, f := range entries {
		if f.Observed == nil || len(f.Observed.Members) == 0 || !p.After.Matches(f.Cluster) {
			continue
		}
		version := f.Observed.Members[0].Version
		if since, ok := healthyAt(f.Observed, version); ok {
			key := [2]string{f.Cluster.Ref().Kind, version}
			vouchers[key] = append(vouchers[key], voucher{f.Cluster.Ref().Name, since})
		}
	}
	out := make([]plan.Decision, len(entries))
	var soaking []voucher
	for i, e := range entries {
		if e.Next == nil || !slices.Contains(upgradeKinds, e.Next.Kind) || !p.Selector.Matches(e.Cluster) {
			continue
		}
		version := e.Cluster.Common().Version
		kind, self := e.Cluster.Ref().Kind, e.Cluster.Ref().Name
		var best voucher
		soaking = soaking[:0]
		for _, v := range vouchers[[2]string{kind, version}] {
			switch {
			case v.name == self:
			case p.Now.Sub(v.since) >= p.Soak:
				if best.name == "" || v.since.Before(best.since) || (v.since.Equal(best.since) && v.name < best.name) {
					best = v
				}
			default:
				soaking = append(soaking, v)
			}
		}
		switch {
		case best.name != "":
			out[i] = plan.Decision{Verdict: plan.Allow, Reason: fmt.Sprintf("%s %s has run %s healthy since %s, longer than the %s soak", kind, best.name, version, best.since.UTC().Format(time.RFC3339), p.Soak)}
		case len(soaking) > 0:
			// The clusters whose soak ends first, at most three.
			slices.SortFunc(soaking, func(a, b voucher) int {
				return cmp.Or(a.since.Compare(b.since), cmp.Compare(a.name, b.name))
			})
			var names []string
			for _, v := range soaking[:min(3, len(soaking))] {
				names = append(names, fmt.Sprintf("%s (since %s; the soak ends at %s)", v.name, v.since.UTC().Format(time.RFC3339), v.since.Add(p.Soak).UTC().Format(time.RFC3339)))
			}
			if len(soaking) > 3 {
				names = append(names, fmt.Sprintf("and %d more", len(soaking)-3))
			}
			out[i] = plan.Decision{Verdict: plan.Hold, Reason: fmt.Sprintf("%s must run healthy for %s on a cluster matching %s first; soaking: %s", version, p.Soak, p.After, strings.Join(names, ", "))}
		default:
			out[i] = plan.Decision{Verdict: plan.Hold, Reason: fmt.Sprintf("no %s matching %s runs %s healthy yet; it must for %s first", kind, p.After, version, p.Soak)}
		}
	}
	return out
}

// healthyAt reports whether every member of c runs version and is ready,
// and since when: the latest time one of them became ready.
func healthyAt(c *live.Cluster, version string) (time.Time, bool) {
	if c == nil || len(c.Members) == 0 {
		return time.Time{}, false
	}
	var since time.Time
	for _, m := range c.Members {
		t := m.ReadySince.Time()
		if m.Version != version || !m.Ready || t.IsZero() {
			return time.Time{}, false
		}
		if t.After(since) {
			since = t
		}
	}
	return since, true
}

// String writes a selector as {k=v, ...} in key order.
func (s Selector) String() string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(s)) {
		parts = append(parts, k+"="+s[k])
	}
	return "{" + strings.Join(parts, ", ") + "}"
}
