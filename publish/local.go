package publish

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/cairn-dev/cairn/publish/gitrepo"
	"github.com/cairn-dev/cairn/renderer"
)

// Local keeps pull requests in the GitOps repo itself, as records under
// refs/cairn/pr/<branch>: the default when no GitHub repository is
// configured. A person reviews a step's branch and merges it with git;
// Local sees it merged once the base branch contains the branch's commit.
type Local struct {
	Repo *gitrepo.Repo
	Base string
	// Name and Email sign the merge commits of auto-merge; default cairn.
	Name, Email string
	// records are the pull requests as List last read them, with cairn's
	// own writes since, and the raw record each write's lease expects:
	// Find, Open, Update and Close in a pass read no ref again. nil: read
	// them (List, or the first Find). A write that fails drops them, so
	// the next call reads what another writer made.
	records map[string]localRecord
	// batch: writes are held (held, in heldOrder) until FlushBatch
	// (localbatch.go).
	batch     bool
	held      map[string]*heldRecord
	heldOrder []string
}

type localRecord struct {
	pr   PullRequest
	data []byte
}

const localPrefix = "pr/"

func (l *Local) ref(branch string) string { return gitrepo.RecordPrefix + localPrefix + branch }

// Find implements Provider: from the records List read last, with cairn's
// writes since (the first call reads them).
func (l *Local) Find(ctx context.Context, branch string) (*PullRequest, error) {
	if l.records == nil {
		if _, err := l.load(ctx); err != nil {
			return nil, err
		}
	}
	rec, ok := l.records[branch]
	if !ok {
		return nil, nil
	}
	pr := rec.pr
	return &pr, nil
}

// reload drops the records read, then finds branch again: after a write
// lost to another writer.
func (l *Local) reload(ctx context.Context, branch string) (*PullRequest, error) {
	l.records = nil
	return l.Find(ctx, branch)
}

// Open implements Provider.
func (l *Local) Open(ctx context.Context, pr PullRequest) (*PullRequest, error) {
	existing, err := l.Find(ctx, pr.Branch)
	if err != nil {
		return nil, err
	}
	if existing != nil && existing.State == Open {
		return existing, nil
	}
	pr.State, pr.Base, pr.CloseReason = Open, l.Base, ""
	if err := l.write(ctx, pr, existing); err != nil {
		// Another publisher may have recorded it first: adopt theirs.
		if again, ferr := l.reload(ctx, pr.Branch); ferr == nil && again != nil && again.State == Open {
			return again, nil
		}
		return nil, err
	}
	return &pr, nil
}

// Update implements Provider.
func (l *Local) Update(ctx context.Context, pr PullRequest) error {
	existing, err := l.Find(ctx, pr.Branch)
	if err != nil {
		return err
	}
	if existing == nil || existing.State != Open {
		return fmt.Errorf("update %s: no open pull request", pr.Branch)
	}
	pr.State, pr.Base = Open, existing.Base
	return l.write(ctx, pr, existing)
}

// Close implements Provider: one write of the record, closed with the
// reason (its comment). A pull request no longer open is left as it is,
// so a repeated or overlapping close writes nothing; losing the race to
// another writer is fine once the record shows it closed.
func (l *Local) Close(ctx context.Context, pr PullRequest, reason string) error {
	existing, err := l.Find(ctx, pr.Branch)
	if err != nil || existing == nil || existing.State != Open {
		return err
	}
	closed := *existing
	closed.State, closed.CloseReason = Closed, reason
	err = l.write(ctx, closed, existing)
	if err != nil {
		if again, ferr := l.reload(ctx, pr.Branch); ferr == nil && again != nil && again.State != Open {
			return nil
		}
	}
	return err
}

// List implements Provider: it reads every record again.
func (l *Local) List(ctx context.Context) ([]PullRequest, error) { return l.load(ctx) }

func (l *Local) load(ctx context.Context) ([]PullRequest, error) {
	l.records = nil
	if err := l.Repo.FetchRecords(ctx); err != nil {
		return nil, err
	}
	if err := l.Repo.Fetch(ctx); err != nil {
		return nil, err
	}
	records, err := l.Repo.Records(localPrefix)
	if err != nil {
		return nil, err
	}
	var out []PullRequest
	index := make(map[string]localRecord, len(records))
	for ref, data := range records {
		var pr PullRequest
		if err := json.Unmarshal(data, &pr); err != nil {
			return nil, fmt.Errorf("pull request record %s: %w", ref, err)
		}
		raw := data
		if pr.State == Open && pr.Head != "" {
			if merged, err := l.Repo.Merged(pr.Head); err != nil {
				return nil, err
			} else if merged {
				pr.State = Merged
			}
		}
		if ref == l.ref(pr.Branch) {
			index[pr.Branch] = localRecord{pr: pr, data: raw}
		}
		out = append(out, pr)
	}
	slices.SortFunc(out, func(a, b PullRequest) int { return strings.Compare(a.Branch, b.Branch) })
	l.records = index
	return out, nil
}

func (l *Local) write(ctx context.Context, pr PullRequest, old *PullRequest) error {
	data, err := json.MarshalIndent(pr, "", "  ")
	if err != nil {
		return err
	}
	data = append(data, '\n')
	var oldData []byte
	if old != nil {
		if l.records == nil {
			if _, err := l.load(ctx); err != nil {
				return err
			}
		}
		oldData = l.records[pr.Branch].data
	}
	switch {
	case l.batch && l.records != nil:
		if h, ok := l.held[l.ref(pr.Branch)]; ok {
			oldData = h.old
		}
		l.hold(l.ref(pr.Branch), pr.Branch, data, oldData)
	default:
		if err := l.Repo.WriteRecord(ctx, l.ref(pr.Branch), data, oldData); err != nil {
			l.records = nil
			return err
		}
	}
	if l.records != nil {
		l.records[pr.Branch] = localRecord{pr: pr, data: data}
	}
	return nil
}

// Merge implements Merger: a fast-forward of the base to the step's
// commit, or a merge commit when other steps were merged meanwhile. A
// base that changed the step's folder by hand, or a branch that moved, is
// refused.
func (l *Local) Merge(ctx context.Context, pr PullRequest) (string, error) {
	root := renderer.Root(clusterOf(pr.Branch))
	msg := fmt.Sprintf("Merge %s (auto-merge)\n\n%s\n", pr.Branch, pr.Title)
	sig := object.Signature{Name: cmp.Or(l.Name, "cairn"), Email: cmp.Or(l.Email, "cairn@users.noreply.cairn.dev")}
	h, err := l.Repo.Merge(ctx, pr.Branch, pr.Head, root, msg, sig)
	if errors.Is(err, gitrepo.ErrNotMergeable) {
		return "", fmt.Errorf("%w: %w", ErrMergeRefused, err)
	}
	if err != nil {
		return "", err
	}
	return h.String(), nil
}
