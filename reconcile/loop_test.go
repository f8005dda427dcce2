package reconcile

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/planner/spec"
	"github.com/cairn-dev/cairn/policies"
	"github.com/cairn-dev/cairn/publish"
	"github.com/cairn-dev/cairn/publish/gitrepo"
	"github.com/cairn-dev/cairn/renderer"
	"github.com/cairn-dev/cairn/testbed/gitbed"
)

// kvSpec is a spec file of the repo: the loop only loads it and hands it
// to the (fake) planner.
const kvSpec = "apiVersion: etcd.database.coreos.com/v1beta2\nkind: EtcdCluster\nmetadata:\n  name: kv\nspec:\n  size: 3\n  version: \"3.7.3\"\n"

// fakes stand in for what cmd/cairn wires: a planner that plans the steps
// of next for every cluster, a renderer of one file per step, and gates
// whose "after" answer the test sets.
type fakes struct {
	next      []string
	fp        string
	afterPass bool
	after     []string // the steps whose "after" gates were checked
	// failRender names a cluster whose rendering fails.
	failRender string
	// onRender, when set, runs before a cluster's tree is rendered.
	onRender func(cluster string)
	// refuse names a cluster whose plan a rule refuses.
	refuse string
}

func (f *fakes) Plan(desired []spec.Cluster, _ *live.Snapshot, _ policies.Set) plan.List {
	var l plan.List
	for _, c := range desired {
		p := plan.Plan{Cluster: plan.ClusterRef{Kind: c.Ref().Kind, Name: c.Ref().Name}, ID: "plan-" + strings.Join(f.next, "-"),
			SpecFingerprint: f.fp, Status: plan.StatusPlanned}
		for _, id := range f.next {
			p.Steps = append(p.Steps, plan.Step{ID: id, Kind: "TestStep", Summary: "step " + id, Reversible: true})
		}
		if len(p.Steps) == 0 {
			p.Status = plan.StatusConverged
		}
		if c.Ref().Name == f.refuse {
			p.Status, p.Steps = plan.StatusRefused, nil
			p.Refusals = []plan.Refusal{{Rule: "size-shrink", Field: "spec.size", Reason: "size 3 to 1 loses quorum"}}
		}
		l.Plans = append(l.Plans, p)
	}
	return l
}

func (f *fakes) Render(c spec.Cluster, p plan.Plan, step string) (renderer.Tree, renderer.Built, error) {
	if f.onRender != nil {
		f.onRender(c.Ref().Name)
	}
	if c.Ref().Name == f.failRender {
		return nil, renderer.Built{}, errors.New("the renderer broke")
	}
	root := renderer.Root(c.Ref().Name)
	pj, err := p.EncodeJSON()
	if err != nil {
		return nil, renderer.Built{}, err
	}
	return renderer.Tree{
		root + "/kustomization.yaml": []byte("resources:\n- " + renderer.StepDir(step) + "\n"),
		root + "/plan.json":          pj,
		root + "/" + renderer.StepDir(step) + "/kustomization.yaml": []byte("resources: []\n"),
	}, renderer.Built{Selected: []byte("step: " + step + "\n")}, nil
}

func (f *fakes) Before(plan.Step, spec.Cluster, *live.Cluster, time.Time) (bool, string) {
	return true, ""
}

func (f *fakes) After(s plan.Step, _ spec.Cluster, _ *live.Cluster, _ time.Time) (bool, string) {
	f.after = append(f.after, s.ID)
	if f.afterPass {
		return true, ""
	}
	return false, "the step is not done"
}

// newTestLoop clones a new bare repo holding files into a loop wired with
// f and the local provider.
func newTestLoop(t *testing.T, f *fakes, hold bool, files map[string]string) (*Loop, string) {
	t.Helper()
	bare := gitbed.New(t, files)
	repo, err := gitrepo.Clone(context.Background(), gitrepo.Remote{URL: bare, Base: "main"}, filepath.Join(t.TempDir(), "work"))
	if err != nil {
		t.Fatal(err)
	}
	l := New(Config{
		Repo: repo, PRs: &publish.Local{Repo: repo, Base: "main"}, Name: "cairn", Email: "cairn@example.com",
		Layout:   spec.Layout{SpecsDir: "clusters"},
		Specs:    spec.Serve(spec.Etcd(), spec.Postgres()),
		Observe:  func(context.Context, []spec.Cluster) (*live.Snapshot, error) { return nil, nil },
		Policies: func(string) (policies.Set, error) { return nil, nil },
		Plan:     f.Plan, Render: f.Render, Gates: f, Hold: hold,
	})
	return l, bare
}

