package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/gittestserver"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/publish/githubpr/githubtest"
	"github.com/cairn-dev/cairn/renderer"
	"github.com/cairn-dev/cairn/runtime/certs"
	"github.com/cairn-dev/cairn/testbed"
	"github.com/cairn-dev/cairn/testbed/fluxbed"
	"github.com/cairn-dev/cairn/testbed/gitbed"
	"github.com/cairn-dev/cairn/testbed/kubenode"
)

// newNodeLoop is newLoop on a real node with real Flux: the pods cairn
// renders run in containers from the images `make image` builds (cairn's
// runtime among them, as its rendered Deployment), and Flux applies each
// merged commit with a Kustomization per cluster made from examples/flux.
// images are the archives the clusters need beside cairn's.
func newNodeLoop(t *testing.T, specs map[string]string, clusters []string, images ...string) *loop {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	l := &loop{t: t, ctx: ctx, within: 8 * time.Minute}
	l.node = kubenode.Start(t, append([]string{"cairn"}, images...)...)
	l.cp = l.node.ControlPlane
	l.ns = l.cp.Namespace(t, "gitops")
	l.flux = fluxbed.Start(t, l.cp)
	log := testbed.Logger(t, slog.LevelWarn)

	srv, err := gittestserver.NewTempGitServer()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(srv.Root()) })
	srv.Auth("x-access-token", "git-t0ken")
	if err := srv.StartHTTP(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.StopHTTP)
	fixture := t.TempDir()
	gitbed.WriteFiles(t, fixture, specs)
	if err := srv.InitRepo(fixture, "main", "org/gitops.git"); err != nil {
		t.Fatal(err)
	}
	l.bare = filepath.Join(srv.Root(), "org", "gitops.git")
	l.gh = githubtest.New(t)
	l.gh.UseRepo(l.bare)
	l.flux.GitRepository(t, srv.HTTPAddress()+"/org/gitops.git", "main", "x-access-token", "git-t0ken", 2*time.Second)
	for _, c := range clusters {
		l.flux.Kustomization(t, c, l.ns)
	}

	secrets := t.TempDir()
	gitToken, ghToken := filepath.Join(secrets, "git"), filepath.Join(secrets, "gh")
	_ = os.WriteFile(gitToken, []byte("git-t0ken\n"), 0o600)
	_ = os.WriteFile(ghToken, []byte(l.gh.Token+"\n"), 0o600)
	remote := remoteOptions{repo: srv.HTTPAddress() + "/org/gitops.git", base: "main", tokenFile: gitToken}
	gh := githubOptions{repo: "org/gitops", api: l.gh.URL + "/", tokenFile: ghToken}
	src := liveSource{kubeconfig: l.cp.Kubeconfig(t), namespace: l.ns}
	rec, cleanup, err := newReconciler(ctx, remote, gh, src, specsFlag{dir: "clusters"}, renderer.Options{}, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	l.rec = rec
	return l
}

// fluxApplied waits until every cluster's Kustomization has applied the
// head of main and is Ready: Flux's own word that the merged commit runs.
func (l *loop) fluxApplied() {
	head := gitbed.Head(l.t, l.bare, "main").String()
	for _, c := range l.flux.Names(l.t) {
		l.flux.WaitApplied(l.t, c, head, 5*time.Minute)
	}
}

// nodeVoters checks, on the real node, that the cluster has exactly n
// members, all healthy voters, reached at their pods' addresses over TLS
// with the cluster's certificates, as the runtime reaches them.
func (l *loop) nodeVoters(cluster string, n int) func() error {
	return func() error {
		c := l.cp.Client(l.t)
		var eps []string
		for i := range n {
			p, err := c.CoreV1().Pods(l.ns).Get(l.ctx, fmt.Sprintf("%s-%d", cluster, i), metav1.GetOptions{})
			if err != nil || p.Status.PodIP == "" {
				return fmt.Errorf("pod %s-%d: %v", cluster, i, err)
			}
			eps = append(eps, "https://"+p.Status.PodIP+":2379")
		}
		m, err := (&certs.Files{Client: c, Namespace: l.ns, Cluster: cluster}).Material(l.ctx)
		if err != nil {
			return err
		}
		tc, err := m.ClientConfig(contract.EtcdClientServerName(cluster, l.ns))
		if err != nil {
			return err
		}
		cli, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 2 * time.Second, Logger: zap.NewNop(), TLS: tc})
		if err != nil {
			return err
		}
		defer cli.Close()
		ctx, cancel := context.WithTimeout(l.ctx, 3*time.Second)
		defer cancel()
		ml, err := cli.MemberList(ctx)
		if err != nil {
			return err
		}
		if len(ml.Members) != n {
			return fmt.Errorf("%d members, want %d", len(ml.Members), n)
		}
		for _, m := range ml.Members {
			if m.IsLearner || len(m.ClientURLs) == 0 {
				return fmt.Errorf("member %s: learner %v, started %v", m.Name, m.IsLearner, len(m.ClientURLs) > 0)
			}
		}
		for _, ep := range eps {
			if _, err := cli.Status(ctx, ep); err != nil {
				return fmt.Errorf("member at %s: %w", ep, err)
			}
		}
		return nil
	}
}

// smallEtcd are resources that let five members and the runtime share
// the test node's two cores.
const smallEtcd = "resources: {requests: {cpu: 50m, memory: 64Mi}, limits: {memory: 512Mi}}"

// Walkthrough 1 on a real node: the etcd cluster cairn renders runs in
// containers (cairn's instance manager installed by its init container,
// etcd from its image, cairn's runtime as its Deployment's pod, volumes
// from the node's provisioner, peers finding each other through the
// headless Service's DNS names), real Flux applies every merged step, and
// the plan goes create -> 3 voters -> 5 -> a pod deleted and back -> 3.
func TestRealNodeEtcdWalkthrough(t *testing.T) {
	const demo = "demo"
	start := time.Now()
	l := newNodeLoop(t, etcdSpec(demo, 3, smallEtcd), []string{demo}, "etcd-3.7")
	steps := l.converge(demo, nil)
	testbed.Eventually(t, "3 healthy voters", l.nodeVoters(demo, 3))
	if strings.Join(steps, ",") != "create,seal-bootstrap" {
		t.Fatalf("create: steps %v", steps)
	}
	t.Logf("created in %.1fs; from each merge to the next pull request: %s", time.Since(start).Seconds(), strings.Join(l.timings, ", "))
}
