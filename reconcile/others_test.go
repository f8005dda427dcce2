package reconcile

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/planner/spec"
	"github.com/cairn-dev/cairn/policies"
	"github.com/cairn-dev/cairn/publish"
	"github.com/cairn-dev/cairn/publish/githubpr"
	"github.com/cairn-dev/cairn/publish/githubpr/githubtest"
	"github.com/cairn-dev/cairn/publish/gitrepo"
	"github.com/cairn-dev/cairn/testbed/gitbed"
)

// The status of a pull request that is not cairn's follows from the
// folders it changes and what its head's specs plan.
func TestDecideOthers(t *testing.T) {
	layout := spec.Layout{SpecsDir: "clusters"}
	planned := plan.List{Plans: []plan.Plan{{Cluster: plan.ClusterRef{Name: "kv"}, Steps: []plan.Step{{ID: "s1"}}}, {Cluster: plan.ClusterRef{Name: "db"}}}}
	refused := plan.List{Plans: []plan.Plan{{Cluster: plan.ClusterRef{Name: "kv"}, Status: plan.StatusRefused,
		Refusals: []plan.Refusal{{Rule: "size-shrink", Reason: "size 3 to 1 loses quorum"}}}}}
	for _, c := range []struct {
		name    string
		paths   []string
		loadErr error
		plans   plan.List
		state   string
		desc    string
	}{
		{"docs only", []string{"README.md", "docs/x.md"}, nil, plan.List{}, "success", checkNothingRead},
		{"a new spec that plans", []string{"clusters/db.yaml"}, nil, planned, "success", "the specs plan: 2 cluster(s), 1 with steps to propose once merged"},
		{"a policy", []string{"policies/freeze.yaml"}, nil, planned, "success", "the specs plan: 2 cluster(s), 1 with steps to propose once merged"},
		{"an invalid spec", []string{"clusters/db.yaml"}, fmt.Errorf("specs invalid at abc1234: clusters/db.yaml:5: unknown field \"sise\"\n  more"), plan.List{}, "failure",
			`specs invalid at abc1234: clusters/db.yaml:5: unknown field "sise" more`},
		{"a refused change", []string{"clusters/kv.yaml"}, nil, refused, "failure", "1 cluster(s) refuse the change: kv: size 3 to 1 loses quorum"},
		{"a hand edit of rendered/", []string{"clusters/kv.yaml", "rendered/kv/kustomization.yaml"}, nil, planned, "failure",
			"changes rendered/, which only cairn's step pull requests write: change the specs in clusters/ instead"},
		{"rendered/ below the specs", []string{"clusters/rendered/kv/a.yaml"}, nil, planned, "failure",
			"changes rendered/, which only cairn's step pull requests write: change the specs in clusters/ instead"},
		{"a file named like a folder", []string{"clusters.md", "policies"}, nil, plan.List{}, "success", checkNothingRead},
		{"a long error", []string{"clusters/a.yaml"}, fmt.Errorf("%s", strings.Repeat("x", 300)), plan.List{}, "failure", strings.Repeat("x", 137) + "..."},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := decideOthers(touches(c.paths, layout), layout, c.loadErr, c.plans)
			if got.State != c.state || got.Description != c.desc {
				t.Errorf("%s %q, want %s %q", got.State, got.Description, c.state, c.desc)
			}
		})
	}
}

// ghRepo is a GitOps repo behind the GitHub test server, with branch
// protection requiring cairn/plan, and a loop publishing to it.
type ghRepo struct {
	t    *testing.T
	gh   *githubtest.Server
	bare string
	loop *Loop
}

