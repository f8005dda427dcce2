package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/cairn-dev/cairn/planner"
	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/gates"
	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/observe"
	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/planner/spec"
	"github.com/cairn-dev/cairn/publish"
	"github.com/cairn-dev/cairn/renderer"
	"github.com/cairn-dev/cairn/runtime/agent"
	"github.com/cairn-dev/cairn/runtime/backup"
	"github.com/cairn-dev/cairn/testbed/gitbed"
)

// A kind cairn does not ship, added the way docs/adding-a-kind.md says:
// its own types per layer (here, in this file) and one row of the table,
// nothing else.
const (
	fakeKind       = "FakeCluster"
	fakeAPIVersion = "fake.example.com/v1"
	fakeDoc        = `apiVersion: fake.example.com/v1
kind: FakeCluster
metadata:
  name: f
  namespace: db
spec:
  version: "1.0"
  members: 1
`
	fakeLive = `apiVersion: cairn.dev/v1alpha1
kind: LiveState
clusters:
  - kind: FakeCluster
    name: f
    statefulSet: {replicas: 1, version: "1.0"}
    members:
      - {name: f-0, version: "1.0", ready: true, role: leader}
`
)

// The spec: its document, defaults and validation.
type fakeCluster struct {
	APIVersion string          `json:"apiVersion" schema:"required"`
	Kind       string          `json:"kind" schema:"required"`
	Metadata   spec.ObjectMeta `json:"metadata" schema:"required"`
	Spec       fakeSpec        `json:"spec" schema:"required"`

	src spec.Source
}

type fakeSpec struct {
	Version string `json:"version" schema:"required" desc:"The version."`
	Members int    `json:"members" schema:"required" desc:"The members."`
}

func newFakeCluster() *fakeCluster {
	return &fakeCluster{Metadata: spec.ObjectMeta{Name: "f", Namespace: "db"}, Spec: fakeSpec{Version: "1.0", Members: 1}}
}

func (c *fakeCluster) Ref() spec.Ref {
	return spec.Ref{APIVersion: fakeAPIVersion, Kind: fakeKind, Name: c.Metadata.Name, Namespace: c.Metadata.Namespace}
}
func (c *fakeCluster) Source() *spec.Source { return &c.src }
func (c *fakeCluster) Common() spec.Common {
	return spec.Common{Members: c.Spec.Members, Version: c.Spec.Version, Storage: "1Gi"}
}
func (c *fakeCluster) SetDefaults() {}
func (c *fakeCluster) Validate(v *spec.Validator) {
	v.Meta(c.Metadata)
	if c.Spec.Members < 1 {
		v.Fail("spec.members", "at least 1")
	}
}

var fakeSpecKind = spec.Kind{Name: fakeKind, APIVersion: fakeAPIVersion, New: func() spec.Document { return &fakeCluster{} }}

// The planner's strategy.
type fakeStrategy struct{}

func (fakeStrategy) Kind() string { return fakeKind }
func (fakeStrategy) Plan(c spec.Cluster, obs *live.Cluster, _ planner.Want) planner.Result {
	if obs != nil {
		return planner.Result{}
	}
	return planner.Result{Steps: []plan.Step{fakeCreate()}}
}

func fakeCreate() plan.Step {
	return plan.Step{
		ID: "create", Kind: plan.CreateCluster, Summary: "Create f", Reversible: true,
		Gates:  []plan.Gate{{Kind: plan.GateClusterHealthy, When: plan.After, Description: "f is healthy"}},
		Params: plan.Params{CreateCluster: &plan.CreateClusterParams{Version: "1.0", Members: 1, Storage: "1Gi"}},
	}
}

// The renderer's kind.
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

// The observer's kind.
type fakeObserver struct{}

func (fakeObserver) Kind() string      { return fakeKind }
func (fakeObserver) Container() string { return "fake" }
func (fakeObserver) Status(map[string]string, *live.Cluster) (observe.MemberFunc, error) {
	return func(_ *corev1.Pod, m *live.Member) { m.Role = live.RoleLeader }, nil
}

