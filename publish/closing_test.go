package publish

import (
	"context"
	"maps"
	"path/filepath"
	"testing"

	"github.com/cairn-dev/cairn/publish/gitrepo"
	"github.com/cairn-dev/cairn/testbed"
	"github.com/cairn-dev/cairn/testbed/gitbed"
)

// listThen is a provider that runs then, once, right after a List: another
// run doing its whole pass while this one works from what it listed.
type listThen struct {
	Provider
	then func()
}

func (l *listThen) List(ctx context.Context) ([]PullRequest, error) {
	prs, err := l.Provider.List(ctx)
	if f := l.then; f != nil {
		l.then = nil
		f()
	}
	return prs, err
}

// Two runs that overlap close a superseded pull request once: the later
// one, working from a list that still shows it open, writes nothing.
func TestOverlappingRunsCloseOnce(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, map[string]string{"clusters/e.yaml": testbed.EtcdSpec(5, "3.5.21", "")})
	w.live = testbed.EtcdLive(3, "3.5.21", false, "")
	if o := w.one(); o.Action != ActionOpened {
		t.Fatalf("%+v", o)
	}
	// The spec goes back to 3: converged, the step's pull request closes.
	gitbed.Commit(t, w.bare, map[string]string{"clusters/e.yaml": testbed.EtcdSpec(3, "3.5.21", "")})
	other, err := gitrepo.Clone(ctx, gitrepo.Remote{URL: w.bare}, filepath.Join(t.TempDir(), "other"))
	if err != nil {
		t.Fatal(err)
	}
	b := &world{t: t, bare: w.bare, repo: other, rend: w.rend, prs: &Local{Repo: other, Base: "main"}, live: w.live, opened: map[string]int{}}
	var between map[string]string
	w.prs = &listThen{Provider: w.prs, then: func() {
		if o := b.one(); len(o.Closed) != 1 {
			t.Fatalf("the other run: %+v", o)
		}
		between = refs(t, w.bare)
	}}
	if o := w.one(); len(o.Closed) != 1 {
		t.Fatalf("the overlapping run: %+v", o)
	}
	if after := refs(t, w.bare); !maps.Equal(between, after) {
		t.Errorf("the overlapping run wrote the closed record again: %v -> %v", between, after)
	}
	pr, _ := w.prs.(*listThen).Provider.(*Local).Find(ctx, Branch("e", "etcd-add-3"))
	if pr == nil || pr.State != Closed || pr.CloseReason == "" {
		t.Fatalf("%+v", pr)
	}
}
