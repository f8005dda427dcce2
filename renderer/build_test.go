package renderer

import (
	"bytes"
	"slices"
	"strings"
	"sync"
	"testing"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/cairn-dev/cairn/planner/plan"
)

// plainBuild is kustomize build of dir of tree the way kustomize's own
// CLI writes it: a filesystem of the whole tree, krusty's Run, AsYaml.
func plainBuild(t *testing.T, tree Tree, dir string) ([]byte, error) {
	t.Helper()
	mem := filesys.MakeFsInMemory()
	for p, data := range tree {
		if err := mem.WriteFile("/"+p, data); err != nil {
			t.Fatal(err)
		}
	}
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(mem, "/"+dir)
	if err != nil {
		return nil, err
	}
	return m.AsYaml()
}

// stepsToRender are the steps Render is asked for: the base when the
// cluster runs, the first step, one in the middle and the last.
func stepsToRender(p plan.Plan) []string {
	var out []string
	if p.Baseline != nil {
		out = append(out, "")
	}
	for _, i := range []int{0, len(p.Steps) / 2, len(p.Steps) - 1} {
		if id := p.Steps[i].ID; !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

// What Render returns as built (the builds sharing one in-memory tree,
// YAML written out by resourcesYAML, objects unchanged from the step
// before reused) is what plain kustomize builds of the same tree give,
// and every folder of the tree builds.
func TestRenderBuildsAsThePlainPath(t *testing.T) {
	desired, plans, r := cacheFixture(t, 8)
	for i, c := range desired {
		p := plans.Plans[i]
		for _, step := range stepsToRender(p) {
			tree, built, err := r.Render(c, p, step)
			if err != nil {
				t.Fatal(err)
			}
			root := Root(c.Ref().Name)
			want, err := plainBuild(t, tree, root)
			if err != nil || !bytes.Equal(built.Selected, want) {
				t.Errorf("%s step %q: the entry point's build differs from kustomize's (err %v)", p.Cluster, step, err)
			}
			wantBase, err := plainBuild(t, tree, root+"/"+baseDir)
			if err != nil || !bytes.Equal(built.Base, wantBase) {
				t.Errorf("%s step %q: the base's build differs from kustomize's (err %v)", p.Cluster, step, err)
			}
			for _, dir := range renderedDirs(tree, p) {
				if _, err := plainBuild(t, tree, dir); err != nil {
					t.Errorf("%s step %q: %s does not build: %v", p.Cluster, step, dir, err)
				}
			}
		}
	}
}

// Renders from several goroutines at once are those of one at a time
// (run with -race to check the renderer's own state too).
// Renders run side by side (build.go): from a cold start, as the first
// builds of the process (make race runs this test alone, under the race
// detector, so kustomize's schema is initialised by the concurrent
// builds), three renders of each of six clusters at once each equal the
// one rendered alone afterwards.
func TestRenderConcurrently(t *testing.T) {
	desired, plans, r := cacheFixture(t, 6)
	type result struct {
		tree  Tree
		built Built
	}
	got := make([][3]result, len(desired))
	var wg sync.WaitGroup
	for k := range 3 {
		for i, c := range desired {
			wg.Go(func() {
				tree, built, err := r.Render(c, plans.Plans[i], plans.Plans[i].Steps[0].ID)
				if err != nil {
					t.Error(err)
					return
				}
				got[i][k] = result{tree, built}
			})
		}
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	for i, c := range desired {
		tree, built, err := r.Render(c, plans.Plans[i], plans.Plans[i].Steps[0].ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range got[i] {
			if !sameTree(g.tree, tree) || !bytes.Equal(g.built.Base, built.Base) || !bytes.Equal(g.built.Selected, built.Selected) {
				t.Errorf("%s: a concurrent render differs from the one rendered alone", plans.Plans[i].Cluster)
			}
		}
	}
}

func sameTree(a, b Tree) bool {
	if len(a) != len(b) {
		return false
	}
	for p, data := range a {
		if other, ok := b[p]; !ok || !bytes.Equal(data, other) {
			return false
		}
	}
	return true
}

// A folder that does not build is named, with kustomize's reason,
// whichever build finds it.
func TestBuildFailureIsReportedWhereAndWhat(t *testing.T) {
	r, _ := New(Options{}, Etcd(), Postgres())
	c, p := loadCase(t, caseNamed(t, "etcd-add-learner")) // two add steps
	dirs := []string{"base", "steps/etcd-add-3", "steps/etcd-add-4"}
	root := Root(c.Ref().Name)
	badPatch := []byte("- op: replace\n  path: /spec/no/such/field\n  value: 1\n")
	cases := []struct {
		name  string
		entry string
		edit  func(Tree)
		want  []string
	}{
		{name: "entry step", entry: "steps/etcd-add-3",
			edit: func(t Tree) { t[root+"/steps/etcd-add-3/statefulset.patch.yaml"] = badPatch },
			want: []string{"step etcd-add-3:", "steps/etcd-add-3", "no/such/field"}},
		{name: "a step after the entry", entry: "steps/etcd-add-3",
			edit: func(t Tree) { t[root+"/steps/etcd-add-4/statefulset.patch.yaml"] = badPatch },
			want: []string{"step etcd-add-4:", "steps/etcd-add-4", "no/such/field"}},
		{name: "the last step, selected", entry: "steps/etcd-add-4",
			edit: func(t Tree) { t[root+"/steps/etcd-add-4/statefulset.patch.yaml"] = badPatch },
			want: []string{"step etcd-add-4:", "steps/etcd-add-4", "no/such/field"}},
		{name: "the base", entry: "steps/etcd-add-3",
			edit: func(t Tree) { t[root+"/base/statefulset.yaml"] = []byte("kind: [\n") },
			want: []string{"step base:", "rendered/e/base"}},
		{name: "the entry point", entry: "steps/etcd-add-3",
			edit: func(t Tree) { t[root+"/kustomization.yaml"] = []byte("resources: [steps/no-such-step]\n") },
			want: []string{"entry point:", "no-such-step"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tree, _, err := r.Render(c, p, strings.TrimPrefix(tc.entry, "steps/"))
			if err != nil {
				t.Fatal(err)
			}
			tc.edit(tree)
			_, err = buildAll(tree, root, dirs, tc.entry)
			for _, w := range tc.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("buildAll: err = %v, want it to say %q", err, w)
				}
			}
			// Check, which builds less, finds the same fault.
			err = checkAll(tree, root, dirs, tc.entry)
			for _, w := range tc.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("checkAll: err = %v, want it to say %q", err, w)
				}
			}
		})
	}
}

// Check renders the tree Render renders, and refuses what Render refuses.
func TestCheckRendersWhatRenderDoes(t *testing.T) {
	desired, plans, r := cacheFixture(t, 8)
	for i, c := range desired {
		p := plans.Plans[i]
		for _, step := range stepsToRender(p) {
			tree, _, err := r.Render(c, p, step)
			if err != nil {
				t.Fatal(err)
			}
			checked, err := r.Check(c, p, step)
			if err != nil {
				t.Fatalf("%s step %q: %v", p.Cluster, step, err)
			}
			if !sameTree(checked, tree) {
				t.Errorf("%s step %q: Check's tree differs from Render's", p.Cluster, step)
			}
		}
		if _, err := r.Check(c, p, "no-such-step"); err == nil || !strings.Contains(err.Error(), `has no step "no-such-step"`) {
			t.Errorf("%s: Check of an unknown step: %v", p.Cluster, err)
		}
	}
}
