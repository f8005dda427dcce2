package publish

import (
	"context"
	"errors"
	"strings"
)

// State is a pull request's state.
type State string

// The states of a pull request.
const (
	Open   State = "open"
	Closed State = "closed"
	Merged State = "merged"
)

// PullRequest is one proposed step as a provider holds it.
type PullRequest struct {
	// Number is the provider's number; 0 for the local provider, which
	// names pull requests by branch.
	Number int    `json:"number,omitempty"`
	Branch string `json:"branch"`
	Base   string `json:"base"`
	Title  string `json:"title"`
	Body   string `json:"body"`
	State  State  `json:"state"`
	// Head is the branch's commit the pull request was last updated for.
	Head   string   `json:"head"`
	Labels []string `json:"labels,omitempty"`
	// CloseReason says why cairn closed it.
	CloseReason string `json:"closeReason,omitempty"`
	// Check is the commit status cairn sets on Head.
	Check Check `json:"check"`
}

// Check is a commit status: success when nothing holds the step back,
// pending while a policy holds it, failure when a policy denies it.
type Check struct {
	State       string `json:"state"`
	Description string `json:"description"`
}

// CheckContext names cairn's commit status.
const CheckContext = "cairn/plan"

// Provider holds the pull requests of one repo: GitHub, or the local
// provider. It is the set of calls the proposer makes, nothing more.
type Provider interface {
	// Open opens a pull request; one already open for the branch is
	// returned instead (the provider adopts it).
	Open(ctx context.Context, pr PullRequest) (*PullRequest, error)
	// Update sets the title, body, head and labels of an open pull request.
	Update(ctx context.Context, pr PullRequest) error
	// Close closes an open pull request with a comment saying why.
	Close(ctx context.Context, pr PullRequest, reason string) error
	// List returns the pull requests of cairn's branches, open or not.
	List(ctx context.Context) ([]PullRequest, error)
}

// Merger is a provider that lets cairn merge a step's pull request
// (auto-merge).
type Merger interface {
	// Merge merges the open pull request pr into the base if its branch
	// still points at pr.Head, and returns the base's new head. A merge
	// the provider refuses (a required check or review missing, the head
	// moved, a conflict) is an ErrMergeRefused: the pull request is left
	// to a person. GitHub records the refusal on the pull request and
	// tries again once GitHub says it can merge (a check turned green, a
	// reviewer approved) or the pull request changes; the local provider
	// tries again on the next pass. Either is asked only while the step's
	// gates hold.
	Merge(ctx context.Context, pr PullRequest) (string, error)
}

// ErrMergeRefused: the provider would not merge a pull request as it is.
var ErrMergeRefused = errors.New("merge refused")

// BranchPrefix starts the name of every branch cairn publishes.
const BranchPrefix = "cairn/"

// SpecBranchPrefix starts the branches of the spec changes cairn writes
// for a person (cairn switchover): not a step's, so the proposer never
// closes or supersedes their pull requests.
const SpecBranchPrefix = "cairn-spec/"

// SpecBranch is the branch of a spec change named change of one cluster.
func SpecBranch(cluster, change string) string { return SpecBranchPrefix + cluster + "/" + change }

// Branch is the deterministic branch of one step of one cluster.
func Branch(cluster, stepID string) string { return BranchPrefix + cluster + "/" + stepID }

// clusterOf returns the cluster of a cairn branch, or "".
func clusterOf(branch string) string {
	rest, ok := strings.CutPrefix(branch, BranchPrefix)
	if !ok {
		return ""
	}
	cluster, _, _ := strings.Cut(rest, "/")
	return cluster
}
