package policies

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cairn-dev/cairn/planner/spec"
	"github.com/cairn-dev/cairn/planner/spec/strictyaml"
)

// The apiVersion and kind of a policy file.
const (
	APIVersion = "cairn.dev/v1alpha1"
	Kind       = "Policy"
)

// File is one policy document, kept in the GitOps repo under policies/.
type File struct {
	APIVersion string     `json:"apiVersion"`
	Kind       string     `json:"kind"`
	Metadata   FileMeta   `json:"metadata"`
	Spec       PolicySpec `json:"spec"`
}

// FileMeta names a policy.
type FileMeta struct {
	Name string `json:"name"`
}

// PolicySpec is what a policy decides.
type PolicySpec struct {
	// Selector picks the clusters the policy applies to by their labels;
	// empty applies it to every cluster.
	Selector map[string]string `json:"selector,omitempty"`
	// MaintenanceWindow holds disruptive steps outside the window.
	MaintenanceWindow *spec.MaintenanceWindow `json:"maintenanceWindow,omitempty"`
	// BackupFreshness holds steps of the given kinds until the last
	// successful backup is younger than MaxAge.
	BackupFreshness *BackupFreshness `json:"backupFreshness,omitempty"`
	// Concurrency limits how many of the selected clusters may have a
	// disruptive change in flight at once.
	Concurrency *ConcurrencySpec `json:"concurrency,omitempty"`
	// Promotion lets the selected clusters take a version only after a
	// cluster matching After ran it healthy for Soak.
	Promotion *PromotionSpec `json:"promotion,omitempty"`
	// AutoMerge lets cairn merge the selected clusters' steps of the
	// given kinds itself once their gates pass.
	AutoMerge *AutoMergeSpec `json:"autoMerge,omitempty"`
	// Rules are CEL expressions deciding on each step.
	Rules []RuleSpec `json:"rules,omitempty"`
}

// PromotionSpec configures the promotion-order policy.
type PromotionSpec struct {
	// After selects the clusters that take a version first, by labels.
	After map[string]string `json:"after"`
	// Soak is how long one of them must have run the version healthy.
	Soak spec.Duration `json:"soak"`
}

// ConcurrencySpec configures the concurrency policy.
type ConcurrencySpec struct {
	// MaxInFlight is the most clusters with a disruptive change in flight,
	// at least 1.
	MaxInFlight int `json:"maxInFlight"`
}

// BackupFreshness configures the backup freshness policy.
type BackupFreshness struct {
	MaxAge spec.Duration `json:"maxAge"`
	// Kinds are the step kinds it applies to; empty means major upgrades
	// and scale-ins.
	Kinds []string `json:"kinds,omitempty"`
}

// RuleSpec is one CEL rule.
type RuleSpec struct {
	Name string `json:"name"`
	// Expression returns {"verdict": "allow"|"hold"|"deny", "message": ...}.
	Expression string `json:"expression"`
}

// build checks a decoded file and makes its policies.
func (l *loader) build(f *File, fail func(path, format string, args ...any)) Set {
	now := l.now
	if f.APIVersion != APIVersion || f.Kind != Kind {
		fail("", "apiVersion and kind must be %q and %q", APIVersion, Kind)
		return nil
	}
	if f.Metadata.Name == "" {
		fail("metadata.name", "a policy needs a name")
		return nil
	}
	sel := selector(f.Spec.Selector)
	var set Set
	if w := f.Spec.MaintenanceWindow; w != nil {
		if p, ok := buildWindow(f.Metadata.Name, w, sel, now, fail); ok {
			set = append(set, p)
		}
	}
	if b := f.Spec.BackupFreshness; b != nil {
		set = append(set, buildFreshness(f.Metadata.Name, b, sel, now, fail))
	}
	if c := f.Spec.Concurrency; c != nil {
		if c.MaxInFlight < 1 {
			fail("spec.concurrency.maxInFlight", "must be at least 1, got %d", c.MaxInFlight)
		} else {
			set = append(set, Concurrency{PolicyName: f.Metadata.Name + "/concurrency", Max: c.MaxInFlight, Selector: sel})
		}
	}
	if p := f.Spec.Promotion; p != nil {
		soak, err := p.Soak.Parse()
		switch {
		case len(p.After) == 0:
			fail("spec.promotion.after", "needs the labels of the clusters that go first, such as {environment: staging}")
		case err != nil:
			fail("spec.promotion.soak", "must be a duration such as 24h")
		default:
			set = append(set, Promotion{PolicyName: f.Metadata.Name + "/promotion", Selector: sel, After: selector(p.After), Soak: soak, Now: now})
		}
	}
	if a := f.Spec.AutoMerge; a != nil {
		if p, ok := buildAutoMerge(f.Metadata.Name, a, sel, fail); ok {
			set = append(set, p)
		}
	}
	for i, r := range f.Spec.Rules {
		rule, ok := l.rule(f.Metadata.Name+"/"+r.Name, r.Expression, sel, fmt.Sprintf("spec.rules[%d]", i), fail)
		if !ok {
			break
		}
		if rule != nil {
			set = append(set, rule)
		}
	}
	return set
}

func buildWindow(name string, w *spec.MaintenanceWindow, sel Selector, now time.Time, fail func(path, format string, args ...any)) (Policy, bool) {
	if w.TimeZone == "" {
		w.TimeZone = spec.DefaultTimeZone
	}
	if _, err := time.LoadLocation(w.TimeZone); err != nil {
		fail("spec.maintenanceWindow.timeZone", "%s is not an IANA time zone", strictyaml.Quote(w.TimeZone))
		return nil, false
	}
	return Window{PolicyName: name + "/window", Window: w, Now: now, Selector: sel}, true
}

func buildFreshness(name string, b *BackupFreshness, sel Selector, now time.Time, fail func(path, format string, args ...any)) Policy {
	maxAge, err := b.MaxAge.Parse()
	if err != nil {
		fail("spec.backupFreshness.maxAge", "must be a duration such as 6h")
	}
	for i, k := range b.Kinds {
		if !slices.Contains(stepKinds(), k) {
			fail(fmt.Sprintf("spec.backupFreshness.kinds[%d]", i), "unknown step kind %s; valid: %s", strictyaml.Quote(k), strings.Join(stepKinds(), ", "))
		}
	}
	return Freshness{PolicyName: name + "/backup-freshness", MaxAge: maxAge, Kinds: b.Kinds, Now: now, Selector: sel}
}

// Selector matches clusters by their labels.
type Selector map[string]string

func selector(m map[string]string) Selector { return Selector(m) }

// Matches reports whether every label of the selector is on the cluster.
func (s Selector) Matches(c spec.Cluster) bool {
	labels := clusterLabels(c)
	for k, v := range s {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func clusterLabels(c spec.Cluster) map[string]string { return c.Common().Labels }
