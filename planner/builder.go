package planner

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/planner/spec"
)

// Result is what a strategy returns for one cluster: the steps to take,
// or the gates it waits on before it can plan, or the rules that refuse
// the change. Refusals win over waits, waits over steps.
type Result struct {
	Steps    []plan.Step
	Waiting  []plan.Gate
	Refusals []plan.Refusal
	// Notes say what the spec asks that no step changes, and why.
	Notes []plan.Note
}

func (r *Result) refuse(rule, field, format string, args ...any) {
	r.Refusals = append(r.Refusals, plan.Refusal{Rule: rule, Field: field, Reason: fmt.Sprintf(format, args...)})
}

func (r *Result) wait(g plan.Gate) {
	g.When = plan.Before
	r.Waiting = append(r.Waiting, g)
}

// add appends a step. Step IDs name what makes a step distinct, so they
// are unique within a plan and stable across re-plans; a duplicate or an
// invalid ID is a planner bug, and silently renaming it would hand the
// publisher the ID of another (perhaps merged) step.
func (r *Result) add(s plan.Step) {
	if !plan.ValidStepID(s.ID) || r.hasID(s.ID) {
		panic(fmt.Sprintf("planner: step ID %q is invalid or not unique in %v", s.ID, r.ids()))
	}
	if s.Gates == nil {
		s.Gates = []plan.Gate{}
	}
	r.Steps = append(r.Steps, s)
}

func (r *Result) ids() []string {
	out := make([]string, len(r.Steps))
	for i, s := range r.Steps {
		out[i] = s.ID
	}
	return out
}

func (r *Result) hasID(id string) bool {
	for _, s := range r.Steps {
		if s.ID == id {
			return true
		}
	}
	return false
}

// quantityID is a quantity in canonical form for a step ID: "20Gi" and
// "21474836480" name the same size, and "+20Gi" the same as "20Gi".
func quantityID(q spec.Quantity) string {
	v, err := q.Parse()
	if err != nil {
		return strings.ToLower(string(q))
	}
	return strings.ToLower(resource.NewQuantity(v.Value(), resource.BinarySI).String())
}

func gate(kind plan.GateKind, when plan.Phase, desc string) plan.Gate {
	return plan.Gate{Kind: kind, When: when, Description: desc}
}

func memberGate(kind plan.GateKind, when plan.Phase, member, desc string) plan.Gate {
	return plan.Gate{Kind: kind, When: when, Member: member, Description: desc}
}

func healthyBefore() plan.Gate {
	return gate(plan.GateClusterHealthy, plan.Before, "every member is ready and the cluster is healthy")
}

func healthyAfter() plan.Gate {
	return gate(plan.GateClusterHealthy, plan.After, "every member is ready and the cluster is healthy")
}

// addWindowGates holds disruptive steps for the spec's maintenance window.
func addWindowGates(c spec.Cluster, steps []plan.Step) {
	w := c.Common().MaintenanceWindow
	if w == nil {
		return
	}
	desc := fmt.Sprintf("the maintenance window is open (%q for %s, %s)", w.Schedule, w.Duration, w.TimeZone)
	for i := range steps {
		if steps[i].Disruptive {
			steps[i].Gates = append([]plan.Gate{gate(plan.GateMaintenanceWindow, plan.Before, desc)}, steps[i].Gates...)
		}
	}
}