func newGHRepo(t *testing.T, f *fakes, files map[string]string) *ghRepo {
	t.Helper()
	r := &ghRepo{t: t, gh: githubtest.New(t), bare: gitbed.New(t, files)}
	r.gh.UseRepo(r.bare)
	r.gh.RequiredContexts = []string{publish.CheckContext}
	repo, err := gitrepo.Clone(context.Background(), gitrepo.Remote{URL: r.bare, Base: "main"}, filepath.Join(t.TempDir(), "work"))
	if err != nil {
		t.Fatal(err)
	}
	prs, err := githubpr.New("o", "r", "main", githubpr.Options{BaseURL: r.gh.URL, Token: r.gh.Token, WriteSpacing: -1})
	if err != nil {
		t.Fatal(err)
	}
	r.loop = New(Config{
		Repo: repo, PRs: prs, Name: "cairn", Email: "cairn@example.com",
		Layout:  spec.Layout{SpecsDir: "clusters"},
		Specs:   spec.Serve(spec.Etcd(), spec.Postgres()),
		Observe: func(context.Context, []spec.Cluster) (*live.Snapshot, error) { return nil, nil },
		Policies: func(dir string) (policies.Set, error) {
			return policies.LoadDir(filepath.Join(dir, PoliciesDir), time.Now())
		},
		Plan: f.Plan, Render: f.Render, Gates: f,
	})
	return r
}

// person signs a person's commits.
func person() object.Signature {
	return object.Signature{Name: "A Person", Email: "person@example.com", When: time.Now()}
}

// propose pushes a person's branch (main's head and files) and opens
// its pull request, returning its number.
func (r *ghRepo) propose(branch string, files map[string]string) int {
	r.t.Helper()
	gitbed.Forge(r.t, r.bare, branch, "", files, "a person's change", person())
	var out struct{ Number int }
	r.call(http.MethodPost, "/repos/o/r/pulls", map[string]string{"title": branch, "head": branch, "base": "main"}, http.StatusCreated, &out)
	return out.Number
}

// merge asks GitHub to merge pull request n: its status code and message.
func (r *ghRepo) merge(n int) (int, string) {
	r.t.Helper()
	var out struct{ Message string }
	code := r.call(http.MethodPut, fmt.Sprintf("/repos/o/r/pulls/%d/merge", n), map[string]string{}, 0, &out)
	return code, out.Message
}

