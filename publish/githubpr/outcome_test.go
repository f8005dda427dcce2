package githubpr

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/publish"
	"github.com/cairn-dev/cairn/publish/githubpr/githubtest"
)

// publishNoting is one run that notes outcomes: every "after" gate holds.
func publishNoting(t *testing.T, bare string, p *Provider, liveDoc string) []publish.Outcome {
	t.Helper()
	out, err := publishSetUp(t, bare, p, liveDoc, nil, func(pub *publish.Publisher, obs *live.Snapshot) {
		pub.Live = func(ref plan.ClusterRef) *live.Cluster { return obs.Find(ref.Kind, ref.Name) }
		pub.After = func(plan.ClusterRef, plan.Step) (bool, string) { return true, "" }
	})
	if err != nil {
		t.Fatalf("%+v %v", out, err)
	}
	return out
}

// personMerges merges pull request n through the API.
func personMerges(t *testing.T, f *githubtest.Server, n int) {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"sha": f.HeadSHA(f.PRs[n-1].Head.Ref)})
	req, _ := http.NewRequest(http.MethodPut, fmt.Sprintf("%s/repos/o/r/pulls/%d/merge", f.URL, n), bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+f.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("merge #%d: %v %v", n, resp, err)
	}
	resp.Body.Close()
}

// On GitHub the merged step's pull request gets one outcome comment, with
// GitHub's merge time, when the next step opens; its body's done-when list
// shows the results. Later passes, and a new process, post nothing more.
func TestTheOutcomeIsPostedOnceOnGitHub(t *testing.T) {
	f := githubtest.New(t)
	bare := bareRepo(t)
	f.UseRepo(bare)
	p, _ := newProvider(t, f.URL, f.Token)
	if out := publishNoting(t, bare, p, etcdLive); out[0].Action != publish.ActionOpened {
		t.Fatalf("%+v", out)
	}
	first := f.PRs[0]
	if !strings.Contains(first.Body, "| e-0 | leader | 3.5.21 | yes |") || !strings.Contains(first.Body, "](https://"+strings.TrimPrefix(f.URL, "http://")+"/o/r/commit/") {
		t.Errorf("the body's live table and links:\n%s", first.Body)
	}
	personMerges(t, f, 1)
	live4 := strings.Replace(etcdLive, "replicas: 3", "replicas: 4", 1) + "  - {name: e-3, version: \"3.5.21\", ready: true, role: follower}\n"
	if out := publishNoting(t, bare, p, live4); out[0].Action != publish.ActionOpened || out[0].Step != "etcd-add-4" {
		t.Fatalf("%+v", out)
	}
	if len(first.Comments) != 1 || !strings.Contains(first.Comments[0], "**cairn: step `etcd-add-3` is done.**") ||
		!strings.Contains(first.Comments[0], "after the merge") || !strings.Contains(first.Comments[0], "- **Next step:** #2 `etcd-add-4`") {
		t.Fatalf("outcome comments: %q", first.Comments)
	}
	if !strings.Contains(first.Body, "- ✅ e-3 caught up and was promoted to a voter (held at ") || !strings.Contains(first.Body, "outcome=posted -->") {
		t.Errorf("the merged body:\n%s", first.Body)
	}
	if !strings.Contains(f.PRs[1].Body, "- **Previous step:** #1 `etcd-add-3` (merged)") {
		t.Errorf("the next body:\n%s", f.PRs[1].Body)
	}
	before := p.Counts()
	publishNoting(t, bare, p, live4)
	if c := p.Counts(); c.Writes != before.Writes {
		t.Errorf("a pass after the outcome wrote %d times", c.Writes-before.Writes)
	}
	restarted, _ := newProvider(t, f.URL, f.Token)
	publishNoting(t, bare, restarted, live4)
	if len(first.Comments) != 1 {
		t.Errorf("%d outcome comments after a restart", len(first.Comments))
	}
}
