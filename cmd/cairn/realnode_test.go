package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/gittestserver"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/publish"
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

// fluxApplied waits until the Kustomization of every cluster rendered on
// main has applied main's head and is Ready: Flux's own word that the
// merged commit runs. A cluster not rendered yet has nothing to apply.
func (l *loop) fluxApplied() {
	head := gitbed.Head(l.t, l.bare, "main").String()
	for _, c := range l.flux.Names(l.t) {
		if len(gitbed.Files(l.t, l.bare, "main", "rendered/"+c+"/")) == 0 {
			continue
		}
		l.flux.WaitApplied(l.t, c, head, 5*time.Minute)
	}
}

// nodeVoters checks, on the real node, that the cluster has exactly n
// members, all healthy voters, reached as the runtime reaches them: at
// their names under the peer Service, looked up in the cluster's DNS,
// over TLS with the cluster's certificates.
func (l *loop) nodeVoters(cluster string, n int) func() error {
	return func() error {
		cli, eps, err := l.nodeEtcdClient(cluster, n)
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

// nodeEtcdClient is an etcd client of the cluster's first n members on
// the real node, and their endpoints. Names resolve in the cluster's DNS,
// as in a pod; a TLS handshake with each first says what etcd's client
// would only report as a deadline.
func (l *loop) nodeEtcdClient(cluster string, n int) (*clientv3.Client, []string, error) {
	c := l.cp.Client(l.t)
	m, err := (&certs.Files{Client: c, Namespace: l.ns, Cluster: cluster}).Material(l.ctx)
	if err != nil {
		return nil, nil, err
	}
	tc, err := m.ClientConfig(contract.EtcdClientServerName(cluster, l.ns))
	if err != nil {
		return nil, nil, err
	}
	r := l.node.Resolver()
	dial := func(ctx context.Context, addr string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(strings.TrimPrefix(addr, "https://"))
		if err != nil {
			return nil, err
		}
		ips, err := r.LookupHost(ctx, host)
		if err != nil || len(ips) == 0 {
			return nil, fmt.Errorf("look up %s: %v", host, err)
		}
		var d net.Dialer
		return d.DialContext(ctx, "tcp", net.JoinHostPort(ips[0], port))
	}
	var eps []string
	for i := range n {
		host := fmt.Sprintf("%s-%d.%s.%s.svc.cluster.local", cluster, i, contract.EtcdPeerService(cluster), l.ns)
		eps = append(eps, "https://"+net.JoinHostPort(host, "2379"))
		ctx, cancel := context.WithTimeout(l.ctx, 3*time.Second)
		raw, err := dial(ctx, net.JoinHostPort(host, "2379"))
		cancel()
		if err != nil {
			return nil, nil, err
		}
		conn := tls.Client(raw, tc)
		err = conn.Handshake()
		conn.Close()
		if err != nil {
			return nil, nil, fmt.Errorf("TLS to %s: %w", host, err)
		}
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 2 * time.Second, Logger: zap.NewNop(), TLS: tc,
		DialOptions: []grpc.DialOption{grpc.WithContextDialer(dial)}})
	return cli, eps, err
}

// smallEtcd are resources that let five members and the runtime share
// the test node's two cores.
const smallEtcd = "resources: {requests: {cpu: 50m, memory: 64Mi}, limits: {memory: 512Mi}}"

// Walkthrough 1 on a real node: the etcd cluster cairn renders runs in
// containers (cairn's instance manager installed by its init container,
// etcd from its image, cairn's runtime as its Deployment's pods, volumes
// from the node's provisioner, peers finding each other through the
// headless Service's DNS names), real Flux applies every merged step, and
// the plan goes create -> 3 voters -> 5 -> a pod deleted and back -> 3,
// with a client writing throughout.
func TestRealNodeEtcdWalkthrough(t *testing.T) {
	const demo = "demo"
	start := time.Now()
	l := newNodeLoop(t, etcdSpec(demo, 3, smallEtcd), []string{demo}, "etcd-3.7")
	steps := l.converge(demo, nil)
	testbed.Eventually(t, "3 healthy voters", l.nodeVoters(demo, 3))
	if strings.Join(steps, ",") != "create,seal-bootstrap" {
		t.Fatalf("create: steps %v", steps)
	}
	created := time.Since(start)
	cli, _, err := l.nodeEtcdClient(demo, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	w := startWriter(l.ctx, cli)

	l.editSpec(etcdSpec(demo, 5, smallEtcd))
	if steps := l.converge(demo, nil); strings.Join(steps, ",") != "etcd-add-3,etcd-add-4" {
		t.Fatalf("3 -> 5: steps %v", steps)
	}
	testbed.Eventually(t, "5 healthy voters", l.nodeVoters(demo, 5))

	// A member's pod deleted: the StatefulSet makes it again on its
	// volume, it rejoins, and no pull request opens meanwhile.
	c := l.cp.Client(t)
	old, err := c.CoreV1().Pods(l.ns).Get(l.ctx, demo+"-2", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	deleted := time.Now()
	if err := c.CoreV1().Pods(l.ns).Delete(l.ctx, demo+"-2", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testbed.Eventually(t, "the deleted pod back as a healthy voter", func() error {
		if o := l.pass()[demo]; o.Action == publish.ActionOpened {
			t.Fatalf("a pull request while a pod came back: %+v", o)
		}
		p, err := c.CoreV1().Pods(l.ns).Get(l.ctx, demo+"-2", metav1.GetOptions{})
		if err != nil || p.UID == old.UID {
			return fmt.Errorf("not made again yet: %v", err)
		}
		return l.nodeVoters(demo, 5)()
	})
	healed := time.Since(deleted)

	l.editSpec(etcdSpec(demo, 3, smallEtcd))
	steps = l.converge(demo, nil)
	testbed.Eventually(t, "3 healthy voters at the end", l.nodeVoters(demo, 3))
	acked, failed, outage := w.stop()
	l.noDrift("at the end")

	// Every acknowledged write is there.
	ctx, cancel := context.WithTimeout(l.ctx, 10*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, "w-", clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, kv := range resp.Kvs {
		have[string(kv.Key)] = true
	}
	lost := 0
	for _, k := range acked {
		if !have[k] {
			lost++
		}
	}
	if lost > 0 || len(acked) == 0 {
		t.Fatalf("%d of %d acknowledged writes lost", lost, len(acked))
	}
	t.Logf("5 -> 3: steps %v", steps)
	t.Logf("created in %.1fs; pod deleted to healthy voter again %.1fs; wall time %.1fs; %d writes acknowledged, %d lost, %d failed, longest outage %s; from each merge (or spec push) to the next pull request: %s",
		created.Seconds(), healed.Seconds(), time.Since(start).Seconds(), len(acked), lost, failed, outage, strings.Join(l.timings, ", "))
}
