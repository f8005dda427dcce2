package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/gittestserver"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	authv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/publish"
	"github.com/cairn-dev/cairn/publish/githubpr/githubtest"
	"github.com/cairn-dev/cairn/renderer"
	"github.com/cairn-dev/cairn/runtime/agent"
	"github.com/cairn-dev/cairn/runtime/testbed"
	"github.com/cairn-dev/cairn/runtime/testbed/etcdbed"
)

// loop is everything the end-to-end test runs: a real git server, the
// GitHub test server, a real control plane with the StatefulSet
// controller, real etcd members behind the pods, the runtime as its
// ServiceAccount, the sync stand-in, and cairn reconcile's passes.
type loop struct {
	t       *testing.T
	ctx     context.Context
	cp      *testbed.ControlPlane
	ns      string
	git     *gittestserver.GitServer
	bare    string
	gh      *githubtest.Server
	rec     *reconciler
	sync    *testbed.Sync
	bed     *etcdbed.Bed
	merged  time.Time
	timings []string
}

const loopCluster = "demo"

func etcdSpec(size int) map[string]string {
	return map[string]string{"clusters/demo.yaml": fmt.Sprintf(`apiVersion: "etcd.database.coreos.com/v1beta2"
kind: "EtcdCluster"
metadata:
  name: "demo"
spec:
  size: %d
  version: "3.7.3"
`, size)}
}

