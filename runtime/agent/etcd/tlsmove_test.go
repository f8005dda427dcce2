package etcd

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/runtime/certs"
	etcdinstance "github.com/cairn-dev/cairn/runtime/instance/etcd"
	"github.com/cairn-dev/cairn/testbed"
)

// An etcd cluster running before TLS moves to it as the planner's two
// rolling restarts bring it (planner/tls.go), with a client writing
// throughout: its config turns to accept, and each member restarts
// serving TLS beside plain HTTP; once the runtime reports every member
// serving TLS, the config turns to require, the writer moves to TLS, and
// each member restarts requiring TLS from clients and peers, the runtime
// moving its advertised peer URL to https as soon as its peer port
// serves the cluster's certificate. At the end every peer URL is https,
// plain HTTP and certificate-less clients are refused, and every
// acknowledged write is there.
func TestEtcdMovesToTLSWithWritesRunning(t *testing.T) {
	b := newEtcdBed(t, 3)
	names := []string{"e-2", "e-1", "e-0"}
	var ips []net.IP
	metrics := map[string]int{}
	for i := range maxMembers {
		name := "e-" + strconv.Itoa(i)
		ips = append(ips, net.ParseIP(b.ip[name]))
		metrics[name] = freeOn(t, b.ip[name])
	}
	// The runtime reaches the members as in a pod: endpoints without a
	// scheme, over TLS once the cluster requires it.
	b.members.Endpoints = b.hostPorts()
	b.members.Certs = &certs.Keeper{Client: b.members.Client, Namespace: b.ns, Cluster: "e", App: contract.AppEtcd, IPs: ips, Log: b.log}
	b.run()
	b.waitStatus("3 healthy voters", healthyVoters(3))
	w := b.startSwitchableWriter()

	// 1. accept: the runtime issues the certificates, each member
	// restarts offering TLS; plain clients keep working.
	b.config(map[string]string{contract.KeyBootstrap: contract.BootstrapExisting, contract.KeyTLS: contract.TLSAccept})
	var material certs.Material
	testbed.Eventually(t, "the runtime's certificates", func() (err error) {
		material, err = (&certs.Files{Client: b.kube, Namespace: b.ns, Cluster: "e"}).Material(b.ctx)
		return err
	})
	for _, name := range names {
		b.restartIn(name, contract.TLSAccept, metrics[name])
		b.waitStatus("3 healthy voters after "+name+" accepts TLS", healthyVoters(3))
	}
	b.waitStatus("every member serving TLS, verified", func(st etcdStatus) error {
		for _, m := range st.Members {
			if !m.TLS || contract.EtcdPeerTLS(m.PeerURLs) {
				return fmt.Errorf("member %+v", m)
			}
		}
		return nil
	})
	if _, err := b.etcd().Put(b.ctx, "plain-in-accept", "x"); err != nil {
		t.Fatalf("a plain client in accept: %v", err)
	}

	// 2. require: clients move to TLS first, then each member restarts
	// requiring it, and the runtime moves its peer URL.
	tc, err := material.ClientConfig(b.ip["e-0"])
	if err != nil {
		t.Fatal(err)
	}
	tc.ServerName = "" // verified by address, each endpoint its own
	tlsCli := b.tlsClient(tc)
	w.use(tlsCli, "tls")
	b.config(map[string]string{contract.KeyBootstrap: contract.BootstrapExisting, contract.KeyTLS: contract.TLSRequire})
	for _, name := range names {
		b.restartIn(name, contract.TLSRequire, metrics[name])
		b.waitStatus(name+"'s peers reach it over TLS", func(st etcdStatus) error {
			if err := healthyVoters(3)(st); err != nil {
				return err
			}
			for _, m := range st.Members {
				if m.Name == name && !contract.EtcdPeerTLS(m.PeerURLs) {
					return fmt.Errorf("%s advertises %v", name, m.PeerURLs)
				}
			}
			return nil
		})
	}
	acked, failed := w.stop()

	// Every member requires TLS of clients and of peers.
	st := b.waitStatus("every peer URL https, every member serving TLS", func(st etcdStatus) error {
		for _, m := range st.Members {
			if !m.TLS || !contract.EtcdPeerTLS(m.PeerURLs) {
				return fmt.Errorf("member %+v", m)
			}
		}
		return healthyVoters(3)(st)
	})
	t.Logf("members at the end: %+v", st.Members)
	for _, name := range []string{"e-0", "e-1", "e-2"} {
		ep := b.ip[name] + ":" + strconv.Itoa(b.cli[name])
		if err := putWith(b.ctx, ep, nil); err == nil {
			t.Errorf("%s admitted a plain HTTP client", name)
		}
		noCert := tc.Clone()
		noCert.GetClientCertificate, noCert.Certificates = nil, nil
		if err := putWith(b.ctx, ep, noCert); err == nil {
			t.Errorf("%s admitted a TLS client without a certificate", name)
		}
		if err := putWith(b.ctx, ep, tc); err != nil {
			t.Errorf("%s refused root's certificate: %v", name, err)
		}
	}
	moved := 0
	for _, r := range b.reasons() {
		switch r {
		case ReasonPeerURLMovedToTLS:
			moved++
		case ReasonMemberRemoved, ReasonMemberAdded, ReasonMemberReplaced:
			t.Errorf("a %s Event while the members only restarted", r)
		}
	}
	if moved != 3 {
		t.Errorf("%d %s Events, want one for each member", moved, ReasonPeerURLMovedToTLS)
	}
	for _, k := range acked {
		got, err := tlsCli.Get(b.ctx, k)
		if err != nil || len(got.Kvs) != 1 {
			t.Fatalf("acknowledged write %s is gone: %v", k, err)
		}
	}
	// Writes that time out while a restarted member's leadership moves
	// are counted and reported, as in the other rolling-restart tests;
	// what must hold is that none acknowledged is lost (above) and that
	// the client kept writing over TLS through the require restarts.
	t.Logf("%d writes acknowledged, %d failed (plain, then TLS from the require restarts on)", len(acked), failed)
	if !slices.ContainsFunc(acked, func(k string) bool { return strings.HasPrefix(k, "w/tls/") }) {
		t.Errorf("no write over TLS was acknowledged (%d failed)", failed)
	}
	for _, err := range b.passErrors() {
		t.Logf("pass error: %v", err)
	}
}

