package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/testbed/gitbed"
	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
)

func refs(t *testing.T, bare string) map[string]string {
	t.Helper()
	repo, _ := git.PlainOpen(bare)
	it, _ := repo.References()
	out := map[string]string{}
	_ = it.ForEach(func(r *plumbing.Reference) error { out[r.Name().String()] = r.Hash().String(); return nil })
	return out
}

func exampleFiles(t *testing.T) map[string]string {
	files := map[string]string{}
	for _, f := range []string{"clusters/my-etcd-cluster.yaml", "clusters/my-production-db.yaml"} {
		data, err := os.ReadFile(filepath.Join("../../examples/fleet", f))
		if err != nil {
			t.Fatal(err)
		}
		files[f] = string(data)
	}
	return files
}

func TestProposeLocalProviderStepByStep(t *testing.T) {
	bare := gitbed.New(t, exampleFiles(t))
	liveFile := filepath.Join(t.TempDir(), "live.yaml")
	data, _ := os.ReadFile("../../examples/fleet/live.yaml")
	_ = os.WriteFile(liveFile, data, 0o644)
	propose := func() string {
		t.Helper()
		code, out, errOut := cairn(t, "propose", "--repo", bare, "--live", liveFile)
		if code != exitOK {
			t.Fatalf("propose: exit %d\n%s\n%s", code, out, errOut)
		}
		return out
	}

	out := propose()
	if strings.Count(out, "opened") != 2 {
		t.Fatalf("first run:\n%s", out)
	}
	before := refs(t, bare)
	if before["refs/heads/cairn/my-etcd-cluster/etcd-add-1"] == "" || before["refs/cairn/pr/cairn/my-production-db/pg-add-2"] == "" {
		t.Fatalf("branches and records: %v", before)
	}

	// Nothing changed: nothing is written.
	out = propose()
	if strings.Count(out, "unchanged") != 2 {
		t.Fatalf("second run:\n%s", out)
	}
	after := refs(t, bare)
	for k, v := range before {
		if after[k] != v {
			t.Errorf("%s moved on a no-op run", k)
		}
	}

	// The etcd step is merged: no new pull request until the live state
	// shows it done.
	gitbed.Merge(t, bare, "cairn/my-etcd-cluster/etcd-add-1")
	if out = propose(); !strings.Contains(out, "etcd-add-1   merged") && !strings.Contains(out, "merged") {
		t.Fatalf("after merge:\n%s", out)
	}
	// The member joined: the next step's pull request opens.
	grown := mustReplace(t, string(data), "statefulSet: {readOnlyRootFilesystem: true, replicas: 1, updatePartition: 0, version: \"3.2.13\"}",
		"statefulSet: {readOnlyRootFilesystem: true, replicas: 2, updatePartition: 0, version: \"3.2.13\"}")
	grown = mustReplace(t, grown, "      - {name: my-etcd-cluster-0, version: \"3.2.13\", ready: true, role: leader, tls: true, peerTLS: true}\n",
		"      - {name: my-etcd-cluster-0, version: \"3.2.13\", ready: true, role: leader, tls: true, peerTLS: true}\n      - {name: my-etcd-cluster-1, version: \"3.2.13\", ready: true, role: follower, tls: true, peerTLS: true}\n")
	_ = os.WriteFile(liveFile, []byte(grown), 0o644)
	if out = propose(); !strings.Contains(out, "etcd-add-2") || !strings.Contains(out, "opened") {
		t.Fatalf("next step:\n%s", out)
	}

	// A spec edit that is refused closes the open pull request with the
	// reason and publishes no broken manifests.
	files := exampleFiles(t)
	files["clusters/my-production-db.yaml"] = strings.Replace(files["clusters/my-production-db.yaml"], `storage: "100Gi"`, `storage: "50Gi"`, 1)
	gitbed.Commit(t, bare, files)
	code, out, _ := cairn(t, "propose", "--repo", bare, "--live", liveFile)
	if code != exitRefusals || !strings.Contains(out, "storage-shrink") {
		t.Fatalf("refusal: exit %d\n%s", code, out)
	}
	_, list, _ := cairn(t, "pr", "list", "--repo", bare)
	if !strings.Contains(list, "cairn/my-production-db/pg-add-2") || !strings.Contains(list, "closed") || !strings.Contains(list, "refused: storage-shrink") {
		t.Fatalf("pr list:\n%s", list)
	}
	if !strings.Contains(list, "cairn/my-etcd-cluster/etcd-add-1") || !strings.Contains(list, "merged") {
		t.Fatalf("pr list:\n%s", list)
	}
}

