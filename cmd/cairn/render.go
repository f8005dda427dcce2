package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sync"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/planner/spec"
	"github.com/cairn-dev/cairn/publish"
	"github.com/cairn-dev/cairn/renderer"
)

type renderOptions struct {
	planOptions
	out    string
	images renderer.Options
}

func newRender() *cobra.Command {
	var o renderOptions
	cmd := &cobra.Command{
		Use:   "render --repo DIR [--live FILE] [--out DIR]",
		Short: "Write each cluster's kustomize tree under rendered/<cluster>/",
		Long: `Plan every cluster of the repo (as cairn plan does) and write its
kustomize tree to rendered/<cluster>/ under --out (default: the repo): the
base, one overlay per step, PLAN.md and plan.json, with the entry point at
the plan's first step (or at the base when nothing is planned). Every tree
passes kustomize build before anything is written. Running it twice changes
nothing. A cluster whose spec is gone keeps its rendered folder untouched.

Exit codes: 0 rendered, 1 invalid specs or live state, or a tree that
does not build, 2 usage, 3 a plan refuses a spec change (every tree is
still written; a refused cluster's stays at what runs).`,
		Example: `  # render into the repo, against a recorded live state
  cairn render --repo . --live live.yaml

  # render against the cluster into another folder
  cairn render --repo . --kubeconfig ~/.kube/prod --out /tmp/out`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runRender(cmd.Context(), cmd.OutOrStdout(), o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.repo, "repo", "", "GitOps repo directory (required)")
	o.src.flags(f)
	o.specs.add(f)
	f.StringVar(&o.out, "out", "", "directory to write rendered/ into (default: the repo)")
	imageFlags(f, &o.images)
	monitoringFlags(f, &o.images)
	_ = cmd.MarkFlagRequired("repo")
	return cmd
}

// imageFlags adds the flags choosing the images rendered manifests use;
// render, propose and reconcile share them.
func imageFlags(f *pflag.FlagSet, o *renderer.Options) {
	f.StringVar(&o.CairnImage, "cairn-image", renderer.DefaultOptions.CairnImage, "image of the cairn binary")
	f.StringVar(&o.EtcdRepository, "etcd-repository", renderer.DefaultOptions.EtcdRepository, "etcd image repository (tag v<version>)")
	f.StringVar(&o.PostgresRepository, "postgres-repository", renderer.DefaultOptions.PostgresRepository, "PostgreSQL image repository (tag <version>)")
	f.StringVar(&o.PostgresUpgradeRepository, "postgres-upgrade-repository", renderer.DefaultOptions.PostgresUpgradeRepository, "pg_upgrade image repository (tag <from>-to-<to>)")
	f.Var(&imageDigestsFlag{into: o}, "image-digests", "pin images by digest: a YAML or JSON file mapping each image by tag to its digest (images: {<name>:<tag>: sha256:...}, the release's image-digests.yaml); rendered as <name>:<tag>@<digest>")
}

// monitoringFlags are the flags of the commands that write trees (render,
// propose, reconcile): give all three the same values, or a re-rendered
// tree differs from the one cairn wrote.
func monitoringFlags(f *pflag.FlagSet, o *renderer.Options) {
	f.BoolVar(&o.PodMonitor, "pod-monitor", false, "also render the runtime's metrics Service and a Prometheus Operator PodMonitor into rendered/<cluster>/monitoring/, which the cluster's entry point does not include")
	f.StringToStringVar(&o.MonitoringLabels, "pod-monitor-label", nil, "with --pod-monitor: a label key=value for those objects (repeatable), such as release=prometheus")
}

func runRender(ctx context.Context, w io.Writer, o renderOptions) error {
	r, err := newRenderer(o.images)
	if err != nil {
		return &exitError{exitUsage, fmt.Errorf("cairn render: %w", err)}
	}
	clusters, err := specKinds().LoadRepo(o.repo, o.specs.layout(spec.DefaultLayout.RenderedDir))
	if err != nil {
		return &exitError{exitInvalid, err}
	}
	observed, err := o.src.read(ctx, clusters)
	if err != nil {
		return err
	}
	out := o.out
	if out == "" {
		out = o.repo
	}
	if err := checkRendered(out); err != nil {
		return &exitError{exitInvalid, fmt.Errorf("cairn render: %w", err)}
	}
	// Render everything first: nothing is written unless every tree builds.
	trees := map[string]renderer.Tree{}
	pols, err := policySet(o.repo)
	if err != nil {
		return err
	}
	plans := newPlanner().WithImages(r.Images).Plan(clusters, observed, pols)
	// The trees render on every core, taken in the clusters' order.
	current := func(p plan.Plan) string {
		if len(p.Steps) > 0 {
			return p.Steps[0].ID
		}
		return ""
	}
	ps := make([]plan.Plan, len(clusters))
	for i, c := range clusters {
		ps[i] = find(plans, c.Ref())
	}
	// The tree is all cairn render writes: Check builds what proves it
	// builds, not the outputs a pull request's diff needs.
	ahead := publish.NewAhead(ctx, len(clusters), 0, func(i int) bool {
		return len(ps[i].Steps) > 0 || ps[i].Baseline != nil
	}, func(i int) (renderer.Tree, renderer.Built, error) {
		t, err := r.Check(clusters[i], ps[i], current(ps[i]))
		return t, renderer.Built{}, err
	})
	defer ahead.Close()
	for i, c := range clusters {
		t, _, err, ok := ahead.Get(i)
		if !ok {
			p := ps[i]
			fmt.Fprintf(w, "%s: nothing to render (%s)\n", c.Ref(), p.Status)
			for _, r := range p.Refusals {
				fmt.Fprintf(w, "  refused (%s): %s\n", r.Rule, r.Reason)
			}
			continue
		}
		if err != nil {
			return &exitError{exitInvalid, err}
		}
		trees[c.Ref().Name] = t
	}
	// Each cluster's folder is its own: they are written side by side
	// (the writes wait on the file system more than on a core), and
	// reported in the clusters' order.
	type written struct {
		n   int
		err error
	}
	results := make([]written, len(clusters))
	work := make(chan int)
	var wg sync.WaitGroup
	for range min(len(clusters), 2*runtime.NumCPU()) {
		wg.Go(func() {
			for i := range work {
				name := clusters[i].Ref().Name
				results[i].n, results[i].err = trees[name].Write(out, renderer.Root(name))
			}
		})
	}
	for i, c := range clusters {
		if _, ok := trees[c.Ref().Name]; ok {
			work <- i
		}
	}
	close(work)
	wg.Wait()
	for i, c := range clusters {
		if _, ok := trees[c.Ref().Name]; !ok {
			continue
		}
		if err := results[i].err; err != nil {
			return fmt.Errorf("write %s: %w", renderer.Root(c.Ref().Name), err)
		}
		fmt.Fprintf(w, "%s: %s (%d file(s) changed)\n", c.Ref(), renderer.Root(c.Ref().Name), results[i].n)
	}
	// The other clusters are rendered; a refusal still fails the run, as
	// it does cairn plan's.
	for _, p := range plans.Plans {
		if p.Status == plan.StatusRefused {
			return &exitError{code: exitRefusals}
		}
	}
	return nil
}

func find(l plan.List, ref spec.Ref) plan.Plan {
	for _, p := range l.Plans {
		if p.Cluster.Kind == ref.Kind && p.Cluster.Name == ref.Name {
			return p
		}
	}
	panic("cairn: no plan for " + ref.String())
}

// maxRenderedEntries bounds the walk of an existing rendered/ folder.
const maxRenderedEntries = 100_000

// checkRendered refuses to write under out's rendered/ unless it is a
// plain folder tree: rendered/ itself, or anything below it, being a
// symlink could send cairn's writes and deletions out of the repo, and a
// FIFO or device would hang or mislead the comparison with what is
// there. Nothing is written or deleted before this holds.
func checkRendered(out string) error {
	dir := filepath.Join(out, spec.DefaultLayout.RenderedDir)
	info, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if info.Mode()&fs.ModeSymlink != 0 {
		return fmt.Errorf("%s is a symlink; cairn writes rendered/ itself and does not follow one (it could lead out of the repo)", spec.DisplayPath(dir))
	}
	if !info.IsDir() {
		return fmt.Errorf("%s is not a folder", spec.DisplayPath(dir))
	}
	n := 0
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if n++; n > maxRenderedEntries {
			return fmt.Errorf("%s holds more than %d files and folders", spec.DisplayPath(dir), maxRenderedEntries)
		}
		switch t := d.Type(); {
		case t&fs.ModeSymlink != 0:
			return fmt.Errorf("%s is a symlink; cairn writes rendered/ itself and does not follow one (it could lead out of the repo)", spec.DisplayPath(p))
		case !t.IsDir() && !t.IsRegular():
			return fmt.Errorf("%s is not a regular file (%s)", spec.DisplayPath(p), t)
		}
		return nil
	})
}
