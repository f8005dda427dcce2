package gitrepo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// newRemote makes a bare repo with a main branch holding files, and
// returns its path.
func newRemote(t testing.TB, files map[string]string) string {
	t.Helper()
	bare := filepath.Join(t.TempDir(), "gitops.git")
	if _, err := git.PlainInitWithOptions(bare, &git.PlainInitOptions{Bare: true,
		InitOptions: git.InitOptions{DefaultBranch: plumbing.NewBranchReferenceName("main")}}); err != nil {
		t.Fatal(err)
	}
	commitTo(t, bare, "main", files, "initial")
	return bare
}

// commitTo commits files onto branch of the bare repo, as a person would.
func commitTo(t testing.TB, bare, branch string, files map[string]string, msg string) plumbing.Hash {
	t.Helper()
	dir := t.TempDir()
	var repo *git.Repository
	var err error
	if _, err := readBranchErr(bare, branch); err == nil {
		repo, err = git.PlainClone(dir, false, &git.CloneOptions{URL: bare, ReferenceName: plumbing.NewBranchReferenceName(branch), SingleBranch: true})
		if err != nil {
			t.Fatal(err)
		}
	} else {
		if repo, err = git.PlainInit(dir, false); err != nil {
			t.Fatal(err)
		}
		if _, err := repo.CreateRemote(gitconfigRemote{URL: bare}.config()); err != nil {
			t.Fatal(err)
		}
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
	sig := &object.Signature{Name: "person", Email: "p@example.com", When: time.Now()}
	h, err := wt.Commit(msg, &git.CommitOptions{Author: sig, AllowEmptyCommits: true})
	if err != nil {
		t.Fatal(err)
	}
	ref := plumbing.NewHashReference(plumbing.NewBranchReferenceName(branch), h)
	_ = repo.Storer.SetReference(ref)
	if err := repo.Push(&git.PushOptions{RefSpecs: []configRefSpec{configRefSpec(ref.Name().String() + ":" + ref.Name().String())}}); err != nil {
		t.Fatal(err)
	}
	return h
}

func change(content string) Build {
	return func(*object.Commit) (Change, error) {
		return Change{Root: "rendered/db", Files: map[string][]byte{
			"rendered/db/kustomization.yaml": []byte(content),
			"rendered/db/PLAN.md":            []byte("plan\n"),
		}, Message: "cairn: db: step\n\nCairn-Step: s\n", Name: "cairn", Email: "cairn@example.com"}, nil
	}
}

func clone(t testing.TB, url string) *Repo {
	t.Helper()
	r, err := Clone(context.Background(), Remote{URL: url}, filepath.Join(t.TempDir(), "work"))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestPublishIsIdempotentAndFollowsTheBase(t *testing.T) {
	ctx := context.Background()
	bare := newRemote(t, map[string]string{"clusters/db.yaml": "spec\n", "rendered/db/old.yaml": "stale\n"})
	r := clone(t, bare)

	first, err := r.Publish(ctx, "cairn/db/s", change("v1\n"))
	if err != nil || !first.Pushed {
		t.Fatalf("first publish: %+v %v", first, err)
	}
	// The branch holds the base plus exactly the new folder.
	got := readBranch(t, bare, "cairn/db/s")
	if got["rendered/db/kustomization.yaml"] != "v1\n" || got["clusters/db.yaml"] != "spec\n" || got["rendered/db/old.yaml"] != "" {
		t.Fatalf("branch content: %v", got)
	}

	// The same change again, from a fresh clone: no commit, no push.
	again, err := clone(t, bare).Publish(ctx, "cairn/db/s", change("v1\n"))
	if err != nil || again.Pushed || again.Commit != first.Commit {
		t.Fatalf("repeat publish: %+v %v (first %s)", again, err, first.Commit)
	}

	// The base moves with a commit that does not change the step's folder:
	// the branch is kept, so reviews on it are not dismissed.
	commitTo(t, bare, "main", map[string]string{"clusters/db.yaml": "spec v2\n"}, "edit spec")
	kept, err := r.Publish(ctx, "cairn/db/s", change("v1\n"))
	if err != nil || kept.Pushed || kept.Commit != first.Commit || kept.Base != first.Base {
		t.Fatalf("after an unrelated base move: %+v %v", kept, err)
	}
	// A change to the step's folder is rebuilt on today's base.
	newBase := commitTo(t, bare, "main", map[string]string{"clusters/db.yaml": "spec v3\n"}, "edit spec again")
	moved, err := r.Publish(ctx, "cairn/db/s", change("v2\n"))
	if err != nil || !moved.Pushed || moved.Base != newBase {
		t.Fatalf("after the step changed: %+v %v", moved, err)
	}
	if got := readBranch(t, bare, "cairn/db/s"); got["clusters/db.yaml"] != "spec v3\n" || got["rendered/db/kustomization.yaml"] != "v2\n" {
		t.Fatalf("not rebuilt on the new base: %v", got)
	}
}

func TestAPersonsCommitOnTheBranchIsLeftAlone(t *testing.T) {
	ctx := context.Background()
	bare := newRemote(t, map[string]string{"clusters/db.yaml": "spec\n"})
	r := clone(t, bare)
	if _, err := r.Publish(ctx, "cairn/db/s", change("v1\n")); err != nil {
		t.Fatal(err)
	}
	fix := commitTo(t, bare, "cairn/db/s", map[string]string{"rendered/db/kustomization.yaml": "fixed by hand\n"}, "reviewer fix")
	_, err := r.Publish(ctx, "cairn/db/s", change("v2\n"))
	if !errors.Is(err, ErrForeignCommit) {
		t.Fatalf("err = %v, want ErrForeignCommit", err)
	}
	repo, _ := git.PlainOpen(bare)
	if ref, _ := repo.Reference(plumbing.NewBranchReferenceName("cairn/db/s"), true); ref.Hash() != fix {
		t.Error("the person's commit was pushed over")
	}
}

func TestAnEmptyChangeIsRefused(t *testing.T) {
	bare := newRemote(t, map[string]string{"rendered/db/kustomization.yaml": "v1\n", "rendered/db/PLAN.md": "plan\n"})
	_, err := clone(t, bare).Publish(context.Background(), "cairn/db/s", change("v1\n"))
	if err == nil || !strings.Contains(err.Error(), "is empty") {
		t.Fatalf("err = %v", err)
	}
}

func TestConcurrentPublishersEndWithOneBranchHead(t *testing.T) {
	ctx := context.Background()
	bare := newRemote(t, map[string]string{"clusters/db.yaml": "spec\n"})
	a, b := clone(t, bare), clone(t, bare)

	// The same change from two publishers gives the same commit: the
	// second push writes nothing.
	ra, err := a.Publish(ctx, "cairn/db/same", change("v1\n"))
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	rb, err := b.Publish(ctx, "cairn/db/same", func(base *object.Commit) (Change, error) { calls++; return change("v1\n")(base) })
	if err != nil || rb.Commit != ra.Commit || rb.Pushed {
		t.Fatalf("same change: %+v vs %+v, %v", rb, ra, err)
	}

	// a pushes an older plan's change while b builds a newer one: b's push
	// is rejected, and b fetches, rebuilds and pushes over it with a lease.
	calls = 0
	res, err := b.Publish(ctx, "cairn/db/s", func(base *object.Commit) (Change, error) {
		calls++
		if calls == 1 {
			if _, err := a.Publish(ctx, "cairn/db/s", change("v0\n")); err != nil {
				t.Fatal(err)
			}
		}
		return change("v1\n")(base)
	})
	if err != nil || calls != 2 || !res.Pushed {
		t.Fatalf("calls=%d %+v %v", calls, res, err)
	}
	if got := readBranch(t, bare, "cairn/db/s"); got["rendered/db/kustomization.yaml"] != "v1\n" {
		t.Fatalf("branch holds %q", got["rendered/db/kustomization.yaml"])
	}
}

func TestPushRejectedEveryTimeIsAnError(t *testing.T) {
	ctx := context.Background()
	bare := newRemote(t, map[string]string{"clusters/db.yaml": "spec\n"})
	r, other := clone(t, bare), clone(t, bare)
	n := 0
	_, err := r.Publish(ctx, "cairn/db/s", func(base *object.Commit) (Change, error) {
		n++
		if _, err := other.Publish(ctx, "cairn/db/s", change("other "+strings.Repeat("x", n)+"\n")); err != nil {
			t.Fatal(err)
		}
		return change("mine\n")(base)
	})
	if !errors.Is(err, ErrRejected) || n != MaxAttempts {
		t.Fatalf("err = %v after %d builds, want ErrRejected after %d", err, n, MaxAttempts)
	}
}

func TestChangeOutsideItsRootIsRefused(t *testing.T) {
	bare := newRemote(t, map[string]string{"clusters/db.yaml": "spec\n"})
	_, err := clone(t, bare).Publish(context.Background(), "cairn/db/s", func(*object.Commit) (Change, error) {
		return Change{Root: "rendered/db", Files: map[string][]byte{"clusters/db.yaml": []byte("x")}}, nil
	})
	if err == nil || !strings.Contains(err.Error(), "outside rendered/db") {
		t.Fatalf("err = %v", err)
	}
	if _, err := readBranchErr(bare, "cairn/db/s"); err == nil {
		t.Error("a branch was pushed for a refused change")
	}
}

// No part of a secret in a remote's address shows in a message, wherever
// it sits and whatever it holds.
func TestRedact(t *testing.T) {
	cases := []struct{ url, secret, keep string }{
		{"https://x-access-token:ghs_secret@github.com/o/r.git", "ghs_secret", "@github.com/o/r.git"},
		{"https://user:p@ss@w0rd@example.com/o/r.git", "ss@w0rd", "@example.com/o/r.git"},
		{"https://user:pa/ss@example.com/o/r.git", "pa/ss", "@example.com/o/r.git"},
		{"https://ghs_only@example.com/o/r.git", "ghs_only", "@example.com"},
		{"user:tok3n@example.com:org/repo.git", "tok3n", "@example.com:org/repo.git"},
		{"tok3n@example.com:org/repo.git", "tok3n", "@example.com:org/repo.git"},
		{"https://example.com/o/r.git", "", "https://example.com/o/r.git"},
		{"/srv/git/gitops.git", "", "/srv/git/gitops.git"},
	}
	for _, c := range cases {
		got := redact(c.url)
		if c.secret != "" && strings.Contains(got, c.secret) {
			t.Errorf("redact(%q) = %q, shows the secret", c.url, got)
		}
		for _, part := range []string{"p@ss", "pa/", "ghs_"} {
			if strings.Contains(c.secret, part) && strings.Contains(got, part) {
				t.Errorf("redact(%q) = %q, shows part of the secret", c.url, got)
			}
		}
		if !strings.Contains(got, c.keep) {
			t.Errorf("redact(%q) = %q, want it to keep %q", c.url, got, c.keep)
		}
		err := scrub(fmt.Errorf("dial %s: refused", c.url), c.url)
		if c.secret != "" && strings.Contains(err.Error(), c.secret) {
			t.Errorf("scrub of an error quoting %q: %v", c.url, err)
		}
	}
	base := errors.New("authentication required")
	if err := scrub(fmt.Errorf("https://u:s3cret@h/r: %w", base), "https://u:s3cret@h/r"); !errors.Is(err, base) || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("scrub keeps the chain and hides the secret: %v", err)
	}
}

// A token goes over http:// only to this machine.
func TestCheckTransportRefusesCleartextCredentials(t *testing.T) {
	cases := []struct {
		url    string
		auth   bool
		refuse bool
	}{
		{"http://git.example.com/o/r.git", true, true},
		{"http://user:tok@git.example.com/o/r.git", false, true},
		{"HTTP://git.example.com/o/r.git", true, true},
		{"http://git.example.com/o/r.git", false, false},
		{"https://git.example.com/o/r.git", true, false},
		{"http://127.0.0.1:3000/o/r.git", true, false},
		{"http://[::1]:3000/o/r.git", true, false},
		{"http://localhost/o/r.git", true, false},
		{"/srv/git/r.git", true, false},
		{"git@example.com:o/r.git", true, false},
	}
	for _, c := range cases {
		err := CheckTransport(c.url, c.auth)
		if c.refuse != (err != nil) || (err != nil && !errors.Is(err, ErrCleartextCredentials)) {
			t.Errorf("CheckTransport(%q, auth %v) = %v, want refused %v", c.url, c.auth, err, c.refuse)
		}
		if err != nil && strings.Contains(err.Error(), "tok@") {
			t.Errorf("the refusal shows the credentials: %v", err)
		}
	}
	_, err := Clone(context.Background(), Remote{URL: "http://git.example.com/o/r.git", Auth: TokenAuth("t0ken")}, t.TempDir()+"/w")
	if !errors.Is(err, ErrCleartextCredentials) {
		t.Errorf("Clone with a token over http:// = %v", err)
	}
}
