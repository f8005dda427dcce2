package etcd

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
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
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/runtime/certs"
	"github.com/cairn-dev/cairn/runtime/instance"
	etcdinstance "github.com/cairn-dev/cairn/runtime/instance/etcd"
	"github.com/cairn-dev/cairn/testbed"
	"github.com/cairn-dev/cairn/testbed/agentbed"
)

// etcdSpec is the cluster the runtime's rendered Role is written for in
// these tests (testbed.ApplyRenderedRBAC).
const etcdSpec = "apiVersion: etcd.database.coreos.com/v1beta2\nkind: EtcdCluster\nmetadata: {name: e}\nspec: {size: 3, version: \"3.7.3\"}\n"

// etcdBed runs the etcd cluster "e": real etcd members, member e-<i> on
// 127.0.0.<41+i>, each backing a pod e-<i> with its claim data-e-<i> in a
// real control plane, and the runtime's membership passes, acting as the
// runtime's ServiceAccount under the rendered Role.
type etcdBed struct {
	t       *testing.T
	ctx     context.Context
	bin     string
	dir     string
	initial int
	ip      map[string]string
	peer    map[string]int
	cli     map[string]int
	procs   map[string]*exec.Cmd
	kube    kubernetes.Interface
	ns      string
	log     *slog.Logger
	members *Membership
	reg     *prometheus.Registry
	passes  atomic.Int64
	mu      sync.Mutex
	errs    []error
	// quota is the members' space quota; 0 leaves etcd's default.
	quota int64
	// certManager: the cluster's certificates come from a cert-manager
	// issuer (tls_test.go); the members serve and require TLS with
	// them from tlsDir, as their projected volume holds them.
	certManager bool
	tlsDir      string
	// nodeReader: the cluster's spec names the bed's namespace, so its
	// rendered node reader (a ClusterRole and binding) lets the runtime
	// read nodes (drain_bed_test.go).
	nodeReader bool
}

const maxMembers = 5

func newEtcdBed(t *testing.T, size int, opts ...func(*etcdBed)) *etcdBed {
	testbed.Require(t, testbed.TierIntegration, "etcd members")
	b := &etcdBed{t: t, ctx: context.Background(), bin: testbed.Bin(t, "etcd"), initial: size,
		ip: map[string]string{}, peer: map[string]int{}, cli: map[string]int{}, procs: map[string]*exec.Cmd{}}
	for _, o := range opts {
		o(b)
	}
	dir, err := os.MkdirTemp("", "cairn-etcd-")
	if err != nil {
		t.Fatal(err)
	}
	b.dir = dir
	t.Cleanup(func() { os.RemoveAll(dir) })
	for i := range maxMembers {
		name := "e-" + strconv.Itoa(i)
		b.ip[name] = "127.0.0." + strconv.Itoa(41+i)
		b.peer[name], b.cli[name] = freeOn(t, b.ip[name]), freeOn(t, b.ip[name])
	}
	b.log = testbed.Logger(t, slog.LevelInfo)
	cp := testbed.Start(t)
	b.kube = cp.Client(t)
	b.ns = cp.Namespace(t, "db")
	rbacSpec := etcdSpec
	if b.certManager {
		rbacSpec = b.certManagerSetup() // tls_test.go
	}
	if b.nodeReader {
		rbacSpec = strings.Replace(rbacSpec, "metadata: {name: e}", "metadata: {name: e, namespace: "+b.ns+"}", 1)
	}
	testbed.ApplyRenderedRBAC(t, b.kube, b.ns, rbacSpec)
	b.reg = prometheus.NewRegistry()
	metrics, err := NewEtcdMetrics(b.reg, "e")
	if err != nil {
		t.Fatal(err)
	}
	b.members = &Membership{Endpoints: b.clientURLs(), Client: testbed.AsRuntime(t, cp.Config(), b.ns, "e"), Namespace: b.ns, Cluster: "e", Metrics: metrics, Log: b.log}
	if b.certManager {
		// As Etcd wires it: a runtime that kept the certificates itself
		// would use it.
		b.members.Certs = &certs.Keeper{Client: b.members.Client, Namespace: b.ns, Cluster: "e", App: contract.AppEtcd, Log: b.log}
	}
	b.statefulSet(size)
	for i := range size {
		b.claim("e-" + strconv.Itoa(i))
	}
	for i := range size {
		b.start("e-" + strconv.Itoa(i))
		b.pod("e-"+strconv.Itoa(i), true)
	}
	return b
}

