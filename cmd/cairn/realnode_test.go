package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/runtime/certs"
	"github.com/cairn-dev/cairn/testbed"
	"github.com/cairn-dev/cairn/testbed/gitbed"
	"github.com/cairn-dev/cairn/testbed/kubenode"
)

// newNodeBed is newBed on a real node with real Flux, with nothing
// served yet (begin serves the specs): the pods cairn renders run in
// containers from the images `make image` builds (cairn's runtime among
// them, as its rendered Deployment), and Flux applies each merged commit
// with a Kustomization per cluster made from examples/flux. images are
// the archives the clusters need beside cairn's.
func newNodeBed(t *testing.T, images ...string) *loop {
	return newNodesBedWith(t, 1, engines[0].start, images...)
}

// newNodeBedWith is newNodeBed with the sync engine start starts (a row
// of engines).
func newNodeBedWith(t *testing.T, start func(*testing.T, *testbed.ControlPlane) engine, images ...string) *loop {
	return newNodesBedWith(t, 1, start, images...)
}

// newNodesLoop is newLoop on a cluster of n real nodes (newNodesBed).
func newNodesLoop(t *testing.T, n int, specs map[string]string, clusters []string, images ...string) *loop {
	l := newNodesBed(t, n, images...)
	l.begin(specs, clusters)
	return l
}

// newNodesBed is newNodeBed on a cluster of n real nodes.
func newNodesBed(t *testing.T, n int, images ...string) *loop {
	return newNodesBedWith(t, n, engines[0].start, images...)
}

// newNodesBedWith is newNodesBed with the sync engine start starts.
func newNodesBedWith(t *testing.T, n int, start func(*testing.T, *testbed.ControlPlane) engine, images ...string) *loop {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	l := &loop{t: t, ctx: ctx, within: 8 * time.Minute, began: time.Now()}
	l.node = kubenode.StartNodes(t, n, append([]string{"cairn"}, images...)...)
	l.cp = l.node.ControlPlane
	l.ns = l.cp.Namespace(t, "gitops")
	l.engine = start(t, l.cp)
	return l
}

// engineApplied waits until the sync engine has applied main's head for
// every cluster rendered on main: the engine's own word that the merged
// commit runs. A cluster not rendered yet has nothing to apply.
func (l *loop) engineApplied() {
	head := gitbed.Head(l.t, l.bare, "main").String()
	for _, c := range l.engine.names(l.t) {
		if len(gitbed.Files(l.t, l.bare, "main", "rendered/"+c+"/")) == 0 {
			continue
		}
		l.engine.applied(l.t, c, head)
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

// smallPostgres are resources that let three members and the runtime
// share the test node's two cores.
const smallPostgres = "  resources: {requests: {cpu: 50m, memory: 64Mi}, limits: {memory: " + pgMemoryLimit + "}}\n"

// pgMemoryLimit is the memory limit of smallPostgres's members: room
// for PostgreSQL at its defaults and the instance manager, which one
// query that builds gigabytes in memory exceeds (oomKilledInPlace).
const pgMemoryLimit = "1Gi"
