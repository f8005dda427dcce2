package gitrepo

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// forge commits files onto the head of from as cairn would sign it (its
// name, email and a Cairn-Step trailer) and pushes the commit to branch:
// what anyone who may push can do.
func forge(t *testing.T, bare, from, branch string, files map[string]string) plumbing.Hash {
	t.Helper()
	dir := t.TempDir()
	repo, err := git.PlainClone(dir, false, &git.CloneOptions{URL: bare, ReferenceName: plumbing.NewBranchReferenceName(from), SingleBranch: true})
	if err != nil {
		t.Fatal(err)
	}
	for p, c := range files {
		full := filepath.Join(dir, p)
		_ = os.MkdirAll(filepath.Dir(full), 0o755)
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	wt, _ := repo.Worktree()
	if err := wt.AddWithOptions(&git.AddOptions{All: true}); err != nil {
		t.Fatal(err)
	}
	sig := &object.Signature{Name: "cairn", Email: "cairn@example.com", When: time.Now()}
	h, err := wt.Commit("cairn: db: step\n\nCairn-Step: s\n", &git.CommitOptions{Author: sig, Committer: sig})
	if err != nil {
		t.Fatal(err)
	}
	setBranch(t, bare, branch, h, repo)
	return h
}

// setBranch points branch of the bare repo at h, pushing h from repo
// when given.
func setBranch(t testing.TB, bare, branch string, h plumbing.Hash, repo *git.Repository) {
	t.Helper()
	if repo == nil {
		r, err := git.PlainOpen(bare)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Storer.SetReference(plumbing.NewHashReference(plumbing.NewBranchReferenceName(branch), h)); err != nil {
			t.Fatal(err)
		}
		return
	}
	spec := config.RefSpec("+" + h.String() + ":refs/heads/" + branch)
	if err := repo.Push(&git.PushOptions{RefSpecs: []config.RefSpec{spec}}); err != nil {
		t.Fatal(err)
	}
}

func branchHead(t testing.TB, bare, branch string) plumbing.Hash {
	t.Helper()
	repo, _ := git.PlainOpen(bare)
	ref, err := repo.Reference(plumbing.NewBranchReferenceName(branch), true)
	if err != nil {
		t.Fatal(err)
	}
	return ref.Hash()
}

// A branch that looks like cairn's (its email, a Cairn-Step trailer, made
// on the base) but carries anything beyond the step's folder is a
// person's: never adopted, even when the folder is exactly what cairn
// renders, and never pushed over.
func TestAForgedHeadIsNeverAdopted(t *testing.T) {
	rendered := map[string]string{"rendered/db/kustomization.yaml": "v1\n", "rendered/db/PLAN.md": "plan\n"}
	with := func(extra map[string]string) map[string]string {
		out := map[string]string{}
		for k, v := range rendered {
			out[k] = v
		}
		for k, v := range extra {
			out[k] = v
		}
		return out
	}
	tests := []struct {
		name  string
		files map[string]string
		why   string
	}{
		{"an extra file elsewhere", with(map[string]string{"clusters/evil.yaml": "x\n"}), "outside rendered/db: clusters/evil.yaml"},
		{"a widened policy", with(map[string]string{"policies/auto-merge.yaml": "kinds: [all]\n"}), "policies/auto-merge.yaml"},
		{"a changed spec and a wrong folder", map[string]string{"clusters/db.yaml": "size: 7\n", "rendered/db/kustomization.yaml": "evil\n"}, "clusters/db.yaml"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			bare := newRemote(t, map[string]string{"clusters/db.yaml": "spec\n", "policies/auto-merge.yaml": "kinds: []\n"})
			forged := forge(t, bare, "main", "cairn/db/s", tc.files)
			r := clone(t, bare)
			_, err := r.Publish(ctx, "cairn/db/s", change("v1\n"))
			var fe *ForeignError
			if !errors.As(err, &fe) || !errors.Is(err, ErrForeignCommit) || fe.Head != forged || !strings.Contains(fe.Why, tc.why) {
				t.Fatalf("err = %v, want a ForeignError saying %q", err, tc.why)
			}
			if branchHead(t, bare, "cairn/db/s") != forged {
				t.Error("the forged head was pushed over")
			}
			// Nor does auto-merge take it.
			if _, err := r.Merge(ctx, "cairn/db/s", forged.String(), "rendered/db", "merge", object.Signature{Name: "cairn", Email: "cairn@example.com"}); !errors.Is(err, ErrNotMergeable) {
				t.Fatalf("merge of the forged head: %v", err)
			}
			if files := readBranch(t, bare, "main"); files["rendered/db/kustomization.yaml"] != "" || files["policies/auto-merge.yaml"] != "kinds: []\n" {
				t.Fatalf("main after the refused merge: %v", files)
			}
		})
	}
}

