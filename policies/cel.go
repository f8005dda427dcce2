package policies

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"
	"github.com/google/cel-go/common/types/ref"

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
	// cost is the most one evaluation may cost, as estimated.
	cost uint64
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
	c := compileExpr(expr)
	if c.err != nil {
		return nil, c.err
	}
	return &Rule{name: name, program: c.program, now: now, selector: sel, cost: c.cost}, nil
}

// compiled is a compiled expression, or why it does not compile.
type compiled struct {
	program cel.Program
	cost    uint64
	err     error
}

func compileExpr(expr string) compiled {
	if len(expr) > 4096 {
		return compiled{err: errors.New("the expression is longer than 4096 characters")}
	}
	ast, iss := celEnv.Compile(expr)
	if iss.Err() != nil {
		return compiled{err: fmt.Errorf("does not compile: %v", iss.Err())}
	}
	out := ast.OutputType()
	if !out.IsExactType(cel.MapType(cel.StringType, cel.StringType)) && !out.IsExactType(cel.MapType(cel.StringType, cel.DynType)) {
		return compiled{err: fmt.Errorf(`must return {"verdict": ..., "message": ...}, returns %s`, out)}
	}
	est, err := celEnv.EstimateCost(ast, estimator{})
	if err != nil {
		return compiled{err: fmt.Errorf("cost cannot be estimated: %v", err)}
	}
	if est.Max > MaxRuleCost {
		return compiled{err: fmt.Errorf("may cost up to %d, the limit is %d; bound its loops", est.Max, MaxRuleCost)}
	}
	prg, err := celEnv.Program(ast, cel.CostLimit(MaxRuleCost), cel.InterruptCheckFrequency(100))
	if err != nil {
		return compiled{err: err}
	}
	return compiled{program: prg, cost: est.Max}
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
	b := &budget{}
	defer b.close()
	return (&ruleEval{in: in, budget: b}).evaluate(r)
}

// budget is what the CEL rules of one evaluation (a step, or every step
// of a plan) share: a deadline and a cost. Once their actual costs add up
// to RepoLimits.MaxCost the rules left hold their step unevaluated: however
// many rules a repo holds, an evaluation costs at most that (and one
// second).
type budget struct {
	ctx    context.Context
	cancel context.CancelFunc
	spent  uint64
}

// deadline starts the shared deadline at the first rule that runs.
func (b *budget) deadline() context.Context {
	if b.ctx == nil {
		b.ctx, b.cancel = context.WithTimeout(context.Background(), time.Second)
	}
	return b.ctx
}

func (b *budget) close() {
	if b.cancel != nil {
		b.cancel()
	}
}

// ruleEval evaluates the rules of a Set on one step within a budget; the
// step's variables are built once, at the first rule that runs.
type ruleEval struct {
	in   Input
	vars map[string]any
	*budget
}

func (e *ruleEval) evaluate(r *Rule) plan.Decision {
	if !r.selector.Matches(e.in.Cluster) {
		return plan.Decision{}
	}
	if e.spent > RepoLimits.MaxCost {
		return plan.Decision{Verdict: plan.Hold, Reason: fmt.Sprintf("the rule was not run: the rules before it cost %d on this plan's steps, past the budget of %d", e.spent, RepoLimits.MaxCost)}
	}
	if e.vars == nil {
		e.vars = map[string]any{"cluster": clusterVars(e.in.Cluster), "step": stepVars(e.in.Step), "observed": observedVars(e.in)}
	}
	val, details, err := r.program.ContextEval(e.deadline(), map[string]any{
		"cluster": e.vars["cluster"], "step": e.vars["step"], "observed": e.vars["observed"], "now": r.now,
	})
	if c := details.ActualCost(); c != nil {
		e.spent += *c
	}
	if err != nil {
		return plan.Decision{Verdict: plan.Hold, Reason: "the rule failed: " + err.Error()}
	}
	return decision(val)
}

// decision reads a rule's result.
func decision(val ref.Val) plan.Decision {
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