func (r *ghRepo) call(method, path string, in any, want int, out any) int {
	r.t.Helper()
	body, _ := json.Marshal(in)
	req, err := http.NewRequest(method, r.gh.URL+path, bytes.NewReader(body))
	if err != nil {
		r.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+r.gh.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	_ = json.NewDecoder(resp.Body).Decode(out)
	if want != 0 && resp.StatusCode != want {
		r.t.Fatalf("%s %s: %d, want %d", method, path, resp.StatusCode, want)
	}
	return resp.StatusCode
}

// status is the state and description of pull request n's head's
// cairn/plan status; "" when it has none.
func (r *ghRepo) status(n int) (state, description string) {
	r.t.Helper()
	for _, pr := range r.gh.PRs {
		if pr.Number == n {
			s := r.gh.Statuses[pr.Head.SHA]
			if s["context"] != publish.CheckContext {
				return "", ""
			}
			return s["state"], s["description"]
		}
	}
	r.t.Fatalf("no pull request #%d", n)
	return "", ""
}

// With cairn/plan required on main, every pull request gets it: a
// person's spec change that plans may merge, one whose spec is invalid,
// whose change a rule refuses or that edits rendered/ by hand is refused
// by GitHub (405) with the reason in the status, one that changes nothing
// cairn reads may merge, and cairn's own step pull request keeps its
// status; one whose head cannot be fetched gets none and fails no pass.
// A pass writes a status only when the head or its verdict changed; a
// fix pushed to the broken pull request turns it green.
func TestEveryPullRequestGetsTheRequiredStatus(t *testing.T) {
	f := &fakes{next: []string{"s1"}, fp: "f1", refuse: "shrunk"}
	r := newGHRepo(t, f, map[string]string{"clusters/kv.yaml": kvSpec, "README.md": "the fleet\n"})
	good := r.propose("add-db", map[string]string{"clusters/db.yaml": strings.Replace(kvSpec, "name: kv", "name: db", 1)})
	broken := r.propose("broken", map[string]string{"clusters/bad.yaml": strings.Replace(kvSpec, "size", "sise", 1)})
	shrunk := r.propose("shrink", map[string]string{"clusters/shrunk.yaml": strings.Replace(kvSpec, "name: kv", "name: shrunk", 1)})
	docs := r.propose("docs", map[string]string{"README.md": "the fleet, documented\n"})
	hand := r.propose("hand-edit", map[string]string{"rendered/kv/kustomization.yaml": "resources: []\n"})
	// A pull request whose head cannot be fetched (its branch and
	// refs/pull gone) gets no status and fails no pass.
	gone := r.propose("gone", map[string]string{"clusters/gone.yaml": kvSpec})
	b, err := git.PlainOpen(r.bare)
	if err != nil {
		t.Fatal(err)
	}
	for _, ref := range []plumbing.ReferenceName{"refs/heads/gone", plumbing.ReferenceName(fmt.Sprintf("refs/pull/%d/head", gone))} {
		if err := b.Storer.RemoveReference(ref); err != nil {
			t.Fatal(err)
		}
	}

	if code, msg := r.merge(good); code != http.StatusMethodNotAllowed || msg != `Required status check "cairn/plan" is expected.` {
		t.Fatalf("merge before any pass: %d %q, want 405: the status is required", code, msg)
	}
	if _, err := r.loop.Pass(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		n           int
		state, says string
	}{
		{good, "success", "the specs plan: 2 cluster(s)"},
		{broken, "failure", "specs invalid at "},
		{broken, "failure", ": clusters/bad.yaml:6:3: spec.sise: unknown field"},
		{shrunk, "failure", "1 cluster(s) refuse the change: shrunk: size 3 to 1 loses quorum"},
		{docs, "success", checkNothingRead},
		{hand, "failure", "changes rendered/, which only cairn's step pull requests write"},
		{gone, "", ""},
	} {
		if state, desc := r.status(c.n); state != c.state || !strings.Contains(desc, c.says) {
			t.Errorf("#%d: cairn/plan %s %q, want %s saying %q", c.n, state, desc, c.state, c.says)
		}
	}
	var step int
	for _, pr := range r.gh.Open() {
		if pr.Head.Ref == "cairn/kv/s1" {
			step = pr.Number
		}
	}
	if state, desc := r.status(step); step == 0 || state != "success" {
		t.Fatalf("cairn's step pull request #%d: status %s %q, want its own success", step, state, desc)
	}
	for _, c := range []struct {
		n    int
		code int
		msg  string
	}{
		{broken, http.StatusMethodNotAllowed, `Required status check "cairn/plan" is failing.`},
		{shrunk, http.StatusMethodNotAllowed, `Required status check "cairn/plan" is failing.`},
		{hand, http.StatusMethodNotAllowed, `Required status check "cairn/plan" is failing.`},
		{good, http.StatusOK, ""},
		{docs, http.StatusOK, ""},
	} {
		if code, msg := r.merge(c.n); code != c.code || (c.msg != "" && msg != c.msg) {
			t.Errorf("merge #%d: %d %q, want %d %q", c.n, code, msg, c.code, c.msg)
		}
	}

	// Nothing changed on the open ones: nothing is written again.
	brokenHead := gitbed.Head(t, r.bare, "broken").String()
	if _, err := r.loop.Pass(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := r.gh.StatusCount(brokenHead, publish.CheckContext); n != 1 {
		_, desc := r.status(broken)
		t.Errorf("the broken head's status written %d times over two passes, want once (%q)", n, desc)
	}

	// The fix, pushed to the same branch.
	gitbed.Forge(t, r.bare, "broken", "", map[string]string{"clusters/bad.yaml": strings.Replace(kvSpec, "name: kv", "name: bad", 1)}, "fix", person())
	if _, err := r.loop.Pass(context.Background()); err != nil {
		t.Fatal(err)
	}
	if state, desc := r.status(broken); state != "success" {
		t.Errorf("the fixed pull request: %s %q, want success", state, desc)
	}
	if code, msg := r.merge(broken); code != http.StatusOK {
		t.Errorf("merge the fixed pull request: %d %q", code, msg)
	}
}