func TestProposeRefusesInvalidSpecsWithoutWriting(t *testing.T) {
	files := exampleFiles(t)
	files["clusters/bad.yaml"] = strings.Replace(etcd8, "size: 8", "sise: 3", 1)
	bare := gitbed.New(t, files)
	before := refs(t, bare)
	code, _, errOut := cairn(t, "propose", "--repo", bare)
	if code != exitInvalid || !strings.Contains(errOut, `unknown field "sise"`) {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if after := refs(t, bare); len(after) != len(before) {
		t.Fatalf("refs written for an invalid spec: %v", after)
	}
}

// TestProposeWarnsOfUncommittedSpecs: cairn plan reads a checkout as it
// is, propose publishes what is committed on the base; an edit that plan
// shows and propose would not publish is named on standard error.
func TestProposeWarnsOfUncommittedSpecs(t *testing.T) {
	bare := gitbed.New(t, exampleFiles(t))
	checkout := cloneCheckout(t, bare)
	spec := filepath.Join(checkout, "clusters/my-etcd-cluster.yaml")
	data, _ := os.ReadFile(spec)
	if err := os.WriteFile(spec, []byte(strings.Replace(string(data), "size: 3", "size: 5", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(checkout, "clusters/new.yaml"), []byte(etcd8), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(checkout, "README.md"), []byte("not a spec"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := cairn(t, "propose", "--repo", checkout, "--live", "../../examples/fleet/live.yaml")
	want := "cairn propose: warning: " + checkout + " has uncommitted changes that cairn plan shows and propose does not publish (it publishes what is committed on main); commit them first:\n" +
		"   M clusters/my-etcd-cluster.yaml\n  ?? clusters/new.yaml\n"
	if code != exitOK || !strings.Contains(errOut, want) || strings.Contains(errOut, "README") {
		t.Fatalf("exit %d; stderr:\n%s\nwant it to contain:\n%s", code, errOut, want)
	}
	if code, _, errOut := cairn(t, "propose", "--repo", bare, "--live", "../../examples/fleet/live.yaml"); code != exitOK || strings.Contains(errOut, "warning") {
		t.Errorf("a bare repo: exit %d %s", code, errOut)
	}
}

// propose -o json|yaml gives each cluster's outcome as data, the same the
// table says; a format it does not write is a usage error before anything
// is published.
func TestProposeOutputFormats(t *testing.T) {
	bare := gitbed.New(t, exampleFiles(t))
	live := "../../examples/fleet/live.yaml"
	// HEAD and main only, before and after the refused run.
	if code, _, errOut := cairn(t, "propose", "--repo", bare, "--live", live, "-o", "xml"); code != exitUsage || !strings.Contains(errOut, "-o must be") {
		t.Fatalf("-o xml: exit %d %s", code, errOut)
	}
	before := refs(t, bare)
	if len(before) != 2 || before["refs/heads/main"] == "" {
		t.Fatalf("a usage error published: %v", before)
	}
	code, out, errOut := cairn(t, "propose", "--repo", bare, "--live", live, "-o", "json")
	if code != exitOK {
		t.Fatalf("propose -o json: exit %d %s", code, errOut)
	}
	var doc struct {
		Outcomes []outcomeDoc `json:"outcomes"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(doc.Outcomes) != 2 || doc.Outcomes[0].PullRequest != "opened" || doc.Outcomes[0].Branch == "" {
		t.Fatalf("outcomes: %+v", doc.Outcomes)
	}
	code, out, _ = cairn(t, "propose", "--repo", bare, "--live", live, "-o", "yaml")
	if code != exitOK || strings.Count(out, "pullRequest: unchanged") != 2 {
		t.Fatalf("propose -o yaml: exit %d\n%s", code, out)
	}
}
