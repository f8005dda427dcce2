package main

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/cairn-dev/cairn/publish"
	"github.com/cairn-dev/cairn/publish/gitrepo"
	"github.com/cairn-dev/cairn/reconcile"
	"github.com/cairn-dev/cairn/renderer"
	"github.com/cairn-dev/cairn/testbed"
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

// refsOf are the refs of the repo at path, by name.
func refsOf(t *testing.T, path string) map[string]plumbing.Hash {
	t.Helper()
	r, err := git.PlainOpen(path)
	if err != nil {
		t.Fatal(err)
	}
	refs, err := r.References()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]plumbing.Hash{}
	_ = refs.ForEach(func(ref *plumbing.Reference) error {
		if ref.Type() == plumbing.HashReference {
			out[ref.Name().String()] = ref.Hash()
		}
		return nil
	})
	return out
}

// A cairn propose run again with nothing changed renders nothing: every
// step is read back from the render cache on disk, and nothing is
// written to the repo. A spec changed on main renders that cluster's
// step alone; the rest still come from the cache. With the cache off,
// the same run renders every step, and publishes the same.
func TestAgainProposeRendersOnlyWhatChanged(t *testing.T) {
	testbed.Require(t, testbed.TierIntegration, "100 clusters proposed four times")
	fl := fleet.New(100, 7)
	dir := t.TempDir()
	bare := filepath.Join(dir, "gitops.git")
	if _, err := fleet.WriteBare(bare, fl.Files()); err != nil {
		t.Fatal(err)
	}
	live := filepath.Join(dir, "live.yaml")
	if err := os.WriteFile(live, fl.Live(), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("XDG_CACHE_HOME", filepath.Join(dir, "cache"))
	t.Setenv("HOME", dir)
	propose := func(extra ...string) string {
		t.Helper()
		var stdout, stderr strings.Builder
		args := append([]string{"propose", "--repo", bare, "--live", live, "--no-auto-merge", "-v"}, extra...)
		if code := run(args, &stdout, &stderr); code != exitOK {
			t.Fatalf("cairn %s: exit %d\n%s%s", strings.Join(args, " "), code, stdout.String(), stderr.String())
		}
		return stderr.String()
	}
	renders := func(out string) (rendered, fromDisk int) {
		t.Helper()
		if _, err := fmt.Sscanf(out[strings.Index(out, "renders: "):], "renders: %d rendered, %d read from the render cache on disk", &rendered, &fromDisk); err != nil {
			t.Fatalf("no render counts in %q: %v", out, err)
		}
		return rendered, fromDisk
	}
	planned := fl.Planned()
	if r, d := renders(propose()); r != planned || d != 0 {
		t.Fatalf("first run: %d rendered, %d from disk; want %d rendered", r, d, planned)
	}
	before := refsOf(t, bare)
	if r, d := renders(propose()); r != 0 || d != planned {
		t.Errorf("no-op run: %d rendered, %d from disk; want all %d from disk", r, d, planned)
	}
	if after := refsOf(t, bare); !maps.Equal(before, after) {
		t.Errorf("the no-op run wrote to the repo:\nbefore %v\nafter  %v", before, after)
	}
	// A cluster's spec changes on main: only its step renders again.
	c, ok := fl.First(fleet.Postgres, fleet.StorageGrowth)
	if !ok {
		t.Fatal("no PostgreSQL cluster growing its storage in the fleet")
	}
	files := fl.Files()
	files[c.Path()] = strings.Replace(files[c.Path()], "storage: ", "storage: 4", 1)
	commitFiles(t, bare, files)
	if r, d := renders(propose()); r != 1 || d != planned-1 {
		t.Errorf("after %s changed: %d rendered, %d from disk; want 1 and %d", c, r, d, planned-1)
	}
	// Off, it renders everything and publishes nothing new.
	before = refsOf(t, bare)
	if r, d := renders(propose("--no-render-cache")); r != planned || d != 0 {
		t.Errorf("--no-render-cache: %d rendered, %d from disk; want %d rendered", r, d, planned)
	}
	if after := refsOf(t, bare); !maps.Equal(before, after) {
		t.Errorf("the run without the cache published something else:\nbefore %v\nafter  %v", before, after)
	}
}

// commitFiles commits files (path: content) on main of the bare repo, as
// a person pushing a spec change would.
func commitFiles(t *testing.T, bare string, files map[string]string) {
	t.Helper()
	work := filepath.Join(t.TempDir(), "w")
	repo, err := git.PlainClone(work, false, &git.CloneOptions{URL: bare, ReferenceName: plumbing.NewBranchReferenceName("main")})
	if err != nil {
		t.Fatal(err)
	}
	wt, err := repo.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	for p, content := range files {
		full := filepath.Join(work, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := wt.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	sig := &object.Signature{Name: "p", Email: "p@example.com", When: time.Now()}
	if _, err := wt.Commit("a spec change\n", &git.CommitOptions{Author: sig, Committer: sig}); err != nil {
		t.Fatal(err)
	}
	if err := repo.Push(&git.PushOptions{}); err != nil {
		t.Fatal(err)
	}
}