func freeOn(t *testing.T, ip string) int {
	l, err := net.Listen("tcp", ip+":0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func (b *etcdBed) url(ip string, port int) string {
	scheme := "http"
	if b.tlsDir != "" {
		scheme = "https"
	}
	return scheme + "://" + ip + ":" + strconv.Itoa(port)
}

func (b *etcdBed) clientURLs() []string {
	var out []string
	for i := range maxMembers {
		name := "e-" + strconv.Itoa(i)
		out = append(out, b.url(b.ip[name], b.cli[name]))
	}
	return out
}

// run makes runtime passes in the background, as the leading agent does,
// until the test ends.
func (b *etcdBed) run() {
	ctx, cancel := context.WithCancel(b.ctx)
	done := make(chan struct{})
	b.t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			if err := b.members.Pass(ctx); err != nil && ctx.Err() == nil {
				b.mu.Lock()
				b.errs = append(b.errs, err)
				b.mu.Unlock()
			}
			b.passes.Add(1)
			time.Sleep(200 * time.Millisecond)
		}
	}()
}

// waitPasses waits until n more passes have been made.
func (b *etcdBed) waitPasses(n int64) {
	until := b.passes.Load() + n
	for b.passes.Load() < until {
		time.Sleep(50 * time.Millisecond)
	}
}

// passErrors fails on a pass error the Role caused and returns the others.
func (b *etcdBed) passErrors() []error {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, err := range b.errs {
		if apierrors.IsForbidden(errors.Unwrap(err)) || strings.Contains(err.Error(), "forbidden") {
			b.t.Fatalf("the rendered Role is not enough: %v", err)
		}
	}
	return slices.Clone(b.errs)
}

func (b *etcdBed) manager(name string, bootstrap string) *etcdinstance.Manager {
	e := &etcdinstance.Manager{Name: name, DataDir: filepath.Join(b.dir, name),
		Config:  etcdinstance.Config{Config: instance.Config{Bootstrap: bootstrap}, InitialMembers: b.initial, Token: "t", RemoveMember: b.removeRequest(), SpaceQuota: b.quota},
		PeerURL: func(m string) string { return b.url(b.ip[m], b.peer[m]) }, ClientURL: func(m string) string { return b.url(b.ip[m], b.cli[m]) },
		ListenPeerURL: b.url(b.ip[name], b.peer[name]), ListenClientURL: b.url(b.ip[name], b.cli[name]),
		Endpoints: b.clientURLs(), DialTimeout: 2 * time.Second, Log: b.log}
	if b.tlsDir != "" {
		e.Config.TLS, e.TLSDir = contract.TLSRequire, b.tlsDir
	}
	return e
}

// start runs member name's instance manager until it says how to start,
// then etcd.
func (b *etcdBed) start(name string) {
	b.t.Helper()
	bootstrap := "new"
	if b.status() != nil {
		bootstrap = "existing" // sealed once the cluster runs
	}
	var args []string
	testbed.Eventually(b.t, name+" may start", func() (err error) {
		args, err = b.manager(name, bootstrap).Args(b.ctx)
		return err
	})
	b.exec(name, args)
	b.t.Cleanup(func() { b.kill(name) })
}

// exec starts etcd for member name with args; the bed's cleanup stops
// the latest process of each member.
func (b *etcdBed) exec(name string, args []string) {
	b.t.Helper()
	cmd := exec.Command(b.bin, append(args, "--log-level", "warn")...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		b.t.Fatal(err)
	}
	b.procs[name] = cmd
}

