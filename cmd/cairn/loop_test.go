package main

import (
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	authv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/publish"
	"github.com/cairn-dev/cairn/publish/githubpr/githubtest"
	"github.com/cairn-dev/cairn/renderer"
	"github.com/cairn-dev/cairn/runtime/agent"
	"github.com/cairn-dev/cairn/runtime/agent/etcd"
	"github.com/cairn-dev/cairn/runtime/agent/postgres"
	"github.com/cairn-dev/cairn/testbed"
	"github.com/cairn-dev/cairn/testbed/etcdbed"
	"github.com/cairn-dev/cairn/testbed/gitbed"
	"github.com/cairn-dev/cairn/testbed/kubenode"
	"github.com/cairn-dev/cairn/testbed/pgbed"
)

// loop is everything the end-to-end tests run: a real git server, the
// GitHub test server, a real control plane with the StatefulSet
// controller, real etcd members behind the pods, each cluster's runtime as
// its ServiceAccount, the sync stand-in, and cairn reconcile's passes. The
// test merges each pull request as a person would.
type loop struct {
	t       *testing.T
	ctx     context.Context
	cp      *testbed.ControlPlane
	ns      string
	bare    string
	gh      *githubtest.Server
	rec     *reconciler
	sync    *testbed.Sync
	bed     *etcdbed.Bed
	pg      *pgbed.Bed
	merged  time.Time
	timings []string
	// within bounds each converge; zero means 3 minutes.
	within time.Duration
	// began is when the bed began to start: a scenario's wall time.
	began time.Time
	// node and engine are set on a real node (newNodeBed): the engine
	// (Flux or Argo CD) applies each merge, and the sync stand-in and the
	// beds are nil.
	node   *kubenode.Cluster
	engine engine
	// images are the renderer's image options: on a real node, every
	// image pinned by the digest the nodes hold it under.
	images renderer.Options
}

// etcdSpec is an EtcdCluster spec file at etcd 3.7.3 with extra lines
// under spec.
func etcdSpec(name string, size int, extra ...string) map[string]string {
	return etcdSpecAt(name, size, "3.7.3", extra...)
}

func etcdSpecAt(name string, size int, version string, extra ...string) map[string]string {
	doc := fmt.Sprintf("apiVersion: \"etcd.database.coreos.com/v1beta2\"\nkind: \"EtcdCluster\"\nmetadata:\n  name: %q\nspec:\n  size: %d\n  version: %q\n", name, size, version)
	for _, l := range extra {
		doc += "  " + l + "\n"
	}
	return map[string]string{"clusters/" + name + ".yaml": doc}
}

// newLoop starts the loop's servers with specs on main; opts change how
// the reconciler observes the clusters.
func newLoop(t *testing.T, specs map[string]string, opts ...func(*liveSource)) *loop {
	l := newBed(t)
	l.begin(specs, nil, opts...)
	return l
}

// newBed is the loop in process, with nothing served yet (begin serves
// the specs): a control plane with the StatefulSet controller, the node
// stand-in running real etcd and PostgreSQL members behind the pods, and
// the sync stand-in.
func newBed(t *testing.T) *loop {
	testbed.Require(t, testbed.TierIntegration, "database members behind the pods")
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	l := &loop{t: t, ctx: ctx, began: time.Now()}
	l.cp = testbed.StartWith(t, testbed.Options{ControllerManager: true})
	l.ns = l.cp.Namespace(t, "gitops")
	log := testbed.Logger(t, slog.LevelWarn)
	l.bed = etcdbed.New(t, l.cp, l.ns, log)
	l.pg = pgbed.New(t, l.cp, l.ns, log)
	l.cp.StartNode(t, l.ns, testbed.Backers{l.bed, l.pg})
	l.sync = l.cp.NewSync(t, l.ns)
	return l
}

// begin serves specs on main and makes the loop's reconciler (opts change
// how it observes the clusters); on a real node, the sync engine syncs
// main into the namespace, each of clusters from its rendered folder.
func (l *loop) begin(specs map[string]string, clusters []string, opts ...func(*liveSource)) {
	url := l.serve(specs, testbed.Logger(l.t, slog.LevelWarn), opts...)
	if l.engine == nil {
		return
	}
	l.engine.follow(l.t, url, clusters, l.ns)
}

