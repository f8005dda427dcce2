package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/cairn-dev/cairn/planner"
	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/spec"
	"github.com/cairn-dev/cairn/renderer"
	"github.com/cairn-dev/cairn/testbed"
)

// Issue 17: an etcd cluster that a cairn release before etcd TLS created
// (plain HTTP for clients and peers) moves to TLS through its step pull
// requests on the real control plane, with a client writing throughout:
// a rolling restart into accept (TLS beside plain HTTP), the client moves
// to TLS once the runtime has seen every member serve it, then one
// restart per member into require, each member's peer URL moved to https
// by the runtime. At the end every member refuses plain HTTP and clients
// without a certificate, every peer URL is https, every acknowledged
// write is there, and the sync shows no drift.
func TestEtcdMovesToTLSThroughItsPullRequests(t *testing.T) {
	const kv = "legacy"
	l := newLoop(t, etcdSpec(kv, 3))
	l.within = 8 * time.Minute // six rolling restarts
	l.createLegacyEtcd(kv, 3)
	w := startWriter(l.ctx, l.client(kv, 3)) // plain HTTP: the cluster serves nothing else

	steps := l.converge(kv, func(step string) {
		// Once the last member serves TLS beside plain HTTP, the client
		// moves to TLS, as an application would before TLS is required.
		if l.configTLS(kv) != contract.TLSAccept || !strings.HasPrefix(step, "restart-0-") {
			return
		}
		testbed.Eventually(t, "every member of "+kv+" serving TLS, as the runtime reports", func() error {
			return l.everyMember(kv, func(m contract.EtcdMember) bool { return m.TLS })
		})
		w.use(l.tlsClient(kv, 3))
	})
	testbed.Eventually(t, "3 healthy voters, every peer URL https", func() error {
		if err := l.voters(kv, 3)(); err != nil {
			return err
		}
		return l.everyMember(kv, func(m contract.EtcdMember) bool { return m.TLS && contract.EtcdPeerTLS(m.PeerURLs) })
	})
	acked, failed, outage := w.stop()

	// Three restarts into accept, then three into require, each member
	// from the highest ordinal down.
	var accept, require []string
	for _, s := range steps {
		switch {
		case strings.HasPrefix(s, "restart-") && len(require) == 0 && (len(accept) < 3):
			accept = append(accept, s)
		case strings.HasPrefix(s, "restart-"):
			require = append(require, s)
		}
	}
	if len(accept) != 3 || len(require) != 3 || !slices.IsSortedFunc(accept, func(a, b string) int { return strings.Compare(b, a) }) {
		t.Fatalf("steps %v: want three accept restarts, then three require restarts", steps)
	}
	for _, pr := range l.gh.PRs {
		if !strings.HasPrefix(pr.Head.Ref, "cairn/"+kv+"/restart-") {
			continue
		}
		step := strings.TrimPrefix(pr.Head.Ref, "cairn/"+kv+"/")
		isRequire := slices.Contains(require, step)
		if strings.Contains(pr.Body, "**Disruptive:** yes. **Reversible:** no.") != isRequire {
			t.Errorf("pull request of %s (require %v) says: %s", step, isRequire, pr.Body)
		}
	}
	for i := range 3 {
		ep := l.bed.Endpoints(kv, 3)[i]
		if err := putPlain(l.ctx, ep); err == nil {
			t.Errorf("member %d admits a plain HTTP client", i)
		}
	}
	cli := l.tlsClient(kv, 3)
	for _, k := range acked {
		got, err := cli.Get(l.ctx, k)
		if err != nil || len(got.Kvs) != 1 {
			t.Fatalf("acknowledged write %s is gone: %v", k, err)
		}
	}
	l.noDrift("after the move to TLS")
	// Failed writes (timeouts while a restarted member's leadership
	// moves) are reported, as in the other walkthroughs; no acknowledged
	// write may be lost (above).
	t.Logf("steps %v; %d writes acknowledged, %d failed, longest outage %s; merge to next pull request: %s",
		steps, len(acked), failed, outage, strings.Join(l.timings, ", "))
}