// hostPorts are the members' client addresses without a scheme.
func (b *etcdBed) hostPorts() []string {
	var out []string
	for i := range maxMembers {
		name := "e-" + strconv.Itoa(i)
		out = append(out, b.ip[name]+":"+strconv.Itoa(b.cli[name]))
	}
	return out
}

// restartIn stops member name as the kubelet stops a container (SIGTERM)
// and starts it again through its instance manager in TLS mode mode, with
// the cluster's certificates written as its projected volume holds them.
func (b *etcdBed) restartIn(name, mode string, metricsPort int) {
	b.t.Helper()
	if cmd := b.procs[name]; cmd != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		_ = cmd.Wait()
		delete(b.procs, name)
	}
	dir := filepath.Join(b.dir, name+"-tls-"+mode)
	files := &certs.Files{Client: b.kube, Namespace: b.ns, Cluster: "e", Dir: dir, Uid: -1, Gid: -1}
	if _, err := files.Sync(b.ctx); err != nil {
		b.t.Fatal(err)
	}
	cs, ps := etcdinstance.Schemes(mode)
	at := func(scheme, m string, port int) string { return scheme + "://" + b.ip[m] + ":" + strconv.Itoa(port) }
	e := b.manager(name, contract.BootstrapExisting)
	e.Config.TLS, e.TLSDir, e.Version = mode, dir, "3.7.3"
	e.PeerURL = func(m string) string { return at(ps, m, b.peer[m]) }
	e.ClientURL = func(m string) string { return at(cs, m, b.cli[m]) }
	e.ListenPeerURL, e.ListenClientURL = at(ps, name, b.peer[name]), at(cs, name, b.cli[name])
	e.ListenMetricsURL = at("http", name, metricsPort)
	e.Endpoints = nil
	for i := range b.initial {
		m := "e-" + strconv.Itoa(i)
		e.Endpoints = append(e.Endpoints, at(cs, m, b.cli[m]))
	}
	var args []string
	testbed.Eventually(b.t, name+" may start in "+mode, func() (err error) {
		args, err = e.Args(b.ctx)
		return err
	})
	b.exec(name, args)
}

// tlsClient reaches every member over TLS with tc.
func (b *etcdBed) tlsClient(tc *tls.Config) *clientv3.Client {
	c, err := clientv3.New(clientv3.Config{Endpoints: b.hostPorts()[:b.initial], DialTimeout: 2 * time.Second, Logger: zap.NewNop(), TLS: tc})
	if err != nil {
		b.t.Fatal(err)
	}
	b.t.Cleanup(func() { c.Close() })
	return c
}

// putWith writes one key at one member's address, over TLS with tc (nil:
// plain HTTP).
func putWith(ctx context.Context, endpoint string, tc *tls.Config) error {
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 2 * time.Second, Logger: zap.NewNop(), TLS: tc})
	if err != nil {
		return err
	}
	defer c.Close()
	cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	_, err = c.Put(cctx, "probe", "x")
	return err
}

// switchableWriter writes a key every 20 ms through the client it was
// last given, counting the writes acknowledged and failed.
type switchableWriter struct {
	cli    atomic.Pointer[clientv3.Client]
	prefix atomic.Pointer[string]
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	acked  []string
	failed int
}

func (b *etcdBed) startSwitchableWriter() *switchableWriter {
	ctx, cancel := context.WithCancel(b.ctx)
	w := &switchableWriter{cancel: cancel, done: make(chan struct{})}
	w.use(b.etcd(), "plain")
	b.t.Cleanup(func() { w.stop() })
	go func() {
		defer close(w.done)
		for i := 0; ctx.Err() == nil; i++ {
			k := fmt.Sprintf("w/%s/%06d", *w.prefix.Load(), i)
			cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			_, err := w.cli.Load().Put(cctx, k, "v")
			cancel()
			w.mu.Lock()
			switch {
			case err == nil:
				w.acked = append(w.acked, k)
			case !errors.Is(err, context.Canceled) && ctx.Err() == nil:
				w.failed++
			}
			w.mu.Unlock()
			time.Sleep(20 * time.Millisecond)
		}
	}()
	return w
}

func (w *switchableWriter) use(c *clientv3.Client, prefix string) {
	w.prefix.Store(&prefix)
	w.cli.Store(c)
}

func (w *switchableWriter) stop() ([]string, int) {
	w.cancel()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.acked), w.failed
}