// The git server's user and token, as GitHub's HTTPS remotes take an
// installation token.
const (
	gitUser  = "x-access-token"
	gitToken = "git-t0ken"
)

// serve starts the git server holding specs on main and the GitHub test
// server over the same repo, and makes the loop's reconciler, observing
// the control plane's namespace; opts change how it observes. It returns
// the repo's URL.
func (l *loop) serve(specs map[string]string, log *slog.Logger, opts ...func(*liveSource)) string {
	t := l.t
	var url string
	url, l.bare = gitbed.Serve(t, gitUser, gitToken, specs)
	l.gh = githubtest.New(t)
	l.gh.UseRepo(l.bare)

	secrets := t.TempDir()
	gitTokenFile, ghToken := filepath.Join(secrets, "git"), filepath.Join(secrets, "gh")
	_ = os.WriteFile(gitTokenFile, []byte(gitToken+"\n"), 0o600)
	_ = os.WriteFile(ghToken, []byte(l.gh.Token+"\n"), 0o600)
	remote := remoteOptions{repo: url, base: "main", tokenFile: gitTokenFile}
	gh := githubOptions{repo: "org/gitops", api: l.gh.URL + "/", tokenFile: ghToken}
	src := liveSource{kubeconfig: l.cp.Kubeconfig(t), namespace: l.ns}
	for _, o := range opts {
		o(&src)
	}
	if l.node != nil {
		// Rendered as a release renders (cairn render --image-digests):
		// each image by tag and digest, the digest the nodes hold it under.
		l.images.ImageDigests = l.node.ImageDigests(t)
	}
	rec, cleanup, err := newReconciler(l.ctx, remote, gh, src, specsFlag{dir: "clusters"}, l.images, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	l.rec = rec
	return url
}

// runRuntime runs a cluster's runtime as its rendered ServiceAccount,
// under its rendered Role, once the sync has created them.
func (l *loop) runRuntime(cluster string) {
	t := l.t
	c := l.cp.Client(t)
	var token string
	testbed.Eventually(t, "the runtime's ServiceAccount", func() error {
		tr, err := c.CoreV1().ServiceAccounts(l.ns).CreateToken(l.ctx, cluster+"-runtime",
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
	acfg := agent.Config{Cluster: cluster, Namespace: l.ns, Identity: "runtime-0", Interval: 300 * time.Millisecond,
		Log: testbed.Logger(t, slog.LevelWarn)}
	keeper := etcd.Config{Endpoints: l.bed.Endpoints(cluster, 3), ServerIPs: l.bed.ServerIPs(cluster, 8)}.Keeper
	if strings.HasPrefix(cluster, "pg-") {
		keeper, acfg.Interval = postgres.Config{Port: pgbed.Port}.Keeper, 200*time.Millisecond
	}
	a, err := agent.New(acfg, client, keeper)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	ctx, cancel := context.WithCancel(l.ctx)
	go func() { defer close(done); _ = a.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

// create drives a new cluster's plan to its end, as converge, and
// returns its steps. In process the cluster's runtime runs in the test
// once the create step has made its ServiceAccount (runRuntime); on a
// real node its rendered Deployment runs it, as Flux applied it.
func (l *loop) create(cluster string) []string {
	if l.node != nil {
		return l.converge(cluster, nil)
	}
	return l.converge(cluster, func(step string) {
		if step == "create" {
			l.runRuntime(cluster)
		}
	})
}

// createEtcd creates an etcd cluster (create) and waits for n healthy
// voters.
func (l *loop) createEtcd(cluster string, n int) {
	l.create(cluster)
	testbed.Eventually(l.t, fmt.Sprintf("%d healthy voters of %s", n, cluster), l.voters(cluster, n))
}

// pass is one reconcile pass; it returns each cluster's outcome and
// checks that no cluster ever has two cairn pull requests open.
func (l *loop) pass() map[string]publish.Outcome {
	t := l.t
	out, err := l.rec.pass(l.ctx)
	if err != nil {
		t.Fatal(err)
	}
	perCluster := map[string]int{}
	for _, pr := range l.gh.Open() {
		perCluster[strings.Split(pr.Head.Ref, "/")[1]]++
	}
	for c, n := range perCluster {
		if n > 1 {
			t.Fatalf("%s has %d pull requests open at once", c, n)
		}
	}
	byName := map[string]publish.Outcome{}
	for _, o := range out {
		if o.Action == publish.ActionFailed {
			t.Fatalf("pass: %+v", o)
		}
		_, name, _ := strings.Cut(o.Cluster, "/")
		byName[name] = o
	}
	return byName
}

// converge drives a cluster's plan to its end as a person would: each
// step's pull request is merged and synced as soon as it opens, and the
// next must not open before the merged step shows done. It returns the
// steps, in order.
func (l *loop) converge(cluster string, afterEach func(step string)) []string {
	t := l.t
	var steps []string
	var o publish.Outcome
	within := cmp.Or(l.within, 3*time.Minute)
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		o = l.pass()[cluster]
		switch {
		case o.Action == publish.ActionOpened:
			if !l.merged.IsZero() {
				l.timings = append(l.timings, fmt.Sprintf("%s %.2fs", o.Step, time.Since(l.merged).Seconds()))
			}
			l.mergeAndSync(cluster, o.Step)
			steps = append(steps, o.Step)
			if afterEach != nil {
				afterEach(o.Step)
			}
		case o.Status == plan.StatusConverged && len(l.openOf(cluster)) == 0:
			l.noFalseClosings(cluster)
			return steps
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("%s did not converge in %s; steps so far %v; last outcome %+v", cluster, within, steps, o)
	return nil
}

// noFalseClosings fails the test when a merged pull request of cluster
// got a comment saying cairn closed it: a merged one is never closed.
func (l *loop) noFalseClosings(cluster string) {
	for _, pr := range l.gh.PRs {
		if !strings.HasPrefix(pr.Head.Ref, "cairn/"+cluster+"/") || !pr.Merged {
			continue
		}
		for _, c := range pr.Comments {
			if strings.Contains(c, "cairn closed this pull request") {
				l.t.Errorf("merged pull request #%d (%s) says: %s", pr.Number, pr.Head.Ref, c)
			}
		}
	}
}

func (l *loop) openOf(cluster string) []*githubtest.PR {
	var out []*githubtest.PR
	for _, pr := range l.gh.Open() {
		if strings.HasPrefix(pr.Head.Ref, "cairn/"+cluster+"/") {
			out = append(out, pr)
		}
	}
	return out
}

// mergeAndSync merges the cluster's one open pull request through the
// GitHub API as a person would, and lets the sync stand-in apply the
// merged branch.
func (l *loop) mergeAndSync(cluster, step string) {
	t := l.t
	l.noDriftBetweenSteps("before merging " + step)
	open := l.openOf(cluster)
	if len(open) != 1 || !strings.HasSuffix(open[0].Head.Ref, "/"+step) {
		t.Fatalf("open pull requests of %s before merging %s: %+v", cluster, step, open)
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
	if l.engine != nil {
		l.engineApplied()
		return
	}
	tree, err := testbed.FromRepo(l.bare, "main")
	if err != nil {
		l.t.Fatal(err)
	}
	if _, err := l.sync.Apply(l.ctx, tree); err != nil {
		l.t.Fatal(err)
	}
}

// noDriftBetweenSteps is noDrift before a merge. With a real engine it
// waits for every cluster to have applied the head, and asks for no
// more: Flux's apply waits for its health checks (the example's wait:
// true) and Argo CD's health follows the cluster's, which between two
// steps may fail by design (an etcd member removed whose pod the next
// step's scale-in deletes). noDrift, at a settled point, asks for the
// engine's verdict.
func (l *loop) noDriftBetweenSteps(when string) {
	if l.engine != nil {
		l.engineApplied()
		return
	}
	l.noDrift(when)
}

// noDrift fails the test when what runs differs from what main
// renders: by the sync stand-in's Drift, or with a real engine, unless
// every cluster is applied at the head and the engine, asked now,
// reports no drift (Flux: one more apply changes nothing; Argo CD: a
// hard refresh finds everything Synced and the cluster Healthy).
func (l *loop) noDrift(when string) {
	if l.engine != nil {
		l.engineApplied()
		for _, c := range l.engine.names(l.t) {
			if len(gitbed.Files(l.t, l.bare, "main", "rendered/"+c+"/")) == 0 {
				continue
			}
			if d := l.engine.drift(l.t, c); len(d) > 0 {
				l.t.Fatalf("drift %s in %s: %v", when, c, d)
			}
		}
		return
	}
	if drift, err := l.sync.Drift(l.ctx); err != nil || len(drift) > 0 {
		l.t.Fatalf("drift %s: %v %v", when, drift, err)
	}
}

// backupAfter waits for the cluster's runtime to report a complete
// backup that began after since, and returns its ID.
func (l *loop) backupAfter(cluster string, since time.Time) string {
	var id string
	testbed.Eventually(l.t, "a scheduled backup of "+cluster+" after the writes", func() error {
		cm, err := l.cp.Client(l.t).CoreV1().ConfigMaps(l.ns).Get(l.ctx, cluster+"-cairn-status", metav1.GetOptions{})
		if err != nil {
			return err
		}
		st, err := contract.ParseBackupStatus(cm.Data[contract.StatusKeyBackup])
		if err != nil || st.LastSuccessful == nil || st.LastSuccessful.Started.Before(since) {
			return fmt.Errorf("status %+v %v", st, err)
		}
		id = st.LastSuccessful.ID
		return nil
	})
	return id
}

// editSpec commits a spec change on main as a person pushing to the
// repo; the time to the next pull request counts from it.
func (l *loop) editSpec(files map[string]string) {
	gitbed.Commit(l.t, l.bare, files)
	l.merged = time.Now()
}

// client is an etcd client of a cluster's first n members, over TLS as
// the runtime reaches them once the cluster serves it (etcdClient).
func (l *loop) client(cluster string, n int) *clientv3.Client {
	cli, _, err := l.etcdClient(cluster, n)
	if err != nil {
		l.t.Fatal(err)
	}
	l.t.Cleanup(func() { cli.Close() })
	return cli
}

// etcdClient is an etcd client of a cluster's first n members and their
// client URLs: in process at the bed's addresses, on a real node at their
// names in the cluster's DNS (nodeEtcdClient).
func (l *loop) etcdClient(cluster string, n int) (*clientv3.Client, []string, error) {
	if l.node != nil {
		return l.nodeEtcdClient(cluster, n)
	}
	tc, err := l.bed.ClientTLS(l.ctx, cluster)
	if err != nil {
		return nil, nil, fmt.Errorf("TLS of %s: %w", cluster, err)
	}
	var urls []string
	for i := range n {
		urls = append(urls, l.bed.ClientURL(cluster, i))
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: l.bed.Endpoints(cluster, n), DialTimeout: 2 * time.Second, Logger: zap.NewNop(), TLS: tc})
	return cli, urls, err
}

// clientOf is an etcd client of a cluster's members at endpoints.
func (l *loop) clientOf(cluster string, endpoints []string) *clientv3.Client {
	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 2 * time.Second, Logger: zap.NewNop(), TLS: l.etcdTLS(cluster)})
	if err != nil {
		l.t.Fatal(err)
	}
	l.t.Cleanup(func() { cli.Close() })
	return cli
}

// etcdTLS is the client TLS configuration of cluster's members: root's
// certificate and the cluster's CA, nil while it serves plain HTTP.
func (l *loop) etcdTLS(cluster string) *tls.Config {
	tc, err := l.bed.ClientTLS(l.ctx, cluster)
	if err != nil {
		l.t.Fatalf("TLS of %s: %v", cluster, err)
	}
	return tc
}

// voters checks that the cluster has exactly n members, all healthy
// voters, reached as etcdClient reaches them.
func (l *loop) voters(cluster string, n int) func() error {
	return func() error {
		cli, urls, err := l.etcdClient(cluster, n)
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
		if l.node == nil {
			// In process, each member as it advertises itself; on a real
			// node those names resolve only through the client's dialer,
			// so at the URLs it dialled.
			urls = urls[:0]
			for _, m := range ml.Members {
				urls = append(urls, m.ClientURLs[0])
			}
		}
		for _, u := range urls {
			if _, err := cli.Status(ctx, u); err != nil {
				return fmt.Errorf("member at %s: %w", u, err)
			}
		}
		return nil
	}
}

// Walkthrough 4 on etcd: a scheduled backup runs on its cron tick, and a
// new cluster whose spec says restoreFrom starts from it with exactly the
// keys written before the backup began.
func TestBackupThenRestoreIntoANewCluster(t *testing.T) {
	const src, copyName = "orders", "orders-copy"
	backups := t.TempDir()
	// A backup every 2 s, 100 kept: the one the copy restores stays for
	// minutes. With 3 kept (6 s), retention deleted it before a loaded
	// machine had merged and started the copy, whose first member then
	// waited for a backup that was gone (two CI runs in a row).
	policy := []string{"backup:", `  schedule: "*/2 * * * * *"`, `  storageLocation: "file://` + backups + `"`, "  retention: {count: 100}"}
	l := newLoop(t, etcdSpec(src, 3, policy...))
	l.create(src)
	cli := l.client(src, 3)
	for i := range 30 {
		if _, err := cli.Put(l.ctx, fmt.Sprintf("order-%02d", i), "paid"); err != nil {
			t.Fatal(err)
		}
	}
	id := l.backupAfter(src, time.Now())
	// Written after that backup began: not in the copy.
	if _, err := cli.Put(l.ctx, "order-late", "paid"); err != nil {
		t.Fatal(err)
	}
	l.editSpec(etcdSpec(copyName, 3, "restoreFrom:", `  storageLocation: "file://`+backups+`"`, "  cluster: "+src, "  backup: "+id, "  trustForeignBucket: true"))
	l.create(copyName)
	testbed.Eventually(t, "the copy's 3 healthy voters", l.voters(copyName, 3))
	got, err := l.client(copyName, 3).Get(l.ctx, "order-", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Kvs) != 30 {
		t.Fatalf("the copy holds %d orders, want 30", len(got.Kvs))
	}
	l.noDrift("at the end")
}

// writer puts a key every 20 ms until stopped, through the client it
// was last given, and keeps those etcd acknowledged.
type writer struct {
	cli    atomic.Pointer[clientv3.Client]
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	acked  []string
	failed int
	outage time.Duration
}

func startWriter(ctx context.Context, cli *clientv3.Client) *writer {
	ctx, cancel := context.WithCancel(ctx)
	w := &writer{cancel: cancel, done: make(chan struct{})}
	w.use(cli)
	go func() {
		defer close(w.done)
		var since time.Time
		for i := 0; ctx.Err() == nil; i++ {
			k := fmt.Sprintf("w-%06d", i)
			wctx, c := context.WithTimeout(ctx, 2*time.Second)
			_, err := w.cli.Load().Put(wctx, k, "v")
			c()
			w.mu.Lock()
			switch {
			case err == nil:
				w.acked = append(w.acked, k)
				if !since.IsZero() {
					w.outage = max(w.outage, time.Since(since))
					since = time.Time{}
				}
			case ctx.Err() == nil:
				w.failed++
				if since.IsZero() {
					since = time.Now()
				}
			}
			w.mu.Unlock()
			time.Sleep(20 * time.Millisecond)
		}
	}()
	return w
}

// use makes the writer write through cli from its next write on.
func (w *writer) use(cli *clientv3.Client) { w.cli.Store(cli) }

// look returns how many writes were acknowledged and failed so far,
// while the writer goes on.
func (w *writer) look() (acked, failed int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.acked), w.failed
}

func (w *writer) stop() ([]string, int, time.Duration) {
	w.cancel()
	<-w.done
	return w.acked, w.failed, w.outage
}
