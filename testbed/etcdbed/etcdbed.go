package etcdbed

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/runtime/certs"
	"github.com/cairn-dev/cairn/runtime/instance/etcd"
	"github.com/cairn-dev/cairn/testbed"
)

// Bed backs etcd pods of one namespace; it is a testbed.Backer.
type Bed struct {
	client kubernetes.Interface
	ns     string
	// bins are the etcd binaries by minor ("3.7"): a pod runs the one of
	// its container image's tag, as the image would.
	bins map[string]string
	dir  string
	log  *slog.Logger
	// Addresses give each member its own loopback address.
	*testbed.Addresses

	// running are the members started, by pod name (faults.go); tls
	// the clusters' TLS modes, as their last pod started.
	mu      sync.Mutex
	running map[string]*member
	held    map[string]bool
	tls     map[string]string
}

// New returns a bed for namespace ns of cp.
func New(t testing.TB, cp *testbed.ControlPlane, ns string, log *slog.Logger) *Bed {
	t.Helper()
	testbed.Require(t, testbed.TierIntegration, "etcd members")
	bins := map[string]string{"3.7": testbed.Bin(t, "etcd")}
	// The older minors, for the upgrade chain and downgrades: 3.4 from
	// Debian's package, 3.5 and 3.6 built like 3.7 (make testbin).
	for _, minor := range olderMinors {
		if p, err := testbed.FindBin("etcd-" + minor); err == nil {
			bins[minor] = p
		}
	}
	return &Bed{
		client: cp.Client(t), ns: ns, bins: bins, dir: t.TempDir(), log: log, Addresses: testbed.NewAddresses(),
	}
}

// ClientURL is the client URL of member ordinal ord of cluster: https
// once the cluster's pods start requiring TLS.
func (b *Bed) ClientURL(cluster string, ord int) string {
	scheme, _ := etcd.Schemes(b.mode(cluster))
	return scheme + "://" + b.address(cluster, ord)
}

func (b *Bed) address(cluster string, ord int) string {
	return b.IP(cluster, ord) + ":" + strconv.Itoa(contract.EtcdClientPort)
}

// Endpoints are the client endpoints of members 0..n-1 of cluster,
// host:port without a scheme: an etcd client reaches them over TLS when
// it has a TLS configuration (ClientTLS), in plain HTTP otherwise, so
// they serve a runtime made before the cluster's pods start.
func (b *Bed) Endpoints(cluster string, n int) []string {
	var eps []string
	for i := range n {
		eps = append(eps, b.address(cluster, i))
	}
	return eps
}

// ServerIPs are the addresses of members 0..n-1 of cluster, which the
// runtime's certificate for them must carry (agent.Config.EtcdServerIPs):
// the bed has no DNS, and etcd's peers verify each other by address.
func (b *Bed) ServerIPs(cluster string, n int) []net.IP {
	var ips []net.IP
	for i := range n {
		ips = append(ips, net.ParseIP(b.IP(cluster, i)))
	}
	return ips
}

// ClientTLS is a TLS configuration with which a test reaches cluster's
// members as the runtime does (root's certificate, the cluster's CA):
// nil while the cluster's pods have not started requiring TLS.
func (b *Bed) ClientTLS(ctx context.Context, cluster string) (*tls.Config, error) {
	if b.mode(cluster) != contract.TLSRequire {
		return nil, nil
	}
	m, err := b.Material(ctx, cluster)
	if err != nil {
		return nil, err
	}
	return m.ClientConfig(contract.EtcdClientServerName(cluster, b.ns))
}

// Material is cluster's certificates as the runtime keeps them: a test
// reaches the members over TLS with them whatever mode they run in.
func (b *Bed) Material(ctx context.Context, cluster string) (certs.Material, error) {
	return (&certs.Files{Client: b.client, Namespace: b.ns, Cluster: cluster}).Material(ctx)
}

func (b *Bed) mode(cluster string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if mode, ok := b.tls[cluster]; ok {
		return mode
	}
	return contract.TLSOff
}