func (b *etcdBed) kill(name string) {
	if cmd := b.procs[name]; cmd != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
		delete(b.procs, name)
	}
}

var etcdLabels = contract.Selector(contract.AppEtcd, "e")

var etcdPod = corev1.PodSpec{Containers: []corev1.Container{{Name: "etcd", Image: "quay.io/coreos/etcd:v3.7.3"}}}

func (b *etcdBed) statefulSet(replicas int) {
	b.t.Helper()
	n := int32(replicas)
	sts, err := b.kube.AppsV1().StatefulSets(b.ns).Get(b.ctx, "e", metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = b.kube.AppsV1().StatefulSets(b.ns).Create(b.ctx, &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "e"},
			Spec: appsv1.StatefulSetSpec{Replicas: &n, Selector: &metav1.LabelSelector{MatchLabels: etcdLabels}, ServiceName: "e",
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: etcdLabels}, Spec: etcdPod}}}, metav1.CreateOptions{})
	} else if err == nil {
		sts.Spec.Replicas = &n
		_, err = b.kube.AppsV1().StatefulSets(b.ns).Update(b.ctx, sts, metav1.UpdateOptions{})
	}
	if err != nil {
		b.t.Fatal(err)
	}
}

// pod creates or updates pod name, ready or not, as the StatefulSet
// controller and the kubelet would.
func (b *etcdBed) pod(name string, ready bool) {
	b.t.Helper()
	pods := b.kube.CoreV1().Pods(b.ns)
	pod, err := pods.Get(b.ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		member := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: etcdLabels}, Spec: etcdPod}
		agentbed.OwnedByStatefulSet(b.t, b.kube, b.ns, "e", member)
		pod, err = pods.Create(b.ctx, member, metav1.CreateOptions{})
	}
	if err != nil {
		b.t.Fatal(err)
	}
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}}
	if _, err := pods.UpdateStatus(b.ctx, pod, metav1.UpdateOptions{}); err != nil {
		b.t.Fatal(err)
	}
}

func (b *etcdBed) deletePod(name string) {
	b.t.Helper()
	zero := int64(0)
	if err := b.kube.CoreV1().Pods(b.ns).Delete(b.ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		b.t.Fatal(err)
	}
}

// claim creates member name's volume claim and returns its UID.
func (b *etcdBed) claim(name string) string {
	b.t.Helper()
	pvc, err := b.kube.CoreV1().PersistentVolumeClaims(b.ns).Create(b.ctx, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: contract.DataClaim(name), Labels: etcdLabels},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}, metav1.CreateOptions{})
	if err != nil {
		b.t.Fatal(err)
	}
	return string(pvc.UID)
}

