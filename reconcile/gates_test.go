package reconcile

import (
	"testing"

	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/planner/spec"
	"github.com/cairn-dev/cairn/renderer"
)

// The hold rule, on each shape of what the base branch holds.
func TestHeld(t *testing.T) {
	cs, err := spec.Decode("kv.yaml", []byte(kvSpec))
	if err != nil {
		t.Fatal(err)
	}
	c := cs[0]
	f := &fakes{next: []string{"s1", "s2"}, fp: "f1"}
	pl := f.Plan(cs, nil, nil).Plans[0]
	merged, _, err := f.Render(c, pl, "s1")
	if err != nil {
		t.Fatal(err)
	}
	root := renderer.Root("kv")
	with := func(file, content string) renderer.Tree {
		out := renderer.Tree{}
		for k, v := range merged {
			out[k] = v
		}
		out[root+"/"+file] = []byte(content)
		return out
	}
	for _, tc := range []struct {
		name      string
		base      renderer.Tree
		c         spec.Cluster
		fp        string
		afterPass bool
		held      bool
		why       string
	}{
		{"nothing merged", renderer.Tree{}, c, "f1", false, false, ""},
		{"the base selected", with("kustomization.yaml", "resources:\n- base\n"), c, "f1", false, false, ""},
		{"no spec", merged, nil, "f1", false, false, ""},
		{"a new spec", merged, c, "f2", false, false, ""},
		{"the step not done", merged, c, "f1", false, true, "waiting for merged step s1: the step is not done"},
		{"the step done", merged, c, "f1", true, false, ""},
		{"a broken plan.json", with("plan.json", "{"), c, "f1", true, true, "merged step s1: plan.json: unexpected end of JSON input"},
		{"a step not in the plan", with("kustomization.yaml", "resources:\n- steps/zz\n"), c, "f1", true, true, "merged step zz is not in its plan.json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f.afterPass = tc.afterPass
			l := New(Config{Gates: f})
			p := pl
			p.SpecFingerprint = tc.fp
			held, why, waiting := l.held(tc.base.ReadFile, p, tc.c, nil)
			if held != tc.held || why != tc.why {
				t.Fatalf("held %v %q, want %v %q", held, why, tc.held, tc.why)
			}
			// Only a merged step whose gates do not pass waits (the metrics).
			if want := map[bool]string{true: "s1"}[tc.name == "the step not done"]; waiting != want {
				t.Errorf("waiting for %q, want %q", waiting, want)
			}
		})
	}
}

func TestBeforeGates(t *testing.T) {
	cs, _ := spec.Decode("kv.yaml", []byte(kvSpec))
	f := &fakes{next: []string{"s1"}}
	l := New(Config{Gates: f})
	gate := l.beforeGates(cs, nil, l.cfg.DecideAt())
	if pass, why := gate(f.Plan(cs, nil, nil).Plans[0]); !pass || why != "" {
		t.Errorf("a cluster with a spec: %v %q", pass, why)
	}
	orphan := plan.Plan{Cluster: plan.ClusterRef{Kind: "EtcdCluster", Name: "gone"}, Steps: []plan.Step{{ID: "x"}}}
	if pass, why := gate(orphan); pass || why != "the cluster has no spec" {
		t.Errorf("a cluster without a spec: %v %q", pass, why)
	}
}
