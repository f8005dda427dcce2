package docs

import (
	"os"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestActionsExampleChecksEveryPullRequest keeps the GitHub Actions
// example from blocking pull requests: a required status that a filtered
// workflow never sets blocks every pull request outside the filter,
// cairn's own step pull requests included; and fork pull requests get a
// token that can report only under pull_request_target, which is safe
// only while nothing from the checkout runs.
func TestActionsExampleChecksEveryPullRequest(t *testing.T) {
	raw, err := os.ReadFile("../examples/github-actions/cairn-check.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var wf struct {
		// YAML 1.1 reads the key on as true, as GitHub does not.
		On   map[string]map[string]any `json:"true"`
		Jobs map[string]struct {
			Steps []struct {
				Uses string         `json:"uses"`
				Run  string         `json:"run"`
				With map[string]any `json:"with"`
			} `json:"steps"`
		} `json:"jobs"`
	}
	if err := yaml.Unmarshal(raw, &wf); err != nil {
		t.Fatal(err)
	}
	for event, opts := range wf.On {
		for _, filter := range []string{"paths", "paths-ignore", "branches"} {
			if _, ok := opts[filter]; ok {
				t.Errorf("on.%s has a %s filter: pull requests outside it never get the required cairn/spec status", event, filter)
			}
		}
	}
	if _, ok := wf.On["pull_request_target"]; !ok {
		t.Errorf("the workflow does not run on pull_request_target: fork pull requests get a read-only token and no status")
	}
	runs := 0
	for name, job := range wf.Jobs {
		for _, st := range job.Steps {
			if strings.HasPrefix(st.Uses, "actions/checkout@") && st.With["persist-credentials"] != false {
				t.Errorf("job %s: the checkout must not persist credentials (persist-credentials: false)", name)
			}
			if st.Run == "" {
				continue
			}
			runs++
			if !strings.Contains(st.Run, `"$PWD:/repo:ro"`) || !strings.Contains(st.Run, " check --repo /repo") {
				t.Errorf("job %s: a run step does something other than cairn check on a read-only checkout:\n%s", name, st.Run)
			}
		}
	}
	if runs != 1 {
		t.Errorf("%d run steps; the workflow runs exactly one, cairn check", runs)
	}
}