func onlyOutcome(t *testing.T, l *Loop) publish.Outcome {
	t.Helper()
	res, err := l.Pass(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Outcomes) != 1 || len(res.Plans.Plans) != 1 {
		t.Fatalf("outcomes %+v, plans %+v", res.Outcomes, res.Plans)
	}
	return res.Outcomes[0]
}

func TestPassHoldsUntilTheMergedStepShowsDone(t *testing.T) {
	f := &fakes{next: []string{"s1", "s2"}, fp: "f1"}
	l, bare := newTestLoop(t, f, true, map[string]string{"clusters/kv.yaml": kvSpec})
	if o := onlyOutcome(t, l); o.Action != publish.ActionOpened || o.Step != "s1" {
		t.Fatalf("first pass: %+v", o)
	}
	gitbed.Merge(t, bare, "cairn/kv/s1")
	f.next = []string{"s2"}
	if o := onlyOutcome(t, l); o.Action != publish.ActionHeld || o.Note != "waiting for merged step s1: the step is not done" {
		t.Fatalf("after the merge: %+v", o)
	}
	f.afterPass = true
	if o := onlyOutcome(t, l); o.Action != publish.ActionOpened || o.Step != "s2" {
		t.Fatalf("once the step shows done: %+v", o)
	}
	if strings.Join(f.after, ",") != "s1,s1" {
		t.Errorf("after gates checked for %v, want the merged step s1 twice", f.after)
	}
}

func TestPassWithoutHoldPublishesWhateverWasMerged(t *testing.T) {
	f := &fakes{next: []string{"s1", "s2"}, fp: "f1"}
	l, bare := newTestLoop(t, f, false, map[string]string{"clusters/kv.yaml": kvSpec})
	onlyOutcome(t, l)
	gitbed.Merge(t, bare, "cairn/kv/s1")
	f.next = []string{"s2"}
	if o := onlyOutcome(t, l); o.Action != publish.ActionOpened || o.Step != "s2" || len(f.after) != 0 {
		t.Fatalf("after the merge: %+v, gates checked %v", o, f.after)
	}
}

// A new spec supersedes the merged step: its plan goes ahead at once.
func TestPassDoesNotHoldANewSpec(t *testing.T) {
	f := &fakes{next: []string{"s1", "s2"}, fp: "f1"}
	l, bare := newTestLoop(t, f, true, map[string]string{"clusters/kv.yaml": kvSpec})
	onlyOutcome(t, l)
	gitbed.Merge(t, bare, "cairn/kv/s1")
	f.next, f.fp = []string{"t1"}, "f2"
	if o := onlyOutcome(t, l); o.Action != publish.ActionOpened || o.Step != "t1" || len(f.after) != 0 {
		t.Fatalf("a new spec: %+v, gates checked %v", o, f.after)
	}
}

func TestPassReportsInvalidSpecs(t *testing.T) {
	f := &fakes{next: []string{"s1"}}
	l, _ := newTestLoop(t, f, true, map[string]string{"clusters/kv.yaml": strings.Replace(kvSpec, "size", "sise", 1)})
	_, err := l.Pass(context.Background())
	var inv *InvalidSpecsError
	if !errors.As(err, &inv) || !strings.Contains(err.Error(), "kv.yaml") {
		t.Fatalf("err %v, want an InvalidSpecsError naming the file", err)
	}
}

// One cluster's failure leaves the others' outcomes in the pass's result
// and in what Run reports, the failed one with its error.
func TestAFailedClusterStillReportsEveryOutcome(t *testing.T) {
	f := &fakes{next: []string{"s1"}, failRender: "kv"}
	other := strings.Replace(kvSpec, "name: kv", "name: ok", 1)
	l, _ := newTestLoop(t, f, false, map[string]string{"clusters/kv.yaml": kvSpec, "clusters/ok.yaml": other})
	res, err := l.Pass(context.Background())
	if err == nil || !strings.Contains(err.Error(), "the renderer broke") {
		t.Fatalf("err %v, want the render failure", err)
	}
	check := func(outs []publish.Outcome, okAction publish.Action) {
		t.Helper()
		got := map[string]publish.Outcome{}
		for _, o := range outs {
			got[o.Cluster] = o
		}
		if o := got["EtcdCluster/kv"]; o.Action != publish.ActionFailed || !strings.Contains(o.Note, "the renderer broke") {
			t.Errorf("kv: %+v, want failed with its error", o)
		}
		if o := got["EtcdCluster/ok"]; o.Action != okAction {
			t.Errorf("ok: %+v, want %s", o, okAction)
		}
	}
	check(res.Outcomes, publish.ActionOpened)

	ctx, cancel := context.WithCancel(context.Background())
	var reported []publish.Outcome
	_ = l.Run(ctx, time.Hour, nil, func(outs []publish.Outcome) { reported = outs; cancel() })
	check(reported, publish.ActionUnchanged)
}
