package renderer

import (
	"bytes"
	"path"
	"slices"
	"strings"
	"testing"
)

// Render's builds are byte for byte what kustomize builds of the base and
// the selected step's folder, so publishing need not build them again.
func TestRenderReturnsTheBuildsOfTheBaseAndTheSelectedStep(t *testing.T) {
	r, err := New(Options{}, Etcd(), Postgres())
	if err != nil {
		t.Fatal(err)
	}
	for _, rc := range renderCases {
		t.Run(rc.name, func(t *testing.T) {
			c, p := loadCase(t, rc)
			tree, built, err := r.Render(c, p, rc.step)
			if err != nil {
				t.Fatal(err)
			}
			root := Root(c.Ref().Name)
			dir := baseDir
			if rc.step != "" {
				dir = StepDir(rc.step)
			}
			want, err := Build(tree, path.Join(root, dir))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(built.Selected, want) {
				t.Errorf("Selected differs from the build of %s", dir)
			}
			var base []byte
			if p.Baseline != nil {
				if base, err = Build(tree, path.Join(root, baseDir)); err != nil {
					t.Fatal(err)
				}
			}
			if !bytes.Equal(built.Base, base) {
				t.Errorf("Base differs from the build of the base (baseline %v)", p.Baseline != nil)
			}
		})
	}
}

func TestReadEntry(t *testing.T) {
	r, _ := New(Options{}, Etcd(), Postgres())
	c, p := loadCase(t, caseNamed(t, "etcd-add-learner"))
	stepTree, _, err := r.Render(c, p, "etcd-add-3")
	if err != nil {
		t.Fatal(err)
	}
	baseTree, _, err := r.Render(c, p, "")
	if err != nil {
		t.Fatal(err)
	}
	with := func(tree Tree, file, content string) Tree {
		return withFile(tree, Root(c.Ref().Name)+"/"+file, content)
	}
	for _, tc := range []struct {
		name    string
		tree    Tree
		step    string
		wantErr string
	}{
		{"a step selected", stepTree, "etcd-add-3", ""},
		{"the base selected", baseTree, "", ""},
		{"nothing rendered", Tree{}, "", "entry point of e"},
		{"two folders selected", with(stepTree, "kustomization.yaml", "resources: [base, steps/etcd-add-3]\n"), "", "neither the base nor one step"},
		{"an entry point that is not YAML", with(stepTree, "kustomization.yaml", "resources: [\n"), "", "entry point of e"},
		{"no plan.json", with(stepTree, "plan.json", ""), "etcd-add-3", "its plan.json cannot be read"},
		{"a broken plan.json", with(stepTree, "plan.json", "{"), "etcd-add-3", "plan.json: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := ReadEntry(tc.tree.ReadFile, c.Ref().Name)
			if e.Step != tc.step {
				t.Errorf("step %q, want %q", e.Step, tc.step)
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if e.Plan.ID != p.ID {
				t.Errorf("plan %s, want %s", e.Plan.ID, p.ID)
			}
			s, ok := e.Selected()
			if ok != (tc.step != "") || s.ID != tc.step {
				t.Errorf("selected %q %v, want %q", s.ID, ok, tc.step)
			}
		})
	}
}

// withFile is a copy of tree with the file at path set to content, or
// removed when content is "".
func withFile(tree Tree, path, content string) Tree {
	out := Tree{}
	for k, v := range tree {
		out[k] = v
	}
	if content == "" {
		delete(out, path)
	} else {
		out[path] = []byte(content)
	}
	return out
}

func TestTreeClusters(t *testing.T) {
	tree := Tree{Root("b") + "/kustomization.yaml": nil, Root("a") + "/base/x.yaml": nil, Root("a") + "/plan.json": nil, "clusters/c.yaml": nil}
	if got := tree.Clusters(); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("clusters %v", got)
	}
}