// The runtime's keeper, with metrics of its own.
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

// The instance manager's subcommand, restore, pull request wording and
// status lines.
func fakeInstance() []*cobra.Command {
	return []*cobra.Command{{Use: "fake", Run: func(*cobra.Command, []string) {}}}
}

var errFakeRestore = errors.New("the fake kind's restore check ran")

var fakeRestorer = restorer{
	check: func(restoreOptions) error { return errFakeRestore },
	run:   func(context.Context, io.Writer, backup.Store, backup.Manifest, restoreOptions) error { return nil },
}

var fakeWording = publish.Wording{ReleaseNotes: func(v string) (string, string) { return "Fake " + v, "https://fake.example.com/" + v }}

var fakeStatus = kindStatus{
	lags: func(status map[string]string) (map[string]string, error) {
		return map[string]string{"f-0": status["fake"]}, nil
	},
	archive: func(*backupView) string { return "fake archive: none\n" },
}

// fakeRow is the fake kind's row of the table: every column set.
func fakeRow() kind {
	return kind{
		name:     fakeKind,
		spec:     fakeSpecKind,
		roles:    live.KindRoles{Roles: []live.Role{live.RoleLeader, live.RoleFollower}, Leading: live.RoleLeader},
		planner:  fakeStrategy{},
		renderer: fakeRenderer{},
		observer: fakeObserver{},
		wording:  fakeWording,
		status:   fakeStatus,
		instance: fakeInstance,
		restore:  fakeRestorer,
		runtime:  func() kindRuntime { return fakeRuntime{} },
	}
}

// withRow adds a row to the table for one test.
func withRow(t *testing.T, row kind) {
	saved := kinds
	kinds = append(slices.Clone(kinds), row)
	t.Cleanup(func() { kinds = saved })
}

func withFakeKind(t *testing.T) { withRow(t, fakeRow()) }

// fakeSeams are the columns of the row, each with a check that the layer
// it feeds reaches the kind: with the column the check passes; without
// it the layer refuses the kind, and the check fails. Every column of
// the kind struct but its name is here (TestEveryColumnIsASeam).
var fakeSeams = []struct {
	column string
	clear  func(*kind)
	check  func(t *testing.T) error
}{
	{"spec", func(k *kind) { k.spec = spec.Kind{} }, checkFakeSpec},
	{"roles", func(k *kind) { k.roles = live.KindRoles{} }, checkFakeRoles},
	{"planner", func(k *kind) { k.planner = nil }, checkFakePlanner},
	{"renderer", func(k *kind) { k.renderer = nil }, checkFakeRenderer},
	{"observer", func(k *kind) { k.observer = nil }, checkFakeObserver},
	{"wording", func(k *kind) { k.wording = publish.Wording{} }, checkFakeWording},
	{"status", func(k *kind) { k.status = kindStatus{} }, checkFakeStatus},
	{"instance", func(k *kind) { k.instance = nil }, checkFakeInstance},
	{"restore", func(k *kind) { k.restore = restorer{} }, checkFakeRestore},
	{"runtime", func(k *kind) { k.runtime = nil }, checkFakeKeeper},
}

func checkFakeSpec(*testing.T) error {
	cs, err := specKinds().Decode("f.yaml", []byte(fakeDoc))
	if err != nil {
		return err
	}
	if len(cs) != 1 || cs[0].Ref().Kind != fakeKind || cs[0].Common().Version != "1.0" {
		return fmt.Errorf("decoded %v", cs)
	}
	if _, err := specKinds().Schema(fakeKind); err != nil {
		return err
	}
	return nil
}

// The live state describes it, and the cluster-health gate judges it by
// its roles.
func checkFakeRoles(*testing.T) error {
	snap, err := liveKinds().Decode("live.yaml", []byte(fakeLive))
	if err != nil {
		return err
	}
	obs := snap.Find(fakeKind, "f")
	if obs == nil {
		return errors.New("the live state has no fake cluster")
	}
	if ok, why := gates.Pass(gates.For(liveKinds()).After(fakeCreate(), newFakeCluster(), obs, time.Time{})); !ok {
		return errors.New(why)
	}
	return nil
}

