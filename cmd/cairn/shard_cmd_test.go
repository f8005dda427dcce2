package main

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-dev/cairn/reconcile/shard"
	"github.com/cairn-dev/cairn/testbed"
	"github.com/cairn-dev/cairn/testbed/gitbed"
)

// --shards 0 or 1 is one replica publishing every cluster; otherwise the
// member is named by --replica-id, else $POD_NAME, in --lease-namespace,
// else the kubeconfig context's namespace.
func TestShardFlags(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u, namespace: gitops}}]
current-context: c
`), 0o600); err != nil {
		t.Fatal(err)
	}
	src := liveSource{kubeconfig: kubeconfig}
	log := slog.New(slog.DiscardHandler)
	for _, n := range []int{0, 1} {
		if m, err := (shardOptions{shards: n}).member(src, log); m != nil || err != nil {
			t.Errorf("--shards %d: %v %v, want no member", n, m, err)
		}
	}
	t.Setenv("POD_NAME", "cairn-reconcile-7f9c-x2")
	m, err := (shardOptions{shards: 8, duration: shard.DefaultLeaseDuration}).member(src, log)
	if err != nil || !strings.HasPrefix(m.Identity(), "cairn-reconcile-7f9c-x2_") || m.Namespace() != "gitops" {
		t.Fatalf("from $POD_NAME, in the context's namespace: %v, %v", m, err)
	}
	m, err = (shardOptions{shards: 8, id: "r1", namespace: "leases", duration: shard.DefaultLeaseDuration}).member(src, log)
	if err != nil || !strings.HasPrefix(m.Identity(), "r1_") || m.Namespace() != "leases" {
		t.Fatalf("--replica-id, --lease-namespace: %v, %v", m, err)
	}
	for _, c := range []struct {
		o    shardOptions
		want string
	}{
		{shardOptions{shards: 2000, duration: shard.DefaultLeaseDuration}, "2000 shards"},
		{shardOptions{shards: 8, duration: 1500 * time.Millisecond}, "lease duration 1.5s"},
	} {
		_, err := c.o.member(src, log)
		var ee *exitError
		if !errors.As(err, &ee) || ee.code != exitUsage || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want a usage error saying %q", c.o, err, c.want)
		}
	}
}

// cairn reconcile --shards, the command: alone, the replica takes every
// shard and publishes the cluster; stopped (SIGINT, SIGTERM), it
// releases its Leases after its loop has stopped, and exits cleanly.
func TestShardedReconcileCommand(t *testing.T) {
	cp := testbed.Shared(t, testbed.Options{})
	ns := cp.Namespace(t, "cairn")
	bare := gitbed.New(t, etcdSpec("kv", 3))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stderr bytes.Buffer
	stdout := cancelOnWrite{cancel: cancel}
	root := newRoot(&stdout, &stderr)
	root.SetArgs([]string{"reconcile", "--repo", bare, "--kubeconfig", cp.Kubeconfig(t), "--interval", "1h",
		"--shards", "2", "--lease-namespace", ns, "--lease-duration", "2s", "--replica-id", "r1"})
	if err := root.ExecuteContext(ctx); err != nil {
		t.Fatalf("reconcile returned %v, want nil", err)
	}
	if strings.Contains(stderr.String(), "ERROR") || !strings.Contains(stdout.String(), "EtcdCluster/kv") || !strings.Contains(stdout.String(), "opened") {
		t.Errorf("stdout %q, stderr %q", stdout.String(), stderr.String())
	}
	leases, err := cp.Client(t).CoordinationV1().Leases(ns).List(context.Background(), metav1.ListOptions{LabelSelector: shard.LabelLease})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, l := range leases.Items {
		names = append(names, l.Name)
		if h := l.Spec.HolderIdentity; h == nil || *h != "" {
			t.Errorf("lease %s held by %v after the command stopped, want released", l.Name, h)
		}
	}
	slices.Sort(names)
	if want := []string{"cairn-replica-0", "cairn-shard-0", "cairn-shard-1"}; !slices.Equal(names, want) {
		t.Errorf("leases %v, want %v", names, want)
	}
}
