package publish

import (
	"context"

	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/publish/gitrepo"
	"github.com/cairn-dev/cairn/renderer"
)

// A step's ID comes back over a cluster's life (etcd-add-3 on every
// scale-out from 3, upgrade-2-to-14.9 after a rollback and a second try,
// create for a cluster deleted and created again), and its branch keeps
// the pull requests of every cycle. What tells one cycle from the next is
// the base: its rendered entry point of the cluster (renderer.ReadEntry)
// selects the step merged last.
//
//   - The base selects this very step (same ID and kind): the step is
//     merged, by its pull request or by hand, and waits for the live
//     state (ActionMerged). Nothing is published for it meanwhile.
//   - A merged pull request while the base selects another step, or none
//     (the cluster's folder removed), belongs to an earlier cycle: the
//     step is proposed again, in a new pull request.
//   - A pull request a person closed (declined) holds the step back only
//     within its cycle: while the base selects what it selected when the
//     pull request's commit was made (its parent's entry point, step and
//     plan). Once another step of the cluster is merged, the step is
//     proposed again. A commit that cannot be found any more (its branch
//     deleted) keeps the step declined.
//   - A pull request cairn closed (superseded), or one a person closed
//     while it carried a person's commit (see foreign.go), is no decline.
//
// Why the base rather than the plan's ID or spec fingerprint: both repeat
// exactly when a cycle repeats (the same spec against the same live state
// gives the same plan), while a new cycle always merges another step in
// between (a scale-in between two scale-outs, a downgrade between two
// upgrades) or removes the cluster's folder (under GitOps, deleting a
// cluster means deleting what the sync applies). It costs no API call:
// the base is fetched already.

// standing is where a plan's first step stands before anything is
// published: ActionMerged, ActionDeclined, or "" when it is to be
// published. pr is the branch's pull request (see existing), or nil.
func (p *Publisher) standing(ctx context.Context, pl plan.Plan, base *object.Commit, pr *PullRequest) Action {
	s := pl.Steps[0]
	now := entryAt(p.Repo, base, pl.Cluster.Name)
	if now.Step == s.ID {
		if sel, ok := now.Selected(); !ok || sel.Kind == s.Kind {
			return ActionMerged
		}
	}
	if pr == nil || pr.State != Closed || pr.CloseReason != "" || foreignNoted(pr.Body) {
		return ""
	}
	if p.sameCycle(ctx, *pr, now, pl.Cluster.Name) {
		return ActionDeclined
	}
	return ""
}

// sameCycle reports whether the base's entry point now is the one pr's
// commit was made on.
func (p *Publisher) sameCycle(ctx context.Context, pr PullRequest, now renderer.Entry, cluster string) bool {
	if pr.Head == "" {
		return true
	}
	head, err := p.Repo.FindCommit(ctx, pr.Branch, pr.Head)
	if err != nil || head == nil || head.NumParents() != 1 {
		if err != nil {
			p.logger().Warn("the declined pull request's commit cannot be read; it stays declined", "branch", pr.Branch, "err", err.Error())
		}
		return true
	}
	parent, err := head.Parent(0)
	if err != nil {
		return true
	}
	then := entryAt(p.Repo, parent, cluster)
	return then.Step == now.Step && then.Plan.ID == now.Plan.ID
}

// entryAt is what commit c's entry point of cluster selects; the zero
// Entry when it has none that can be read.
func entryAt(r *gitrepo.Repo, c *object.Commit, cluster string) renderer.Entry {
	e, _ := renderer.ReadEntry(r.Reader(c), cluster)
	return e
}

// newCycle reports whether a step is published in a new cycle of its
// branch: the branch's pull request speaks of an earlier cycle, merged
// (standing found that the base selects another step now). The new
// cycle's commit is made on today's base (gitrepo.Change.OnBase), never
// the earlier cycle's kept: its pull request then says what it is built
// on today, and GitHub has commits between the base and the head.
func newCycle(pr *PullRequest) bool { return pr != nil && pr.State == Merged }

// existing is the pull request that speaks for branch: the open one, else
// the newest (a branch keeps the pull requests of each cycle of its
// step); nil when there is none.
func existing(prs []PullRequest, branch string) *PullRequest {
	var found *PullRequest
	for i := range prs {
		pr := &prs[i]
		switch {
		case pr.Branch != branch:
		case pr.State == Open:
			return pr
		case found == nil || pr.Number > found.Number:
			found = pr
		}
	}
	return found
}
