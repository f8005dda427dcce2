package main

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/publish"
	"github.com/cairn-dev/cairn/renderer"
	"github.com/cairn-dev/cairn/testbed/gitbed"
)

func outcomeOf(t *testing.T, out []publish.Outcome, cluster string) publish.Outcome {
	t.Helper()
	for _, o := range out {
		if o.Cluster == cluster {
			return o
		}
	}
	t.Fatalf("no outcome for %s in %+v", cluster, out)
	return publish.Outcome{}
}

func TestReconcileHoldsUntilTheMergedStepShowsDone(t *testing.T) {
	ctx := context.Background()
	bare := gitbed.New(t, exampleFiles(t))
	liveFile := filepath.Join(t.TempDir(), "live.yaml")
	base, _ := os.ReadFile("../../examples/fleet/live.yaml")
	setLive := func(s string) { _ = os.WriteFile(liveFile, []byte(s), 0o644) }
	setLive(string(base))
	r, cleanup, err := newReconciler(ctx, remoteOptions{repo: bare, base: "main"}, githubOptions{}, liveSource{file: liveFile}, specsFlag{dir: "clusters"}, renderer.Options{}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	etcdOf := func() publish.Outcome {
		out, err := r.pass(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return outcomeOf(t, out, "EtcdCluster/my-etcd-cluster")
	}
	if o := etcdOf(); o.Action != publish.ActionOpened || o.Step != "etcd-add-1" {
		t.Fatalf("first pass: %+v", o)
	}
	gitbed.Merge(t, bare, "cairn/my-etcd-cluster/etcd-add-1")
	if o := etcdOf(); o.Action != publish.ActionHeld || !strings.Contains(o.Note, "waiting for merged step etcd-add-1") {
		t.Fatalf("after merge: %+v", o)
	}
	// The pod exists but is not ready: still held, whatever the planner says.
	joined := strings.Replace(string(base), "statefulSet: {replicas: 1,", "statefulSet: {replicas: 2,", 1)
	joined = strings.Replace(joined, "role: leader}\n", "role: leader}\n      - {name: my-etcd-cluster-1, version: \"3.2.13\", ready: false, role: follower}\n", 1)
	setLive(joined)
	if o := etcdOf(); o.Action != publish.ActionHeld || !strings.Contains(o.Note, "my-etcd-cluster-1 is ready") {
		t.Fatalf("member not ready: %+v", o)
	}
	// Ready and voting: the gates pass and the next step's pull request opens.
	setLive(strings.Replace(joined, "ready: false", "ready: true", 1))
	if o := etcdOf(); o.Action != publish.ActionOpened || o.Step != "etcd-add-2" {
		t.Fatalf("after the step showed done: %+v", o)
	}
}
