package main

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/publish"
	"github.com/cairn-dev/cairn/testbed/gitbed"
)

// commitHashes are the commit hashes of a test repo, which change with
// the time its commits were made.
var commitHashes = regexp.MustCompile(`\b[0-9a-f]{40}\b|\b[0-9a-f]{12}\b`)

// TestPRShow: a recorded pull request shows as gh pr view shows one, by
// its branch with or without cairn/; -o json is the record.
func TestPRShow(t *testing.T) {
	bare := gitbed.New(t, exampleFiles(t))
	if code, out, errOut := cairn(t, "propose", "--repo", bare, "--live", "../../examples/fleet/live.yaml"); code != exitOK {
		t.Fatalf("propose: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, errOut := cairn(t, "pr", "show", "cairn/my-production-db/pg-add-2", "--repo", bare)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	// The body is the record's, as publish writes it (and its tests
	// check); the golden file holds what pr show adds before it.
	_, js, _ := cairn(t, "pr", "show", "cairn/my-production-db/pg-add-2", "--repo", bare, "-o", "json")
	var rec publish.PullRequest
	if err := json.Unmarshal([]byte(js), &rec); err != nil {
		t.Fatal(err)
	}
	head, body, ok := strings.Cut(out, "\n\n")
	if !ok || body != strings.TrimRight(rec.Body, "\n")+"\n" {
		t.Errorf("the body shown is not the record's:\n%s", out)
	}
	head = commitHashes.ReplaceAllStringFunc(head, func(h string) string { return strings.Repeat("x", len(h)) })
	golden(t, "pr-show.txt", head+"\n")

	onTerminal(t)
	_, tty, _ := cairn(t, "pr", "show", "my-production-db/pg-add-2", "--repo", bare)
	if !strings.Contains(tty, "\x1b[32mopen\x1b[0m • cairn/my-production-db/pg-add-2 into main") {
		t.Errorf("on a terminal:\n%s", tty)
	}

	_, js, _ = cairn(t, "pr", "show", "my-etcd-cluster/etcd-add-1", "--repo", bare, "-o", "json")
	var pr publish.PullRequest
	if err := json.Unmarshal([]byte(js), &pr); err != nil || pr.Branch != "cairn/my-etcd-cluster/etcd-add-1" || pr.State != publish.Open || pr.Body == "" {
		t.Errorf("-o json: %v\n%s", err, js)
	}
	_, list, _ := cairn(t, "pr", "list", "--repo", bare, "-o", "yaml")
	if strings.Count(list, "branch: cairn/") != 2 {
		t.Errorf("pr list -o yaml:\n%s", list)
	}
	code, _, errOut = cairn(t, "pr", "show", "cairn/nope/x", "--repo", bare)
	if code != exitUsage || !strings.Contains(errOut, `no pull request for branch "cairn/nope/x" (cairn pr list shows them: cairn/my-etcd-cluster/etcd-add-1, cairn/my-production-db/pg-add-2)`) {
		t.Errorf("unknown branch: exit %d %s", code, errOut)
	}
}