// What cairn may push over: its own earlier rendering of the folder, and
// a branch whose head the base already holds (a step merged in an earlier
// cycle, a branch reset to the base).
func TestHeadsCairnMayPushOver(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, bare string)
	}{
		{"an older rendering of the folder", func(t *testing.T, bare string) {
			forge(t, bare, "main", "cairn/db/s", map[string]string{"rendered/db/kustomization.yaml": "v0\n"})
		}},
		{"the base itself", func(t *testing.T, bare string) {
			setBranch(t, bare, "cairn/db/s", branchHead(t, bare, "main"), nil)
		}},
		{"a step merged in an earlier cycle", func(t *testing.T, bare string) {
			res, err := clone(t, bare).Publish(context.Background(), "cairn/db/s", change("v1\n"))
			if err != nil {
				t.Fatal(err)
			}
			setBranch(t, bare, "main", res.Commit, nil)
			commitTo(t, bare, "main", map[string]string{"rendered/db/kustomization.yaml": "v0 again\n"}, "a later step")
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			bare := newRemote(t, map[string]string{"clusters/db.yaml": "spec\n"})
			tc.setup(t, bare)
			res, err := clone(t, bare).Publish(context.Background(), "cairn/db/s", change("v1\n"))
			if err != nil || !res.Pushed || branchHead(t, bare, "cairn/db/s") != res.Commit {
				t.Fatalf("%+v %v", res, err)
			}
			if res.Base != branchHead(t, bare, "main") {
				t.Errorf("built on %s, not on the base", res.Base)
			}
		})
	}
}

// With signing configured, a commit signed by cairn's key is cairn's even
// when nothing else proves it (its base was rewritten); the same commit
// unsigned is a person's.
func TestASignatureProvesAHead(t *testing.T) {
	key, err := openpgp.NewEntity("cairn", "", "cairn@example.com", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, signed := range []bool{true, false} {
		t.Run(map[bool]string{true: "signed", false: "unsigned"}[signed], func(t *testing.T) {
			ctx := context.Background()
			bare := newRemote(t, map[string]string{"clusters/db.yaml": "spec\n"})
			r := clone(t, bare)
			if signed {
				r.SignKey = key
			}
			first, err := r.Publish(ctx, "cairn/db/s", change("v1\n"))
			if err != nil {
				t.Fatal(err)
			}
			// Someone rewrites main's history: the step's parent is no
			// longer part of the base.
			orphan := newRemote(t, map[string]string{"clusters/db.yaml": "rewritten\n"})
			src, _ := git.PlainOpen(orphan)
			ref, _ := src.Reference("refs/heads/main", true)
			dst, _ := git.PlainOpen(bare)
			if _, err := dst.CreateRemote(&config.RemoteConfig{Name: "orphan", URLs: []string{orphan}}); err != nil {
				t.Fatal(err)
			}
			if err := dst.Fetch(&git.FetchOptions{RemoteName: "orphan", RefSpecs: []config.RefSpec{"+refs/heads/main:refs/heads/main"}}); err != nil {
				t.Fatal(err)
			}
			if branchHead(t, bare, "main") != ref.Hash() {
				t.Fatal("main was not rewritten")
			}
			res, err := r.Publish(ctx, "cairn/db/s", change("v2\n"))
			if signed && (err != nil || !res.Pushed) {
				t.Fatalf("a signed head: %+v %v", res, err)
			}
			if !signed && (!errors.Is(err, ErrForeignCommit) || branchHead(t, bare, "cairn/db/s") != first.Commit) {
				t.Fatalf("an unsigned head on another history: %+v %v", res, err)
			}
		})
	}
}