// createLegacyEtcd brings up etcd cluster as a cairn release before etcd
// TLS created it: the create step's objects without TLS (no tls key in
// its config, no certificate volume, metrics port or probe on it, no
// certificate rules in the runtime's Role), applied as Flux would have
// applied them then, not through a pull request; then its runtime, and n
// healthy voters.
func (l *loop) createLegacyEtcd(cluster string, n int) {
	t := l.t
	cs, err := spec.Decode("spec.yaml", []byte(etcdSpec(cluster, n)["clusters/"+cluster+".yaml"]))
	if err != nil {
		t.Fatal(err)
	}
	p := planner.New(planner.Etcd(), planner.Postgres()).PlanCluster(cs[0], nil, nil)
	r, err := renderer.New(renderer.Options{}, renderer.Etcd(), renderer.Postgres())
	if err != nil {
		t.Fatal(err)
	}
	tree, _, err := r.Render(cs[0], p, "create")
	if err != nil {
		t.Fatal(err)
	}
	dir := renderer.Root(cluster) + "/" + renderer.StepDir("create") + "/"
	withoutTLS(t, tree, dir+"statefulset.yaml", func(o map[string]any) {
		pod := dig(o, "spec", "template", "spec")
		pod["volumes"] = without(pod["volumes"], "tls")
		c := pod["containers"].([]any)[0].(map[string]any)
		c["volumeMounts"] = without(c["volumeMounts"], "tls")
		c["ports"] = without(c["ports"], "metrics")
		dig(c, "readinessProbe", "httpGet")["port"] = "client"
	})
	withoutTLS(t, tree, dir+"cairn-config.yaml", func(o map[string]any) { delete(dig(o, "data"), contract.KeyTLS) })
	withoutTLS(t, tree, dir+"runtime-role.yaml", func(o map[string]any) {
		o["rules"] = slices.DeleteFunc(o["rules"].([]any), func(r any) bool {
			return slices.Contains(r.(map[string]any)["resources"].([]any), any("secrets"))
		})
	})
	if _, err := l.cp.NewSync(t, l.ns).Apply(l.ctx, tree); err != nil {
		t.Fatal(err)
	}
	l.runRuntime(cluster)
	testbed.Eventually(t, fmt.Sprintf("%d healthy voters of %s over plain HTTP", n, cluster), l.voters(cluster, n))
}

// withoutTLS rewrites one YAML file of tree with edit.
func withoutTLS(t *testing.T, tree renderer.Tree, file string, edit func(map[string]any)) {
	t.Helper()
	var o map[string]any
	if err := yaml.Unmarshal(tree[file], &o); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	edit(o)
	out, err := yaml.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	tree[file] = out
}

func dig(o map[string]any, path ...string) map[string]any {
	for _, p := range path {
		o = o[p].(map[string]any)
	}
	return o
}

// without is a list of named objects without the one named name.
func without(list any, name string) []any {
	return slices.DeleteFunc(slices.Clone(list.([]any)), func(e any) bool { return e.(map[string]any)["name"] == name })
}

// configTLS is the TLS mode of cluster's rendered config as it runs.
func (l *loop) configTLS(cluster string) string {
	cm, err := l.cp.Client(l.t).CoreV1().ConfigMaps(l.ns).Get(l.ctx, contract.ConfigMap(cluster), metav1.GetOptions{})
	if err != nil {
		l.t.Fatal(err)
	}
	return cm.Data[contract.KeyTLS]
}

// everyMember checks every member of the runtime's etcd status.
func (l *loop) everyMember(cluster string, ok func(contract.EtcdMember) bool) error {
	cm, err := l.cp.Client(l.t).CoreV1().ConfigMaps(l.ns).Get(l.ctx, contract.StatusConfigMap(cluster), metav1.GetOptions{})
	if err != nil {
		return err
	}
	var st contract.EtcdStatus
	if err := yaml.Unmarshal([]byte(cm.Data[contract.StatusKeyEtcd]), &st); err != nil {
		return err
	}
	if len(st.Members) == 0 {
		return fmt.Errorf("no members in the status")
	}
	for _, m := range st.Members {
		if !ok(m) {
			return fmt.Errorf("member %+v", m)
		}
	}
	return nil
}

// tlsClient reaches cluster's first n members over TLS with root's
// certificate, whatever mode the bed last started them in.
func (l *loop) tlsClient(cluster string, n int) *clientv3.Client {
	m, err := l.bed.Material(l.ctx, cluster)
	if err != nil {
		l.t.Fatal(err)
	}
	tc, err := m.ClientConfig(contract.EtcdClientServerName(cluster, l.ns))
	if err != nil {
		l.t.Fatal(err)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: l.bed.Endpoints(cluster, n), DialTimeout: 2 * time.Second, Logger: zap.NewNop(), TLS: tc})
	if err != nil {
		l.t.Fatal(err)
	}
	l.t.Cleanup(func() { cli.Close() })
	return cli
}

// putPlain writes one key at one member's endpoint over plain HTTP.
func putPlain(ctx context.Context, endpoint string) error {
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return err
	}
	defer cli.Close()
	cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	_, err = cli.Put(cctx, "probe", "x")
	return err
}