// Start backs an etcd pod; other pods are not backed.
func (b *Bed) Start(ctx context.Context, pod *corev1.Pod) (testbed.Running, bool, error) {
	if pod.Labels[contract.LabelName] != contract.AppEtcd {
		return testbed.Running{}, false, nil
	}
	cluster := pod.Labels[contract.LabelInstance]
	ord, err := contract.PodOrdinal(pod.Name)
	if err != nil {
		return testbed.Running{}, false, fmt.Errorf("pod %s: no ordinal", pod.Name)
	}
	claim, err := b.client.CoreV1().PersistentVolumeClaims(b.ns).Get(ctx, contract.DataClaim(pod.Name), metav1.GetOptions{})
	if err != nil {
		return testbed.Running{}, false, fmt.Errorf("pod %s: its claim: %w", pod.Name, err)
	}
	cfg, err := b.config(ctx, cluster)
	if err != nil {
		return testbed.Running{}, false, err
	}
	bin, err := b.binary(pod)
	if err != nil {
		return testbed.Running{}, false, err
	}
	// As etcd.Run asks the pod's etcd binary.
	version, err := etcd.BinaryVersion(ctx, bin)
	if err != nil {
		return testbed.Running{}, false, err
	}
	b.mu.Lock()
	if b.tls == nil {
		b.tls = map[string]string{}
	}
	b.tls[cluster], _ = contract.TLSMode(cfg.TLS)
	b.mu.Unlock()
	cs, ps := etcd.Schemes(cfg.TLS)
	e := &etcd.Manager{
		Name: pod.Name, DataDir: filepath.Join(b.dir, string(claim.UID), "data"), Config: cfg,
		PeerURL:   func(m string) string { return ps + "://" + b.IP(cluster, ordinalOf(m)) + peerPort },
		ClientURL: func(m string) string { return b.ClientURL(cluster, ordinalOf(m)) },
		Endpoints: b.endpoints(ctx, cluster, pod.Name), DialTimeout: 2 * time.Second,
		Log: b.log.With("pod", pod.Name), Version: version,
	}
	ip := b.IP(cluster, ord)
	e.ListenPeerURL, e.ListenClientURL = ps+"://"+ip+peerPort, cs+"://"+b.address(cluster, ord)
	var files *certs.Files
	if contract.TLSOn(cfg.TLS) {
		// The pod's projected volume of the server and client Secrets, as
		// the kubelet keeps it (refreshed while the member runs).
		e.TLSDir = filepath.Join(b.dir, pod.Name+"-tls-"+strconv.FormatInt(time.Now().UnixNano(), 36))
		e.ListenMetricsURL = "http://" + ip + ":" + strconv.Itoa(contract.EtcdMetricsPort)
		files = &certs.Files{Client: b.client, Namespace: b.ns, Cluster: cluster, Dir: e.TLSDir, Uid: -1, Gid: -1}
	}
	m := &member{bed: b, etcd: e, bin: bin, done: make(chan struct{}), pod: pod.Name, files: files}
	mctx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	b.track(m)
	go m.run(mctx)
	return testbed.Running{IP: ip, Ready: m.ready, Exited: m.exited, Stop: m.stop}, true, nil
}

// binary is the etcd binary of the minor the pod's etcd container image
// names (quay.io/coreos/etcd:v3.6.16 runs 3.6).
func (b *Bed) binary(pod *corev1.Pod) (string, error) {
	for _, c := range pod.Spec.Containers {
		if c.Name != contract.EtcdContainer {
			continue
		}
		_, tag, _ := strings.Cut(c.Image[strings.LastIndexByte(c.Image, '/')+1:], ":")
		parts := strings.SplitN(strings.TrimPrefix(tag, "v"), ".", 3)
		if len(parts) < 2 {
			return "", fmt.Errorf("pod %s: image %s names no etcd version", pod.Name, c.Image)
		}
		if bin, ok := b.bins[parts[0]+"."+parts[1]]; ok {
			return bin, nil
		}
		return "", fmt.Errorf("pod %s: the test bed has no etcd %s.%s (make testbin)", pod.Name, parts[0], parts[1])
	}
	return "", fmt.Errorf("pod %s has no etcd container", pod.Name)
}

// olderMinors are the etcd minors before 3.7 a bed runs when their
// binary is at .cache/bin/etcd-<minor>.
var olderMinors = []string{"3.4", "3.5", "3.6"}

// peerPort is the members' peer port, as a URL's suffix.
var peerPort = ":" + strconv.Itoa(contract.EtcdPeerPort)

func ordinalOf(member string) int {
	n, _ := contract.PodOrdinal(member)
	return n
}

// config reads the cluster's rendered <cluster>-cairn ConfigMap as the
// pod would from its mounted files.
func (b *Bed) config(ctx context.Context, cluster string) (etcd.Config, error) {
	dir, err := testbed.MountConfigMap(ctx, b.client, b.ns, contract.ConfigMap(cluster), b.dir)
	if err != nil {
		return etcd.Config{}, err
	}
	defer os.RemoveAll(dir)
	return etcd.ReadConfig(dir)
}