// Planned by its strategy, with what every kind shares (IDs, fingerprints).
func checkFakePlanner(*testing.T) error {
	p := newPlanner().PlanCluster(newFakeCluster(), nil, nil)
	if p.Status != plan.StatusPlanned || len(p.Steps) != 1 || p.Steps[0].ID != "create" || p.ID == "" {
		return fmt.Errorf("plan = %+v", p)
	}
	return p.Validate()
}

// Rendered by its renderer, and built with kustomize.
func checkFakeRenderer(*testing.T) error {
	r, err := newRenderer(renderer.Options{})
	if err != nil {
		return err
	}
	p := plan.Plan{Cluster: plan.ClusterRef{APIVersion: fakeAPIVersion, Kind: fakeKind, Name: "f", Namespace: "db"},
		Status: plan.StatusPlanned, Steps: []plan.Step{fakeCreate()}}
	tree, built, err := r.Render(newFakeCluster(), p, "create")
	if err != nil {
		return err
	}
	if !strings.Contains(string(tree["rendered/f/steps/create/configmap.yaml"]), `version: "1.0"`) || !strings.Contains(string(built.Selected), "kind: ConfigMap") {
		return fmt.Errorf("the create step's overlay has no rendered object: %v", slices.Sorted(maps.Keys(tree)))
	}
	return nil
}

// Observed through client-go: its container's version, its members'
// roles.
func checkFakeObserver(*testing.T) error {
	labels := map[string]string{"app": "f"}
	one := int32(1)
	client := fake.NewClientset(
		&appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "f", Namespace: "db"}, Spec: appsv1.StatefulSetSpec{
			Replicas: &one, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "fake", Image: "fake:1.0"}}}}}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "f-0", Namespace: "db", Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "fake", Image: "fake:1.0"}}}},
	)
	o := &observe.Observer{Client: client, Namespace: "db", Kinds: observeKinds()}
	snap, err := o.Observe(context.Background(), []spec.Cluster{newFakeCluster()})
	if err != nil {
		return err
	}
	c := snap.Find(fakeKind, "f")
	if c == nil || c.StatefulSet.Version != "1.0" || len(c.Members) != 1 || c.Members[0].Role != live.RoleLeader {
		return fmt.Errorf("observed %+v", c)
	}
	return nil
}

// Its pull requests say what its wording says.
func checkFakeWording(*testing.T) error {
	up := plan.Step{ID: "upgrade-f-0", Kind: plan.UpgradeMember, Summary: "Upgrade f-0",
		Params: plan.Params{UpgradeMember: &plan.UpgradeMemberParams{Member: "f-0", From: "0.9", To: "1.0", Replicas: 1}}}
	p := plan.Plan{Cluster: plan.ClusterRef{APIVersion: fakeAPIVersion, Kind: fakeKind, Name: "f"}, Status: plan.StatusPlanned, Steps: []plan.Step{up}}
	if body := publish.Body(publish.BodyInput{Plan: p, SpecCommit: "abc", Wording: wordings()[fakeKind]}); !strings.Contains(body, "https://fake.example.com/1.0") {
		return fmt.Errorf("the body has no release notes:\n%s", body)
	}
	return nil
}

// cairn status shows its members' lag and its archive line.
func checkFakeStatus(*testing.T) error {
	client := fake.NewClientset(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: contract.StatusConfigMap("f"), Namespace: "db"},
		Data: map[string]string{"fake": "behind"}})
	lags, err := readLags(context.Background(), client, "db", []spec.Cluster{newFakeCluster()})
	if err != nil {
		return err
	}
	var b strings.Builder
	writeBackup(&b, clusterStatus{Kind: fakeKind, Observed: true})
	if lags["f"]["f-0"] != "behind" || !strings.Contains(b.String(), "fake archive") {
		return fmt.Errorf("lags %v, backup lines %q", lags, b.String())
	}
	return nil
}

