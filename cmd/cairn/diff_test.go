package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-dev/cairn/renderer"
	"github.com/cairn-dev/cairn/testbed"
)

// serverAssigned are the values a real API server assigns on create
// (Service IPs in the test bed's 10.96.0.0/16), which change from run to
// run.
var serverAssigned = regexp.MustCompile(`\b10\.96\.\d+\.\d+\b`)

// TestDiffAgainstARealAPIServer: against a real kube-apiserver, cairn
// diff shows every object of a cluster not deployed yet as added (exit
// 4); once what it showed is applied, as Flux applies it, nothing
// (exit 0); a hand edit of a live object shows as the change cairn's tree
// would undo.
func TestDiffAgainstARealAPIServer(t *testing.T) {
	cp := testbed.Shared(t, testbed.Options{})
	ns := cp.Namespace(t, "diff")
	kc := cp.Kubeconfig(t)
	repo := writeRepo(t, map[string]string{"clusters/my-etcd-cluster.yaml": exampleFiles(t)["clusters/my-etcd-cluster.yaml"]})
	args := []string{"diff", "--repo", repo, "--kubeconfig", kc, "--namespace", ns}

	code, out, errOut := cairn(t, args...)
	if code != exitDiff || errOut != "" {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	golden(t, "diff-added.txt", serverAssigned.ReplaceAllString(out, "<assigned>"))

	// Apply the tree cairn render writes, as Flux does: then the next
	// render's base says the members exist (the rendered config's
	// bootstrap mode), and once that is applied too nothing differs.
	sync := cp.NewSync(t, ns)
	syncRender := func() {
		t.Helper()
		if code, out, errOut := cairn(t, "render", "--repo", repo, "--kubeconfig", kc, "--namespace", ns); code != exitOK {
			t.Fatalf("render: exit %d %s %s", code, out, errOut)
		}
		tree := renderer.Tree{}
		_ = filepath.WalkDir(filepath.Join(repo, "rendered"), func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				rel, _ := filepath.Rel(repo, p)
				tree[filepath.ToSlash(rel)], _ = os.ReadFile(p)
			}
			return err
		})
		if _, err := sync.Apply(context.Background(), tree); err != nil {
			t.Fatal(err)
		}
	}
	syncRender()
	code, out, errOut = cairn(t, args...)
	if code != exitDiff {
		t.Fatalf("after the first sync: exit %d %s\n%s", code, errOut, out)
	}
	golden(t, "diff-synced.txt", out)
	syncRender()
	code, out, errOut = cairn(t, args...)
	if code != exitOK || out != "" {
		t.Fatalf("after the second sync: exit %d %s\n%s", code, errOut, out)
	}

	// A person edits a live object: the diff shows cairn's tree undoing it.
	c := cp.Client(t)
	svc, err := c.CoreV1().Services(ns).Get(context.Background(), "my-etcd-cluster", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	svc.Spec.PublishNotReadyAddresses = !svc.Spec.PublishNotReadyAddresses
	svc.Labels["edited-by"] = "a-person"
	if _, err := c.CoreV1().Services(ns).Update(context.Background(), svc, metav1.UpdateOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = cairn(t, append(args, "my-etcd-cluster")...)
	if code != exitDiff {
		t.Fatalf("after the edit: exit %d %s", code, errOut)
	}
	golden(t, "diff-edited.txt", serverAssigned.ReplaceAllString(out, "<assigned>"))

	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"nope"}, exitUsage, `no cluster "nope"`},
		{[]string{"--kubeconfig", "/nonexistent"}, exitInvalid, "kubeconfig /nonexistent"},
		{[]string{"--context", "nope"}, exitUsage, `context "nope" does not exist`},
	} {
		a := append([]string{"diff", "--repo", repo, "--kubeconfig", kc}, c.args...)
		if c.args[0] == "--kubeconfig" {
			a = append([]string{"diff", "--repo", repo}, c.args...)
		}
		if code, _, errOut := cairn(t, a...); code != c.code || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d %s", c.args, code, errOut)
		}
	}
}
