package githubpr

import (
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/publish/githubpr/githubtest"
)

// A member going down turns the open step pull request's cairn/plan
// status pending within one pass, with the reason, and back to success
// when it recovers; a pass that sees nothing new writes nothing.
func TestAMemberDownTurnsTheOpenPullRequestPending(t *testing.T) {
	f := githubtest.New(t)
	bare := bareRepo(t)
	f.UseRepo(bare)
	p, _ := newProvider(t, f.URL, f.Token)
	state := func() (string, string) {
		t.Helper()
		open := f.Open()
		if len(open) != 1 {
			t.Fatalf("%d open pull requests, want 1", len(open))
		}
		st := f.Statuses[open[0].Head.SHA]
		return st["state"], st["description"]
	}
	if _, err := publishOnce(t, bare, p); err != nil {
		t.Fatal(err)
	}
	if s, _ := state(); s != "success" {
		t.Fatalf("status %s, want success", s)
	}
	down := strings.Replace(etcdLive, "{name: e-2, version: \"3.5.21\", ready: true", "{name: e-2, version: \"3.5.21\", ready: false", 1)
	if _, err := publishWith(t, bare, p, down, nil); err != nil {
		t.Fatal(err)
	}
	if s, why := state(); s != "pending" || !strings.Contains(why, "e-2") {
		t.Fatalf("with e-2 down: status %s (%q), want pending naming e-2", s, why)
	}
	if body := f.Open()[0].Body; !strings.Contains(body, "e-2") {
		t.Errorf("the body does not say what the step waits for:\n%s", body)
	}
	before := p.Counts().Writes
	if _, err := publishWith(t, bare, p, down, nil); err != nil {
		t.Fatal(err)
	}
	if w := p.Counts().Writes - before; w != 0 {
		t.Errorf("a pass that sees e-2 still down wrote %d times", w)
	}
	if _, err := publishOnce(t, bare, p); err != nil {
		t.Fatal(err)
	}
	if s, _ := state(); s != "success" {
		t.Fatalf("after e-2 recovered: status %s, want success", s)
	}
}