// replaceClaim deletes member name's claim (its protection finalizer
// removed, as the controller would once no pod uses it) and creates a new
// one, as happens when a volume is lost; it returns the new UID.
func (b *etcdBed) replaceClaim(name string) string {
	b.t.Helper()
	pvcs := b.kube.CoreV1().PersistentVolumeClaims(b.ns)
	if err := pvcs.Delete(b.ctx, contract.DataClaim(name), metav1.DeleteOptions{}); err != nil {
		b.t.Fatal(err)
	}
	testbed.Eventually(b.t, "claim deleted", func() error {
		pvc, err := pvcs.Get(b.ctx, contract.DataClaim(name), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		pvc.Finalizers = nil
		_, err = pvcs.Update(b.ctx, pvc, metav1.UpdateOptions{})
		return fmt.Errorf("still there (%v)", err)
	})
	return b.claim(name)
}

// requestRemoval renders a merged EtcdRemoveMember step's request into
// the ConfigMap e-cairn.
func (b *etcdBed) requestRemoval(id, member string) {
	b.t.Helper()
	b.config(map[string]string{contract.KeyBootstrap: contract.BootstrapExisting, contract.KeyRequestRemoveMemberID: id, contract.KeyRequestRemoveMember: member})
}

func (b *etcdBed) removeRequest() string {
	cm, err := b.kube.CoreV1().ConfigMaps(b.ns).Get(b.ctx, contract.ConfigMap("e"), metav1.GetOptions{})
	if err != nil {
		return ""
	}
	return cm.Data[contract.KeyRequestRemoveMember]
}

// status is the runtime's status; nil before the first.
func (b *etcdBed) status() *etcdStatus {
	st, err := readEtcdStatus(b.ctx, b.kube, b.ns, contract.StatusConfigMap("e"))
	if err != nil {
		b.t.Fatal(err)
	}
	return st
}

// waitStatus waits until the status says ok.
func (b *etcdBed) waitStatus(what string, ok func(st etcdStatus) error) etcdStatus {
	b.t.Helper()
	var st etcdStatus
	testbed.Eventually(b.t, what, func() error {
		s := b.status()
		if s == nil {
			return errors.New("no status yet")
		}
		st = *s
		return ok(st)
	})
	return st
}

// healthyVoters checks a status of n healthy voters, one leading, all at
// 3.7.3 with their claims recorded.
func healthyVoters(n int) func(st etcdStatus) error {
	return func(st etcdStatus) error {
		leaders := 0
		for _, m := range st.Members {
			if m.Leader {
				leaders++
			}
			if m.Learner || !m.Healthy || m.Version != "3.7.3" || m.Revision == 0 || m.ClaimUID == "" {
				return fmt.Errorf("member %+v", m)
			}
		}
		if len(st.Members) != n || leaders != 1 || !st.Quorum || st.ClusterVersion != "3.7" {
			data, _ := json.Marshal(st)
			return fmt.Errorf("status %s", data)
		}
		return nil
	}
}

// events lists the runtime's Events on the StatefulSet, oldest first.
func (b *etcdBed) events() []corev1.Event {
	list, err := b.kube.CoreV1().Events(b.ns).List(b.ctx, metav1.ListOptions{})
	if err != nil {
		b.t.Fatal(err)
	}
	slices.SortFunc(list.Items, func(x, y corev1.Event) int { return strings.Compare(x.Name, y.Name) })
	var out []corev1.Event
	for _, e := range list.Items {
		if e.InvolvedObject.Kind == "StatefulSet" && e.InvolvedObject.Name == "e" {
			out = append(out, e)
		}
	}
	return out
}

// reasons lists the reasons of the runtime's Events, oldest first.
func (b *etcdBed) reasons() []string {
	var out []string
	for _, e := range b.events() {
		out = append(out, e.Reason)
		b.t.Logf("event %s %s: %s", e.Type, e.Reason, e.Message)
	}
	return out
}

// etcd is a client of every member.
func (b *etcdBed) etcd() *clientv3.Client {
	var tc *tls.Config
	if b.tlsDir != "" {
		var err error
		if tc, err = etcdinstance.ClientTLS(b.tlsDir); err != nil {
			b.t.Fatal(err)
		}
	}
	c, err := clientv3.New(clientv3.Config{Endpoints: b.clientURLs(), DialTimeout: 2 * time.Second, Logger: zap.NewNop(), TLS: tc})
	if err != nil {
		b.t.Fatal(err)
	}
	b.t.Cleanup(func() { c.Close() })
	return c
}

// metric is the value of a metric the runtime serves, by name and the
// value of its one label besides cluster ("" for none).
func (b *etcdBed) metric(name, label string) float64 {
	b.t.Helper()
	families, err := b.reg.Gather()
	if err != nil {
		b.t.Fatal(err)
	}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			value := ""
			for _, l := range m.GetLabel() {
				if l.GetName() != "cluster" {
					value = l.GetValue()
				}
			}
			if f.GetName() == name && value == label {
				return m.GetGauge().GetValue() + m.GetCounter().GetValue()
			}
		}
	}
	b.t.Fatalf("no metric %s{%s}", name, label)
	return 0
}
