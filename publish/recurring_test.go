package publish

import (
	"context"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/testbed"
	"github.com/cairn-dev/cairn/testbed/gitbed"
)

// A step that comes back in a later cycle of the cluster's life gets one
// new pull request; within a cycle, a merged step waits for the live
// state and opens nothing (walk checks both at every step).
func TestARecurringStepIsProposedAgain(t *testing.T) {
	tests := []struct {
		name   string
		spec   string
		cycles func(w *world)
		// opened: pull requests opened per branch over all cycles.
		opened map[string]int
	}{
		{"scale 3 -> 5 -> 3 -> 5", testbed.EtcdSpec(5, "3.5.21", ""), func(w *world) {
			w.walk([]string{"etcd-add-3", "etcd-add-4"}, []string{testbed.EtcdLive(3, "3.5.21", false, ""), testbed.EtcdLive(4, "3.5.21", false, ""), testbed.EtcdLive(5, "3.5.21", false, "")}, w.merge)
			gitbed.Commit(w.t, w.bare, map[string]string{"clusters/e.yaml": testbed.EtcdSpec(3, "3.5.21", "")})
			w.walk([]string{"etcd-remove-4", "scale-in-4", "etcd-remove-3", "scale-in-3"}, []string{testbed.EtcdLive(5, "3.5.21", false, ""),
				testbed.EtcdLive(5, "3.5.21", true, ""), testbed.EtcdLive(4, "3.5.21", false, ""), testbed.EtcdLive(4, "3.5.21", true, ""), testbed.EtcdLive(3, "3.5.21", false, "")}, w.merge)
			gitbed.Commit(w.t, w.bare, map[string]string{"clusters/e.yaml": testbed.EtcdSpec(5, "3.5.21", "")})
			w.walk([]string{"etcd-add-3", "etcd-add-4"}, []string{testbed.EtcdLive(3, "3.5.21", false, ""), testbed.EtcdLive(4, "3.5.21", false, ""), testbed.EtcdLive(5, "3.5.21", false, "")}, w.merge)
		}, map[string]int{"cairn/e/etcd-add-3": 2, "cairn/e/etcd-add-4": 2, "cairn/e/etcd-remove-4": 1, "cairn/e/scale-in-3": 1}},
		{"upgrade, revert, upgrade again", testbed.EtcdSpec(1, "3.5.21", ""), func(w *world) {
			w.walk([]string{"upgrade-0-to-3.5.21"}, []string{testbed.EtcdLive(1, "3.5.20", false, ""), testbed.EtcdLive(1, "3.5.21", false, "")}, w.merge)
			gitbed.Commit(w.t, w.bare, map[string]string{"clusters/e.yaml": testbed.EtcdSpec(1, "3.5.20", "")})
			w.walk([]string{"upgrade-0-to-3.5.20"}, []string{testbed.EtcdLive(1, "3.5.21", false, ""), testbed.EtcdLive(1, "3.5.20", false, "")}, w.merge)
			gitbed.Commit(w.t, w.bare, map[string]string{"clusters/e.yaml": testbed.EtcdSpec(1, "3.5.21", "")})
			w.walk([]string{"upgrade-0-to-3.5.21"}, []string{testbed.EtcdLive(1, "3.5.20", false, ""), testbed.EtcdLive(1, "3.5.21", false, "")}, w.merge)
		}, map[string]int{"cairn/e/upgrade-0-to-3.5.21": 2, "cairn/e/upgrade-0-to-3.5.20": 1}},
		{"delete and re-create the cluster", testbed.EtcdSpec(3, "3.5.21", ""), func(w *world) {
			born := []string{testbed.NoLive, testbed.EtcdLive(3, "3.5.21", false, "  bootstrap: new\n"), testbed.EtcdLive(3, "3.5.21", false, "")}
			w.walk([]string{"create", "seal-bootstrap"}, born, w.merge)
			// Deleted under GitOps: its spec and what the sync applies.
			gitbed.Commit(w.t, w.bare, map[string]string{"clusters/e.yaml": "", "rendered/e": "", "clusters/README.md": "specs\n"})
			w.live = testbed.NoLive
			if o := w.one(); o.Action != "" {
				t.Fatalf("a deleted cluster: %+v", o)
			}
			gitbed.Commit(w.t, w.bare, map[string]string{"clusters/e.yaml": testbed.EtcdSpec(3, "3.5.21", "")})
			w.walk([]string{"create", "seal-bootstrap"}, born, w.merge)
		}, map[string]int{"cairn/e/create": 2, "cairn/e/seal-bootstrap": 2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, map[string]string{"clusters/e.yaml": tc.spec})
			tc.cycles(w)
			for branch, n := range tc.opened {
				if w.opened[branch] != n {
					t.Errorf("%s: %d pull requests opened, want %d (all: %v)", branch, w.opened[branch], n, w.opened)
				}
			}
		})
	}
}

