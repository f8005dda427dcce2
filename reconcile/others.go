package reconcile

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"strings"
	"sync"

	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/planner/spec"
	"github.com/cairn-dev/cairn/publish"
	"github.com/cairn-dev/cairn/publish/gitrepo"
)

// PoliciesDir is the folder of the repo the policies are read from.
const PoliciesDir = "policies"

// othersProvider is a provider that lists the open pull requests that
// are not cairn's and sets cairn's commit status on their heads
// (githubpr.Provider). With one, a pass gives every such pull request
// the status cairn/plan, so that a repo can require that one status of
// every pull request: a person's spec change and cairn's steps alike.
type othersProvider interface {
	Others(ctx context.Context) ([]publish.PullRequest, error)
	SetCheck(ctx context.Context, sha string, c publish.Check) error
}

// checked remembers the status set on each pull request's head, so that
// a pass writes only what changed.
type checked struct {
	mu  sync.Mutex
	set map[int]headCheck
}

type headCheck struct {
	sha   string
	check publish.Check
}

// touched says which of the folders cairn reads a pull request's
// changed paths are in.
type touched struct{ specs, policies, rendered bool }

// touches sorts paths into the folders of layout: the specs, the
// policies and cairn's rendered output (which a spec folder may hold:
// rendered wins).
func touches(paths []string, l spec.Layout) touched {
	l = withDefaults(l)
	var t touched
	for _, p := range paths {
		switch {
		case inDir(p, l.RenderedDir) || (inDir(p, l.SpecsDir) && strings.Contains("/"+p, "/"+l.RenderedDir+"/")):
			t.rendered = true
		case inDir(p, l.SpecsDir):
			t.specs = true
		case inDir(p, PoliciesDir):
			t.policies = true
		}
	}
	return t
}

func withDefaults(l spec.Layout) spec.Layout {
	if l.SpecsDir == "" {
		l.SpecsDir = spec.DefaultLayout.SpecsDir
	}
	if l.RenderedDir == "" {
		l.RenderedDir = spec.DefaultLayout.RenderedDir
	}
	return l
}

func inDir(p, dir string) bool {
	dir = strings.Trim(path.Clean(dir), "/")
	return strings.HasPrefix(p, dir+"/")
}

// The descriptions of the status on others' pull requests (GitHub keeps
// 140 characters).
const (
	checkNothingRead = "changes no spec, policy or rendered file: nothing for cairn to plan"
	checkRendered    = "changes %s/, which only cairn's step pull requests write: change the specs in %s/ instead"
)

// decideOthers is the status of a pull request whose changes are t, and
// whose head's specs and policies loaded with loadErr and planned as
// plans (when loadErr is nil): pure.
func decideOthers(t touched, l spec.Layout, loadErr error, plans plan.List) publish.Check {
	l = withDefaults(l)
	switch {
	case t.rendered:
		return publish.Check{State: "failure", Description: fmt.Sprintf(checkRendered, l.RenderedDir, l.SpecsDir)}
	case !t.specs && !t.policies:
		return publish.Check{State: "success", Description: checkNothingRead}
	case loadErr != nil:
		return publish.Check{State: "failure", Description: oneLine(loadErr.Error())}
	}
	var refused []string
	steps := 0
	for _, p := range plans.Plans {
		if p.Status == plan.StatusRefused {
			why := p.Cluster.Name
			if len(p.Refusals) > 0 {
				why += ": " + p.Refusals[0].Reason
			}
			refused = append(refused, why)
		}
		if len(p.Steps) > 0 {
			steps++
		}
	}
	if len(refused) > 0 {
		return publish.Check{State: "failure", Description: oneLine(fmt.Sprintf("%d cluster(s) refuse the change: %s", len(refused), strings.Join(refused, "; ")))}
	}
	return publish.Check{State: "success", Description: fmt.Sprintf("the specs plan: %d cluster(s), %d with steps to propose once merged", len(plans.Plans), steps)}
}

// oneLine is s on one line, cut to what GitHub keeps of a description.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 140 {
		s = string(r[:137]) + "..."
	}
	return s
}

