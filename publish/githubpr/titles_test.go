package githubpr

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/cairn-dev/cairn/planner"
	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/planner/spec"
	"github.com/cairn-dev/cairn/publish"
	"github.com/cairn-dev/cairn/publish/githubpr/githubtest"
	"github.com/cairn-dev/cairn/publish/gitrepo"
)

// long is a cluster name of the longest valid length (spec.MaxNameLength).
var long = "pg-" + strings.Repeat("x", 49)

func pgSpec(version string, instances int) string {
	return fmt.Sprintf("apiVersion: db.example.com/v1alpha1\nkind: PostgresCluster\nmetadata: {name: %s}\nspec:\n  version: %q\n  instances: %d\n  storage: 100Gi\n"+
		"  backup: {schedule: \"0 2 * * *\", storageLocation: \"s3://my-backup-bucket/postgres\"}\n", long, version, instances)
}

func pgLive(version string, primary int) string {
	// The config archives WAL, as its backup policy has it: a minor
	// upgrade is then the only change that restarts the members.
	var params []string
	for _, k := range slices.Sorted(maps.Keys(contract.PostgresArchiveSettings)) {
		params = append(params, fmt.Sprintf("%s: %q", k, "'"+contract.PostgresArchiveSettings[k]+"'"))
	}
	doc := fmt.Sprintf("apiVersion: cairn.dev/v1alpha1\nkind: LiveState\nclusters:\n- kind: PostgresCluster\n  name: %s\n  storage: 100Gi\n  network: restricted\n"+
		"  runtime: {readOnlyRootFilesystem: true}\n  statefulSet: {readOnlyRootFilesystem: true, replicas: 3, version: %q}\n  backup: {schedule: \"0 2 * * *\", timeZone: UTC, storageLocation: \"s3://my-backup-bucket/postgres\", lastSuccessful: \"2026-11-30T02:04:31Z\"}\n"+
		"  parameters: {%s}\n  members:\n", long, version, strings.Join(params, ", "))
	for i := range 3 {
		role := "replica"
		if i == primary {
			role = "primary"
		}
		doc += fmt.Sprintf("  - {name: %s-%d, version: %q, ready: true, role: %s}\n", long, i, version, role)
	}
	return doc
}

// The steps of clusters with the longest valid name (a switchover, a
// major upgrade, a minor upgrade) get titles GitHub takes: at most 256
// characters, cut in the middle so that they keep the cluster, the
// summary's head and its last clause; the whole summary in the body; the
// pull request opens.
func TestTitlesOfTheLongestClusterNamesFit(t *testing.T) {
	tests := []struct{ name, spec, live string }{
		{"scale-in of the primary: a switchover first", pgSpec("14.5", 2), pgLive("14.5", 2)},
		{"minor upgrade", pgSpec("14.9", 3), pgLive("14.5", 0)},
		{"major upgrade", pgSpec("14.9", 3), pgLive("13.14", 0)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := githubtest.New(t)
			bare := bareRepo(t)
			f.UseRepo(bare)
			setSpec(t, bare, tc.spec)
			p, _ := newProvider(t, f.URL, f.Token)
			out, err := publishWith(t, bare, p, tc.live, nil)
			if err != nil || len(out) != 1 || out[0].Action != publish.ActionOpened {
				t.Fatalf("%+v %v", out, err)
			}
			pr := f.Open()[0]
			if n := utf8.RuneCountInString(pr.Title); n > publish.MaxTitle {
				t.Fatalf("title of %d characters", n)
			}
			pl := plannedFor(t, bare, tc.live)
			t.Logf("%d characters: %s (steps %d)", utf8.RuneCountInString(pr.Title), pr.Title, len(pl.Steps))
			for _, s := range pl.Steps {
				title := publish.Title(pl, s)
				full := "cairn: " + long + ": " + s.Summary
				head, tail, cut := strings.Cut(title, " … ")
				if utf8.RuneCountInString(title) > publish.MaxTitle || (!cut && title != full) ||
					(cut && (!strings.HasPrefix(full, head) || !strings.HasSuffix(full, tail) || tail == "")) {
					t.Errorf("step %s (%s): title %q", s.ID, s.Kind, title)
				}
				// The informative end: the summary's last clause, when it fits.
				if i := strings.LastIndex(s.Summary, "; "); cut && i >= 0 && len(s.Summary)-i < publish.MaxTitle/3 && !strings.HasSuffix(title, " … "+s.Summary[i+2:]) {
					t.Errorf("step %s (%s): title %q lost its last clause %q", s.ID, s.Kind, title, s.Summary[i+2:])
				}
			}
			if !strings.Contains(pr.Body, pl.Steps[0].Summary) {
				t.Error("the body lacks the whole summary")
			}
		})
	}
}

// plannedFor plans the bare repo's one cluster against liveDoc.
func plannedFor(t *testing.T, bare, liveDoc string) plan.Plan {
	t.Helper()
	repo, err := gitrepo.Clone(context.Background(), gitrepo.Remote{URL: bare}, filepath.Join(t.TempDir(), "w"))
	if err != nil {
		t.Fatal(err)
	}
	clusters, err := spec.LoadRepo(repo.Dir(), spec.DefaultLayout)
	if err != nil {
		t.Fatal(err)
	}
	obs, err := live.Decode("live.yaml", []byte(liveDoc))
	if err != nil {
		t.Fatal(err)
	}
	return planner.New(planner.Etcd(), planner.Postgres()).Plan(clusters, obs, nil).Plans[0]
}
