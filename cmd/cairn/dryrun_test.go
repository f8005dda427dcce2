package main

import (
	"encoding/json"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/renderer"
	"github.com/cairn-dev/cairn/testbed"
)

// Every rendered overlay of every golden tree (each step kind of both
// kinds) is accepted by a real kube-apiserver: a server-side dry-run apply
// validates schemas, defaults and admission without storing anything.
func TestRenderedOverlaysPassServerSideDryRun(t *testing.T) {
	cp := testbed.Shared(t, testbed.Options{})
	ns := cp.Namespace(t, "dry-run")
	cp.Namespace(t, "db") // the namespace some golden specs name
	// The monitoring goldens' PodMonitor, checked against the Prometheus
	// Operator's own schema.
	cp.InstallCRD(t, "monitoring.coreos.com_podmonitors.yaml")
	// The Certificates of a cluster whose spec names a cert-manager
	// issuer, checked against cert-manager's own schema.
	cp.InstallCRD(t, "cert-manager.io_certificates.yaml")
	root := "../../renderer/testdata"
	cases, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	builds := 0
	for _, c := range cases {
		tree := readGolden(t, filepath.Join(root, c.Name()))
		for _, p := range tree.Paths() {
			if path.Base(p) != "kustomization.yaml" {
				continue
			}
			out, err := renderer.Build(tree, path.Dir(p))
			if err != nil {
				t.Fatalf("%s %s: %v", c.Name(), p, err)
			}
			if err := cp.ServerSideApply(t, ns, out, true); err != nil {
				t.Errorf("%s %s: %v", c.Name(), path.Dir(p), err)
			}
			builds++
		}
	}
	if builds < 20 {
		t.Fatalf("only %d rendered folders found under %s", builds, root)
	}
	t.Logf("%d rendered folders dry-run applied", builds)
}

// Applying a plan's folders in order (the base, then each step) as real
// server-side applies, as Flux or Argo CD would sync each merged step,
// succeeds: no step changes a field Kubernetes does not let change.
func TestStepsApplyInOrder(t *testing.T) {
	cp := testbed.Shared(t, testbed.Options{})
	cp.InstallCRD(t, "cert-manager.io_certificates.yaml")
	root := "../../renderer/testdata"
	cases, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range cases {
		if c.Name() == "monitoring" {
			continue // --pod-monitor's folders, no plan: dry-run above
		}
		ns := cp.Namespace(t, "case-"+strconv.Itoa(i))
		tree := readGolden(t, filepath.Join(root, c.Name()))
		var p plan.Plan
		var clusterRoot string
		for _, f := range tree.Paths() {
			if path.Base(f) == "plan.json" {
				clusterRoot = path.Dir(f)
				if err := json.Unmarshal(tree[f], &p); err != nil {
					t.Fatal(err)
				}
			}
		}
		if clusterRoot == "" {
			t.Fatalf("%s: no plan.json", c.Name())
		}
		dirs := []string{}
		if p.Baseline != nil {
			dirs = append(dirs, "base")
		}
		for _, s := range p.Steps {
			dirs = append(dirs, renderer.StepDir(s.ID))
		}
		for _, d := range dirs {
			out, err := renderer.Build(tree, clusterRoot+"/"+d)
			if err != nil {
				t.Fatal(err)
			}
			if err := cp.ApplyInto(t, ns, out); err != nil {
				t.Errorf("%s: applying %s after the folders before it: %v", c.Name(), d, err)
			}
		}
	}
}

func readGolden(t *testing.T, dir string) renderer.Tree {
	t.Helper()
	tree := renderer.Tree{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		tree[filepath.ToSlash(rel)] = data
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return tree
}