func newLoop(t *testing.T) *loop {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	l := &loop{t: t, ctx: ctx}
	l.cp = testbed.StartWith(t, testbed.Options{ControllerManager: true})
	l.ns = l.cp.Namespace(t, "gitops")
	log := testbed.Logger(t, slog.LevelWarn)
	l.bed = etcdbed.New(t, l.cp, l.ns, log)
	l.cp.StartNode(t, l.ns, l.bed)
	l.sync = l.cp.NewSync(t, l.ns)

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
	for p, c := range etcdSpec(3) {
		_ = os.MkdirAll(filepath.Join(fixture, filepath.Dir(p)), 0o755)
		if err := os.WriteFile(filepath.Join(fixture, p), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := srv.InitRepo(fixture, "main", "org/gitops.git"); err != nil {
		t.Fatal(err)
	}
	l.git, l.bare = srv, filepath.Join(srv.Root(), "org", "gitops.git")
	l.gh = githubtest.New(t)
	l.gh.UseRepo(l.bare)

	secrets := t.TempDir()
	gitToken, ghToken := filepath.Join(secrets, "git"), filepath.Join(secrets, "gh")
	_ = os.WriteFile(gitToken, []byte("git-t0ken\n"), 0o600)
	_ = os.WriteFile(ghToken, []byte(l.gh.Token+"\n"), 0o600)
	remote := remoteOptions{repo: srv.HTTPAddress() + "/org/gitops.git", base: "main", tokenFile: gitToken}
	gh := githubOptions{repo: "org/gitops", api: l.gh.URL + "/", tokenFile: ghToken}
	src := liveSource{kubeconfig: l.cp.Kubeconfig(t), namespace: l.ns}
	rec, cleanup, err := newReconciler(ctx, remote, gh, src, "clusters", renderer.Options{}, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	l.rec = rec
	return l
}

// runRuntime runs the cluster's runtime as its rendered ServiceAccount,
// once the sync has created it.
func (l *loop) runRuntime() {
	t := l.t
	c := l.cp.Client(t)
	var token string
	testbed.Eventually(t, "the runtime's ServiceAccount", func() error {
		tr, err := c.CoreV1().ServiceAccounts(l.ns).CreateToken(l.ctx, loopCluster+"-runtime",
			&authv1.TokenRequest{Spec: authv1.TokenRequestSpec{ExpirationSeconds: new(int64(3600))}}, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		token = tr.Status.Token
		return nil
	})
	cfg := &rest.Config{Host: l.cp.URL, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	a := agent.New(agent.Config{Cluster: loopCluster, Namespace: l.ns, Identity: "runtime-0", Interval: 300 * time.Millisecond,
		EtcdEndpoints: l.bed.Endpoints(loopCluster, 3)}, client)
	done := make(chan struct{})
	ctx, cancel := context.WithCancel(l.ctx)
	go func() { defer close(done); _ = a.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

// pass is one reconcile pass; it returns the demo cluster's outcome and
// checks that never two cairn pull requests are open.
func (l *loop) pass() publish.Outcome {
	t := l.t
	out, err := l.rec.pass(l.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if open := l.gh.Open(); len(open) > 1 {
		t.Fatalf("%d pull requests open at once", len(open))
	}
	return outcomeOf(t, out, "EtcdCluster/"+loopCluster)
}

// expect passes until the next step's pull request opens: it must be
// step, and every pass before must hold the cluster (the merged step is
// not done yet). It records the time from the last merge.
func (l *loop) expect(step string) {
	t := l.t
	deadline := time.Now().Add(2 * time.Minute)
	for {
		o := l.pass()
		switch {
		case o.Action == publish.ActionOpened && o.Step == step:
			if !l.merged.IsZero() {
				l.timings = append(l.timings, fmt.Sprintf("%s %.2fs", step, time.Since(l.merged).Seconds()))
			}
			return
		case o.Action == publish.ActionOpened, o.Action == publish.ActionFailed:
			t.Fatalf("waiting for %s: %+v", step, o)
		}
		if time.Now().After(deadline) {
			t.Fatalf("no pull request for %s after 2m; last outcome %+v", step, o)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// mergeAndSync merges the one open pull request through the GitHub API as
// a person would, and lets the sync stand-in apply the merged branch.
func (l *loop) mergeAndSync(step string) {
	t := l.t
	l.noDrift("before merging " + step)
	open := l.gh.Open()
	if len(open) != 1 || !strings.HasSuffix(open[0].Head.Ref, "/"+step) {
		t.Fatalf("open pull requests before merging %s: %+v", step, open)
	}
	pr := open[0]
	body, _ := json.Marshal(map[string]string{"sha": pr.Head.SHA, "merge_method": "merge"})
	req, _ := http.NewRequest(http.MethodPut, fmt.Sprintf("%s/repos/org/gitops/pulls/%d/merge", l.gh.URL, pr.Number), bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+l.gh.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("merge %s: %s", step, resp.Status)
	}
	l.merged = time.Now()
	l.syncMain()
}

func (l *loop) syncMain() {
	tree, err := testbed.FromRepo(l.bare, "main")
	if err != nil {
		l.t.Fatal(err)
	}
	if _, err := l.sync.Apply(l.ctx, tree); err != nil {
		l.t.Fatal(err)
	}
}

func (l *loop) noDrift(when string) {
	if drift, err := l.sync.Drift(l.ctx); err != nil || len(drift) > 0 {
		l.t.Fatalf("drift %s: %v %v", when, drift, err)
	}
}

// editSpec commits a spec change on main as a person pushing to the repo.
func (l *loop) editSpec(files map[string]string) {
	personCommit(l.t, l.bare, files, false)
}

// voters checks that the cluster has exactly n members, all healthy
// voters.
func (l *loop) voters(n int) func() error {
	return func() error {
		cli, err := clientv3.New(clientv3.Config{Endpoints: l.bed.Endpoints(loopCluster, n), DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
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
			if _, err := cli.Status(ctx, m.ClientURLs[0]); err != nil {
				return fmt.Errorf("member %s: %w", m.Name, err)
			}
		}
		return nil
	}
}

// The loop end to end: a spec in Git gives the creation PR; merged and
// synced, the StatefulSet controller makes the pods and real etcd members
// form the cluster; a spec change to 5 members gives one step PR at a
// time, each only once the last merged step shows done in the cluster;
// the runtime promotes the learners; no drift at any step.
func TestLoopEndToEnd(t *testing.T) {
	start := time.Now()
	l := newLoop(t)
	l.expect("create")
	l.mergeAndSync("create")
	l.runRuntime()
	l.expect("seal-bootstrap")
	testbed.Eventually(t, "3 healthy voters", l.voters(3))
	l.mergeAndSync("seal-bootstrap")

	l.editSpec(etcdSpec(5))
	l.expect("etcd-add-3")
	l.mergeAndSync("etcd-add-3")
	l.expect("etcd-add-4")
	l.mergeAndSync("etcd-add-4")
	testbed.Eventually(t, "5 healthy voters", l.voters(5))
	deadline := time.Now().Add(time.Minute)
	for o := l.pass(); o.Action != publish.ActionNone || o.Status != plan.StatusConverged; o = l.pass() {
		if o.Action == publish.ActionOpened || time.Now().After(deadline) {
			t.Fatalf("after the last step: %+v", o)
		}
		time.Sleep(200 * time.Millisecond)
	}
	l.noDrift("at the end")
	t.Logf("wall time %.1fs; merge to next pull request: %s", time.Since(start).Seconds(), strings.Join(l.timings, ", "))
}
