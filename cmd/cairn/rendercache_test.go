package main

import (
	"context"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"testing"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"

	"github.com/cairn-dev/cairn/publish"
	"github.com/cairn-dev/cairn/publish/gitrepo"
	"github.com/cairn-dev/cairn/reconcile"
	"github.com/cairn-dev/cairn/renderer"
	"github.com/cairn-dev/cairn/testbed/fleet"
)

// The loop with its render cache publishes byte for byte what a loop
// without one publishes, and a loop rendering on every core what one
// rendering one step at a time does: the same branches at the same
// commits, over a mixed fleet, on its first pass and on a pass answered
// from the cache.
func TestTheRenderCacheChangesNothingPublished(t *testing.T) {
	fl := fleet.New(16, 3)
	live := filepath.Join(t.TempDir(), "live.yaml")
	if err := os.WriteFile(live, fl.Live(), 0o600); err != nil {
		t.Fatal(err)
	}
	heads := func(cached bool, workers int) map[string]plumbing.Hash {
		bare := filepath.Join(t.TempDir(), "gitops.git")
		if _, err := fleet.WriteBare(bare, fl.Files()); err != nil {
			t.Fatal(err)
		}
		rend, err := newRenderer(renderer.Options{})
		if err != nil {
			t.Fatal(err)
		}
		repo, err := gitrepo.Clone(context.Background(), gitrepo.Remote{URL: bare, Base: "main"}, filepath.Join(t.TempDir(), "w"))
		if err != nil {
			t.Fatal(err)
		}
		prs := &publish.Local{Repo: repo, Base: "main", Name: "cairn", Email: cairnEmail}
		cfg := loopConfig(repo, prs, rend, liveSource{file: live}, specsFlag{dir: "clusters"}, slog.New(slog.DiscardHandler))
		if !cached {
			cfg.Render = rend.Render
		}
		cfg.RenderWorkers = workers
		l := reconcile.New(cfg)
		for pass := range 2 {
			res, err := l.Pass(context.Background())
			if err != nil {
				t.Fatalf("cached %v, pass %d: %v", cached, pass, err)
			}
			for _, o := range res.Outcomes {
				if pass == 1 && o.Action != publish.ActionUnchanged && o.Action != publish.ActionNone {
					t.Errorf("cached %v: the second pass %s %s", cached, o.Action, o.Cluster)
				}
			}
		}
		out := map[string]plumbing.Hash{}
		r, err := git.PlainOpen(bare)
		if err != nil {
			t.Fatal(err)
		}
		refs, _ := r.References()
		_ = refs.ForEach(func(ref *plumbing.Reference) error {
			if ref.Type() == plumbing.HashReference {
				out[ref.Name().String()] = ref.Hash()
			}
			return nil
		})
		return out
	}
	with, without, alone := heads(true, 0), heads(false, 0), heads(false, 1)
	if len(with) < fl.Planned() {
		t.Fatalf("%d refs for %d planned clusters", len(with), fl.Planned())
	}
	if !maps.Equal(with, without) {
		t.Errorf("with the cache %v\nwithout %v", with, without)
	}
	if !maps.Equal(without, alone) {
		t.Errorf("rendered on every core %v\none at a time %v", without, alone)
	}
}