// endpoints are the client URLs of the cluster's other pods, as the
// <cluster>-client Service would route to them, in the scheme of the
// cluster's TLS mode.
func (b *Bed) endpoints(ctx context.Context, cluster, self string) []string {
	pods, err := b.client.CoreV1().Pods(b.ns).List(ctx, metav1.ListOptions{LabelSelector: contract.LabelInstance + "=" + cluster})
	if err != nil {
		return nil
	}
	var eps []string
	for _, p := range pods.Items {
		if p.Name != self {
			eps = append(eps, b.ClientURL(cluster, ordinalOf(p.Name)))
		}
	}
	return eps
}

// member is one pod's instance manager and etcd process.
type member struct {
	bed  *Bed
	etcd *etcd.Manager
	bin  string
	pod  string
	// files, with TLS on, write the pod's certificates as its projected
	// volume holds them; nil with TLS off.
	files  *certs.Files
	cancel context.CancelFunc
	done   chan struct{}

	mu  sync.Mutex
	cmd *exec.Cmd
}

// run waits until the instance manager lets the member start, as
// etcd.Run does, then runs etcd until it exits or is stopped,
// with TLS on under the instance manager's supervisor.
func (m *member) run(ctx context.Context) {
	defer close(m.done)
	if m.files != nil {
		// The kubelet starts no container until the projected Secrets
		// exist, and keeps the files current while it runs.
		for {
			_, err := m.files.Sync(ctx)
			if err == nil {
				break
			}
			m.etcd.Log.Info("member waits for its certificates", "err", err.Error())
			select {
			case <-ctx.Done():
				return
			case <-time.After(500 * time.Millisecond):
			}
		}
		go m.refresh(ctx)
	}
	var args []string
	for {
		var err error
		if m.bed.isHeld(m.pod) {
			err = errHeld
		} else if args, err = m.etcd.Args(ctx); err == nil {
			break
		}
		m.etcd.Log.Info("member cannot start yet", "err", err.Error())
		select {
		case <-ctx.Done():
			return
		case <-time.After(500 * time.Millisecond):
		}
	}
	log, err := os.Create(filepath.Join(m.bed.dir, m.etcd.Name+"-"+strconv.FormatInt(time.Now().UnixNano(), 36)+".log"))
	if err != nil {
		return
	}
	defer log.Close()
	if m.files != nil {
		// With TLS on, as etcd.Run: the instance manager stays
		// etcd's parent and restarts it onto a changed CA bundle; the
		// kubelet's grace period bounds its stop.
		m.etcd.Turns.Stop = stopGrace
		if err := m.etcd.Supervise(ctx, m.bin, args, log, log); err != nil && ctx.Err() == nil {
			m.etcd.Log.Info("etcd exited", "err", err.Error())
		}
		return
	}
	cmd := exec.Command(m.bin, args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	m.mu.Lock()
	if ctx.Err() != nil {
		m.mu.Unlock()
		return
	}
	err = cmd.Start()
	m.cmd = cmd
	m.mu.Unlock()
	if err != nil {
		m.etcd.Log.Error("etcd did not start", "err", err.Error())
		return
	}
	_ = cmd.Wait()
}

// refresh rewrites the pod's certificate files from the Secrets every
// second until ctx ends, as the kubelet refreshes a projected volume.
func (m *member) refresh(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
		if _, err := m.files.Sync(ctx); err != nil && ctx.Err() == nil {
			m.etcd.Log.Warn("certificate files not refreshed", "err", err.Error())
		}
	}
}

func (m *member) exited() bool {
	select {
	case <-m.done:
		return true
	default:
		return false
	}
}

// stopGrace is the grace period a member is stopped in before it is
// killed.
const stopGrace = 10 * time.Second

// stop ends the member as a kubelet ends a container: SIGTERM, and
// SIGKILL after a grace period (with TLS on, the supervisor's: the end
// of ctx is its SIGTERM).
func (m *member) stop() {
	m.mu.Lock()
	m.cancel()
	cmd := m.cmd
	m.mu.Unlock()
	if cmd != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-m.done:
		case <-time.After(stopGrace):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
	}
	<-m.done
}

// ready is the rendered readiness probe: etcd's /health, on the metrics
// port with TLS on.
func (m *member) ready(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	u := m.etcd.ClientURL(m.etcd.Name)
	if m.etcd.ListenMetricsURL != "" {
		u = m.etcd.ListenMetricsURL
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u+"/health", nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}