// checkOthers gives every open pull request that is not cairn's the
// cairn/plan status of its head (decideOthers): the specs and policies
// at its head loaded, validated and planned against the live state this
// pass observed. Only the replica that owns a pull request (Owns, by
// its number) checks it. A pull request that cannot be checked now (its
// head not fetched, GitHub refusing the status) is logged and left as it
// was, for the next pass: a person's pull request never fails cairn's
// own pass.
func (l *Loop) checkOthers(ctx context.Context, base *object.Commit, observed *live.Snapshot) {
	op, ok := l.cfg.PRs.(othersProvider)
	if !ok {
		return
	}
	prs, err := op.Others(ctx)
	if err != nil {
		l.cfg.Log.Warn("list others' pull requests failed", "err", err.Error())
		return
	}
	seen := map[int]bool{}
	for _, pr := range prs {
		seen[pr.Number] = true
		if l.cfg.Owns != nil && !l.cfg.Owns(plan.ClusterRef{Kind: "PullRequest", Name: fmt.Sprint(pr.Number)}) {
			continue
		}
		c, err := l.checkOne(ctx, base, observed, pr)
		if err != nil {
			l.cfg.Log.Warn("check pull request failed", "pr", pr.Number, "head", pr.Head, "err", err.Error())
			continue
		}
		if last, ok := l.others.get(pr.Number); ok && last == (headCheck{pr.Head, c}) {
			continue
		}
		if err := op.SetCheck(ctx, pr.Head, c); err != nil {
			l.cfg.Log.Warn("set pull request status failed", "pr", pr.Number, "head", pr.Head, "err", err.Error())
			continue
		}
		l.others.put(pr.Number, headCheck{pr.Head, c})
	}
	l.others.keep(seen)
}

// checkOne decides the status of one pull request's head.
func (l *Loop) checkOne(ctx context.Context, base *object.Commit, observed *live.Snapshot, pr publish.PullRequest) (publish.Check, error) {
	repo := l.cfg.Repo
	head, err := repo.FetchPull(ctx, pr.Number, pr.Head)
	if err != nil {
		return publish.Check{}, err
	}
	paths, err := repo.ChangedPaths(base, head)
	if err != nil {
		return publish.Check{}, err
	}
	t := touches(paths, l.cfg.Layout)
	if t.rendered || (!t.specs && !t.policies) {
		return decideOthers(t, l.cfg.Layout, nil, plan.List{}), nil
	}
	dir, err := os.MkdirTemp("", "cairn-pr-")
	if err != nil {
		return publish.Check{}, err
	}
	defer os.RemoveAll(dir)
	layout := withDefaults(l.cfg.Layout)
	if err := repo.Extract(head, dir, layout.SpecsDir, PoliciesDir); errors.Is(err, gitrepo.ErrTooLarge) {
		return decideOthers(t, l.cfg.Layout, err, plan.List{}), nil
	} else if err != nil {
		return publish.Check{}, err
	}
	// The errors name files by their path in the repo, not in dir.
	inRepo := func(what string, err error) error {
		return fmt.Errorf("%s invalid at %.7s: %s", what, pr.Head, strings.ReplaceAll(err.Error(), dir+string(os.PathSeparator), ""))
	}
	clusters, err := l.cfg.Specs.LoadRepo(dir, l.cfg.Layout)
	if err != nil {
		return decideOthers(t, l.cfg.Layout, inRepo("specs", err), plan.List{}), nil
	}
	pols, err := l.cfg.Policies(dir)
	if err != nil {
		return decideOthers(t, l.cfg.Layout, inRepo("policies", err), plan.List{}), nil
	}
	return decideOthers(t, l.cfg.Layout, nil, l.cfg.Plan(clusters, observed, pols)), nil
}

func (c *checked) get(n int) (headCheck, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	h, ok := c.set[n]
	return h, ok
}

func (c *checked) put(n int, h headCheck) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.set == nil {
		c.set = map[int]headCheck{}
	}
	c.set[n] = h
}

// keep forgets the pull requests no longer open.
func (c *checked) keep(open map[int]bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for n := range c.set {
		if !open[n] {
			delete(c.set, n)
		}
	}
}
