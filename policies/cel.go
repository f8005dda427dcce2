package policies

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"

	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/planner/spec"
)

// MaxRuleCost bounds a rule's cost, estimated when it is loaded and
// enforced when it runs (CEL cost units, as Kubernetes admission rules).
const MaxRuleCost = 100_000

// Rule is a custom rule in CEL, the language of Kubernetes admission
// policies. It sees:
//
//	cluster   {"kind", "name", "namespace", "labels", "version"}
//	step      {"id", "kind", "summary", "disruptive", "reversible"}
//	observed  {"members": int, "ready": int, "lastBackup": timestamp or null}
//	now       timestamp
//
// and returns {"verdict": "allow" | "hold" | "deny", "message": "..."}.
type Rule struct {
	name     string
	program  cel.Program
	now      time.Time
	selector Selector
}

var celEnv = func() *cel.Env {
	env, err := cel.NewEnv(
		cel.Variable("cluster", cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable("step", cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable("observed", cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable("now", cel.TimestampType),
	)
	if err != nil {
		panic(fmt.Sprintf("policies: CEL environment: %v", err))
	}
	return env
}()

// CompileRule compiles and type-checks a rule, and refuses one whose
// estimated cost may exceed MaxRuleCost.
func CompileRule(name, expr string, now time.Time, sel Selector) (*Rule, error) {
	if len(expr) > 4096 {
		return nil, errors.New("the expression is longer than 4096 characters")
	}
	ast, iss := celEnv.Compile(expr)
	if iss.Err() != nil {
		return nil, fmt.Errorf("does not compile: %v", iss.Err())
	}
	out := ast.OutputType()
	if !out.IsExactType(cel.MapType(cel.StringType, cel.StringType)) && !out.IsExactType(cel.MapType(cel.StringType, cel.DynType)) {
		return nil, fmt.Errorf(`must return {"verdict": ..., "message": ...}, returns %s`, out)
	}
	est, err := celEnv.EstimateCost(ast, estimator{})
	if err != nil {
		return nil, fmt.Errorf("cost cannot be estimated: %v", err)
	}
	if est.Max > MaxRuleCost {
		return nil, fmt.Errorf("may cost up to %d, the limit is %d; bound its loops", est.Max, MaxRuleCost)
	}
	prg, err := celEnv.Program(ast, cel.CostLimit(MaxRuleCost), cel.InterruptCheckFrequency(100))
	if err != nil {
		return nil, err
	}
	return &Rule{name: name, program: prg, now: now, selector: sel}, nil
}

// estimator bounds the sizes CEL cannot know: labels and strings are
// small.
type estimator struct{}

func (estimator) EstimateSize(checker.AstNode) *checker.SizeEstimate {
	return &checker.SizeEstimate{Min: 0, Max: 64}
}

func (estimator) EstimateCallCost(string, string, *checker.AstNode, []checker.AstNode) *checker.CallEstimate {
	return nil
}

// Name implements Policy.
func (r *Rule) Name() string { return r.name }

// Evaluate implements Policy. A rule that fails when it runs holds the
// step with the error: a broken rule never lets a step through.
func (r *Rule) Evaluate(in Input) plan.Decision {
	if !r.selector.Matches(in.Cluster) {
		return plan.Decision{}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	val, _, err := r.program.ContextEval(ctx, map[string]any{
		"cluster": clusterVars(in.Cluster), "step": stepVars(in.Step), "observed": observedVars(in), "now": r.now,
	})
	if err != nil {
		return plan.Decision{Verdict: plan.Hold, Reason: "the rule failed: " + err.Error()}
	}
	native, err := val.ConvertToNative(reflect.TypeFor[map[string]any]())
	if err != nil {
		return plan.Decision{Verdict: plan.Hold, Reason: "the rule returned " + val.Type().TypeName() + ", not a map"}
	}
	m := native.(map[string]any)
	verdict, _ := m["verdict"].(string)
	message, _ := m["message"].(string)
	switch verdict {
	case "allow":
		return plan.Decision{Verdict: plan.Allow, Reason: message}
	case "hold":
		return plan.Decision{Verdict: plan.Hold, Reason: message}
	case "deny":
		return plan.Decision{Verdict: plan.Deny, Reason: message}
	}
	return plan.Decision{Verdict: plan.Hold, Reason: fmt.Sprintf("the rule returned the verdict %q; it must be allow, hold or deny", verdict)}
}

func clusterVars(c spec.Cluster) map[string]any {
	ref, labels := c.Ref(), map[string]any{}
	for k, v := range clusterLabels(c) {
		labels[k] = v
	}
	return map[string]any{"kind": ref.Kind, "name": ref.Name, "namespace": ref.Namespace, "labels": labels, "version": c.Common().Version}
}

func stepVars(s plan.Step) map[string]any {
	return map[string]any{"id": s.ID, "kind": string(s.Kind), "summary": s.Summary, "disruptive": s.Disruptive, "reversible": s.Reversible}
}

func observedVars(in Input) map[string]any {
	o := map[string]any{"members": int64(0), "ready": int64(0), "lastBackup": nil}
	if in.Observed == nil {
		return o
	}
	ready := 0
	for _, m := range in.Observed.Members {
		if m.Ready {
			ready++
		}
	}
	o["members"], o["ready"] = int64(len(in.Observed.Members)), int64(ready)
	if b := in.Observed.Backup; b != nil && b.LastSuccessful != "" {
		o["lastBackup"] = b.LastSuccessful.Time()
	}
	return o
}