// Its instance manager is under cairn instance, in a tree built at start.
func checkFakeInstance(*testing.T) error {
	root := newRoot(io.Discard, io.Discard)
	if c, _, err := root.Find([]string{"instance", "fake"}); err != nil || c.Name() != "fake" {
		return fmt.Errorf("cairn instance has no fake subcommand (%v)", err)
	}
	return nil
}

// cairn restore --kind FakeCluster reaches its restorer.
func checkFakeRestore(t *testing.T) error {
	_, _, errOut := cairn(t, "restore", "--location", "file:///nonexistent", "--cluster", "f", "--kind", fakeKind, "--data-dir", t.TempDir()+"/data")
	if !strings.Contains(errOut, errFakeRestore.Error()) {
		return fmt.Errorf("cairn restore: %s", errOut)
	}
	return nil
}

// cairn runtime --kind FakeCluster picks its keeper.
func checkFakeKeeper(*testing.T) error {
	_, err := runtimeKind(fakeKind)
	return err
}

func TestANewKindIsOneRowOfTheTable(t *testing.T) {
	withFakeKind(t)
	for _, s := range fakeSeams {
		t.Run(s.column, func(t *testing.T) {
			if err := s.check(t); err != nil {
				t.Error(err)
			}
		})
	}

	// Published with the local provider: cairn propose opens its create
	// step's pull request.
	bare := gitbed.New(t, map[string]string{"clusters/f.yaml": fakeDoc})
	if code, _, errOut := cairn(t, "propose", "--repo", bare); code != exitOK {
		t.Fatalf("cairn propose: exit %d: %s", code, errOut)
	}
	if _, list, _ := cairn(t, "pr", "list", "--repo", bare); !strings.Contains(list, publish.Branch("f", "create")) {
		t.Errorf("no pull request for the fake kind's create step:\n%s", list)
	}

	// Its runtime registers its kind's metrics only.
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

// Each column is what reaches its layer: without it, that layer refuses
// the kind (and never panics).
func TestEachColumnOfTheRowIsASeam(t *testing.T) {
	for _, s := range fakeSeams {
		t.Run(s.column, func(t *testing.T) {
			row := fakeRow()
			s.clear(&row)
			withRow(t, row)
			if err := s.check(t); err == nil {
				t.Errorf("the layer of %s reached the fake kind without the row's column", s.column)
			}
		})
	}
}

// The count docs/adding-a-kind.md gives: a kind registers once per
// column of the table's row, and every column has a seam check above.
func TestEveryColumnIsASeam(t *testing.T) {
	row := reflect.ValueOf(fakeRow())
	var columns []string
	for i := range row.NumField() {
		f := row.Type().Field(i)
		if row.Field(i).IsZero() {
			t.Errorf("the fake row leaves %s unset", f.Name)
		}
		if f.Name != "name" {
			columns = append(columns, f.Name)
		}
	}
	var checked []string
	for _, s := range fakeSeams {
		checked = append(checked, s.column)
	}
	slices.Sort(columns)
	slices.Sort(checked)
	if !slices.Equal(columns, checked) {
		t.Errorf("the row's columns %v, the seams checked %v: each column needs a check", columns, checked)
	}
}

// Without its row, every layer refuses the kind by name.
func TestAKindWithoutARowIsRefused(t *testing.T) {
	c := newFakeCluster()
	p := newPlanner().PlanCluster(c, nil, nil)
	if p.Status != plan.StatusRefused || p.Refusals[0].Rule != planner.RuleUnknownKind || !strings.Contains(p.Refusals[0].Reason, fakeKind) {
		t.Errorf("plan = %+v", p)
	}
	if _, err := runtimeKind(fakeKind); err == nil || !strings.Contains(err.Error(), fakeKind) {
		t.Errorf("runtime kind: %v", err)
	}
	if _, err := specKinds().Decode("f.yaml", []byte(fakeDoc)); err == nil || !strings.Contains(err.Error(), fakeKind) {
		t.Errorf("decode: %v", err)
	}
	if _, err := liveKinds().Decode("live.yaml", []byte(fakeLive)); err == nil || !strings.Contains(err.Error(), fakeKind) {
		t.Errorf("live state: %v", err)
	}
}
