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

// Comments implements Commenter.
func (l *Local) Comments(ctx context.Context, pr PullRequest) ([]string, error) {
	if err := l.Repo.FetchRecords(ctx); err != nil {
		return nil, err
	}
	out, _, err := l.comments(pr.Branch)
	return out, err
}

func (l *Local) comments(branch string) ([]string, []byte, error) {
	records, err := l.Repo.Records(localComments + branch)
	if err != nil {
		return nil, nil, err
	}
	data := records[l.commentsRef(branch)]
	if data == nil {
		return nil, nil, nil
	}
	var out []string
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, nil, fmt.Errorf("comments of %s: %w", branch, err)
	}
	return out, data, nil
}

// Comment implements Commenter.
func (l *Local) Comment(ctx context.Context, pr PullRequest, body string) error {
	if err := l.Repo.FetchRecords(ctx); err != nil {
		return err
	}
	have, old, err := l.comments(pr.Branch)
	if err != nil {
		return err
	}
	data, err := json.MarshalIndent(append(have, body), "", "  ")
	if err != nil {
		return err
	}
	return l.Repo.WriteRecord(ctx, l.commentsRef(pr.Branch), append(data, '\n'), old)
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
