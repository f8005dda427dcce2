package main

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/cairn-dev/cairn/planner"
	"github.com/cairn-dev/cairn/planner/gates"
	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/observe"
	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/planner/spec"
	"github.com/cairn-dev/cairn/renderer"
	"github.com/cairn-dev/cairn/runtime/agent"
	"github.com/cairn-dev/cairn/runtime/backup"
)

// A kind cairn does not ship, added the way docs/adding-a-kind.md says:
// its own types per layer and one row of the table, nothing else.
const fakeKind = "FakeCluster"

type fakeCluster struct{ src spec.Source }

func (c *fakeCluster) Ref() spec.Ref {
	return spec.Ref{APIVersion: "fake.example.com/v1", Kind: fakeKind, Name: "f", Namespace: "db"}
}
func (c *fakeCluster) Source() *spec.Source { return &c.src }
func (c *fakeCluster) Common() spec.Common  { return spec.Common{Version: "1.0", Storage: "1Gi"} }

type fakeStrategy struct{}

func (fakeStrategy) Kind() string { return fakeKind }
func (fakeStrategy) Plan(c spec.Cluster, obs *live.Cluster, _ planner.Want) planner.Result {
	if obs != nil {
		return planner.Result{}
	}
	return planner.Result{Steps: []plan.Step{{
		ID: "create", Kind: plan.CreateCluster, Summary: "Create f", Reversible: true,
		Gates:  []plan.Gate{{Kind: plan.GateClusterHealthy, When: plan.After, Description: "f is healthy"}},
		Params: plan.Params{CreateCluster: &plan.CreateClusterParams{Version: "1.0", Members: 1, Storage: "1Gi"}},
	}}}
}

type fakeRenderer struct{}

func (fakeRenderer) Kind() string { return fakeKind }
func (fakeRenderer) Objects(c spec.Cluster, in renderer.Input) ([]renderer.Object, error) {
	cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: c.Ref().Name}, Data: map[string]string{"version": in.Settings.Version}}
	return []renderer.Object{{File: "configmap.yaml", Obj: cm}}, nil
}
func (fakeRenderer) ApplyStep(s renderer.Settings, _ spec.Cluster, _ plan.Step) (renderer.Settings, error) {
	return s, nil
}

type fakeObserver struct{}

func (fakeObserver) Kind() string      { return fakeKind }
func (fakeObserver) Container() string { return "fake" }
func (fakeObserver) Status(map[string]string, *live.Cluster) (observe.MemberFunc, error) {
	return func(*corev1.Pod, *live.Member) {}, nil
}

type fakeKeeper struct{}

func (fakeKeeper) Pass(context.Context) error { return nil }
func (fakeKeeper) BackupSource(context.Context) (backup.Source, string, error) {
	return nil, fakeKind, nil
}
func (fakeKeeper) Interval() time.Duration { return time.Second }

var fakeMetric = prometheus.NewGauge(prometheus.GaugeOpts{Name: "cairn_fake_up"})

// fakeRuntime is the fake kind's part of `cairn runtime`: no flags.
type fakeRuntime struct{}

func (fakeRuntime) addFlags(*pflag.FlagSet) {}

func (fakeRuntime) keeper(_ kubernetes.Interface, cfg agent.Config) (agent.Keeper, error) {
	if cfg.Metrics != nil {
		if err := cfg.Metrics.Register(fakeMetric); err != nil {
			return nil, err
		}
	}
	return fakeKeeper{}, nil
}

// withFakeKind adds the fake kind's row to the table for one test.
func withFakeKind(t *testing.T) {
	saved := kinds
	kinds = append(slices.Clone(kinds), kind{
		name:     fakeKind,
		planner:  fakeStrategy{},
		renderer: fakeRenderer{},
		observer: fakeObserver{},
		runtime:  func() kindRuntime { return fakeRuntime{} },
	})
	t.Cleanup(func() { kinds = saved })
}

func TestANewKindIsOneRowOfTheTable(t *testing.T) {
	withFakeKind(t)
	c := &fakeCluster{}

	// Planned by its strategy, with what every kind shares (IDs, fingerprints).
	l := newPlanner().Plan([]spec.Cluster{c}, nil, nil)
	p := l.Plans[0]
	if p.Status != plan.StatusPlanned || len(p.Steps) != 1 || p.Steps[0].ID != "create" || p.ID == "" {
		t.Fatalf("plan = %+v", p)
	}
	if err := p.Validate(); err != nil {
		t.Fatalf("the plan does not validate: %v", err)
	}

	// Rendered by its renderer, and built with kustomize.
	r, err := newRenderer(renderer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tree, _, err := r.Render(c, p, "create")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(tree["rendered/f/steps/create/configmap.yaml"]), "version: \"1.0\"") {
		t.Errorf("the create step's overlay has no rendered object: %v", slices.Sorted(maps.Keys(tree)))
	}

	// The gates: the cluster-health gate fails closed for a kind whose
	// health cairn cannot judge, however it looks.
	obs := &live.Cluster{Kind: fakeKind, Name: "f", StatefulSet: live.StatefulSet{Replicas: 1},
		Members: []live.Member{{Name: "f-0", Ready: true, Role: live.RoleLeader}}}
	if ok, why := gates.Pass(gates.After(p.Steps[0], c, obs, time.Time{})); ok || why == "" {
		t.Errorf("the health gate of an unknown kind passed (%q)", why)
	}

	// Its observer is among the observer's kinds.
	if !slices.ContainsFunc(observeKinds(), func(k observe.Kind) bool { return k.Kind() == fakeKind }) {
		t.Error("the observer has no fake kind")
	}

	// cairn runtime --kind FakeCluster picks its keeper, with its metrics only.
	reg := runtimeRegistry(t, fakeKind, "f")
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range families {
		names = append(names, f.GetName())
	}
	if !slices.Contains(names, "cairn_fake_up") || slices.ContainsFunc(names, func(n string) bool {
		return strings.HasPrefix(n, "cairn_etcd_") || strings.HasPrefix(n, "cairn_postgres_")
	}) {
		t.Errorf("the fake kind's runtime exports %v", names)
	}
}

// Without its row, every layer refuses the kind by name.
func TestAKindWithoutARowIsRefused(t *testing.T) {
	c := &fakeCluster{}
	p := newPlanner().PlanCluster(c, nil, nil)
	if p.Status != plan.StatusRefused || p.Refusals[0].Rule != planner.RuleUnknownKind || !strings.Contains(p.Refusals[0].Reason, fakeKind) {
		t.Errorf("plan = %+v", p)
	}
	if _, err := runtimeKind(fakeKind); err == nil || !strings.Contains(err.Error(), fakeKind) {
		t.Errorf("runtime kind: %v", err)
	}
}