// A pull request a person closed declines its step for the cycle: not on
// unrelated commits to the base, only once another step of the cluster
// was merged.
func TestADeclinedStepComesBackOnlyInALaterCycle(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, map[string]string{"clusters/e.yaml": testbed.EtcdSpec(5, "3.5.21", "")})
	w.live = testbed.EtcdLive(3, "3.5.21", false, "")
	if o := w.one(); o.Action != ActionOpened || o.Step != "etcd-add-3" {
		t.Fatalf("%+v", o)
	}
	pr, err := w.prs.(*Local).Find(ctx, Branch("e", "etcd-add-3"))
	if err != nil || pr == nil {
		t.Fatal(pr, err)
	}
	if err := w.prs.Close(ctx, *pr, ""); err != nil { // a person closes it
		t.Fatal(err)
	}
	gitbed.Commit(t, w.bare, map[string]string{"README.md": "unrelated\n"})
	if o := w.one(); o.Action != ActionDeclined {
		t.Fatalf("declined in this cycle: %+v", o)
	}
	// Another step of the cluster is merged: a new cycle.
	gitbed.Commit(t, w.bare, map[string]string{"clusters/e.yaml": testbed.EtcdSpec(3, "3.5.21", ", storage: 10Gi")})
	grown := strings.Replace(w.live, "storage: 8Gi", "storage: 10Gi", 1)
	w.walk([]string{"expand-storage-10gi"}, []string{w.live, grown}, w.merge)
	gitbed.Commit(t, w.bare, map[string]string{"clusters/e.yaml": testbed.EtcdSpec(5, "3.5.21", ", storage: 10Gi")})
	if o := w.one(); o.Action != ActionOpened || o.Step != "etcd-add-3" {
		t.Fatalf("in the next cycle: %+v", o)
	}
}

func TestTheOpenOrNewestPullRequestSpeaksForABranch(t *testing.T) {
	b := Branch("e", "etcd-add-3")
	tests := []struct {
		name string
		prs  []PullRequest
		want int
	}{
		{"open after merged", []PullRequest{{Number: 1, Branch: b, State: Merged}, {Number: 5, Branch: b, State: Open}}, 5},
		{"open listed first", []PullRequest{{Number: 5, Branch: b, State: Open}, {Number: 1, Branch: b, State: Merged}}, 5},
		{"newest of the closed", []PullRequest{{Number: 3, Branch: b, State: Closed}, {Number: 9, Branch: b, State: Merged}, {Number: 4, Branch: b, State: Closed}}, 9},
		{"another branch", []PullRequest{{Number: 3, Branch: Branch("e", "etcd-add-4"), State: Open}}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := existing(tc.prs, b)
			if (got == nil) != (tc.want == 0) || (got != nil && got.Number != tc.want) {
				t.Fatalf("got %+v, want #%d", got, tc.want)
			}
		})
	}
}
