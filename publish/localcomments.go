package publish

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/cairn-dev/cairn/publish/gitrepo"
)

// The local provider keeps a branch's comments as one record,
// refs/cairn/comments/<branch>: a JSON list of their bodies, oldest
// first. Close's reason stays in the pull request's record.
const localComments = "comments/"

func (l *Local) commentsRef(branch string) string {
	return gitrepo.RecordPrefix + localComments + branch
}

// Comments implements Commenter. In a batch, the records fetched when it
// began are read, with the batch's own writes.
func (l *Local) Comments(ctx context.Context, pr PullRequest) ([]string, error) {
	if !l.batch {
		if err := l.Repo.FetchRecords(ctx); err != nil {
			return nil, err
		}
	}
	out, _, err := l.comments(pr.Branch)
	return out, err
}

// comments are the comments of branch, and the record they are in (as
// the remote holds it, for a write's lease).
func (l *Local) comments(branch string) ([]string, []byte, error) {
	ref := l.commentsRef(branch)
	remote, err := l.Repo.Record(ref)
	if err != nil {
		return nil, nil, err
	}
	data := remote
	if held, ok := l.heldData(ref); ok {
		data = held
	}
	if data == nil {
		return nil, nil, nil
	}
	var out []string
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, nil, fmt.Errorf("comments of %s: %w", branch, err)
	}
	return out, remote, nil
}

// Comment implements Commenter.
func (l *Local) Comment(ctx context.Context, pr PullRequest, body string) error {
	if !l.batch {
		if err := l.Repo.FetchRecords(ctx); err != nil {
			return err
		}
	}
	have, old, err := l.comments(pr.Branch)
	if err != nil {
		return err
	}
	data, err := json.MarshalIndent(append(have, body), "", "  ")
	if err != nil {
		return err
	}
	data = append(data, '\n')
	if l.batch {
		l.hold(l.commentsRef(pr.Branch), pr.Branch, data, old)
		return nil
	}
	return l.Repo.WriteRecord(ctx, l.commentsRef(pr.Branch), data, old)
}

// SetBody implements Commenter: the record keeps its state.
func (l *Local) SetBody(ctx context.Context, pr PullRequest, body string) error {
	existing, err := l.Find(ctx, pr.Branch)
	if err != nil {
		return err
	}
	if existing == nil {
		return fmt.Errorf("set the body of %s: no pull request", pr.Branch)
	}
	upd := *existing
	upd.Body = body
	return l.write(ctx, upd, existing)
}
