package testbed

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/yaml"

	"github.com/cairn-dev/cairn/deploy/admission"
)

// ControlPlane is a running etcd and kube-apiserver.
type ControlPlane struct {
	URL   string
	Token string
	dir   string
	// users holds the tokens of Options.Node's users, by name.
	users map[string]string
	// shared is set on a package's shared control plane (Shared), whose
	// tests each get namespaces of their own; names holds those made.
	shared bool
	names  sync.Map
}

// Bin returns the path of a test binary in the repo's .cache/bin, failing
// the test when it is missing.
func Bin(t testing.TB, name string) string {
	t.Helper()
	p, err := FindBin(name)
	if err != nil {
		Missing(t, err, BinTarget(name))
	}
	return p
}

// FindBin returns the path of a test binary in the repo's .cache/bin.
func FindBin(name string) (string, error) {
	_, file, _, _ := runtime.Caller(0)
	p := filepath.Join(filepath.Dir(file), "..", ".cache", "bin", name)
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("%s not found at %s", name, p)
	}
	return p, nil
}

// Options choose what a control plane runs beside etcd and kube-apiserver.
type Options struct {
	// ControllerManager starts kube-controller-manager with the
	// controllers cairn's manifests rely on: StatefulSets, the garbage
	// collector, ServiceAccounts and their tokens, PVC protection, Jobs
	// (a major upgrade's pre-flight check), and PodDisruptionBudgets'
	// status (the Eviction API reads it: drains).
	ControllerManager bool
	// WithoutRuntimePolicy leaves out the admission policy every control
	// plane otherwise installs (deploy/admission): for the test that shows
	// what the runtime could do without it.
	WithoutRuntimePolicy bool
	// Node makes the control plane of a real node (package kubenode)
	// instead of one for the node stand-in; nil for the stand-in.
	Node *NodeOptions
}

// NodeOptions make a control plane that a real kubelet, kube-proxy and
// the pods they run can use: the API server binds and advertises Address
// (so the kubernetes Service has an endpoint pods reach), authorizes
// with Node and RBAC, serves Services from ServiceCIDR, and
// kube-scheduler and the controllers of a whole cluster run beside it.
type NodeOptions struct {
	Address     string
	ServiceCIDR string
	// Users get tokens of their own (KubeconfigFor): the kubelet's
	// system:node:<name> in system:nodes, kube-proxy's system:kube-proxy.
	Users []User
}

// User is an identity the API server's token file holds.
type User struct {
	Name   string
	Groups []string
}

// controllers are the kube-controller-manager controllers a test bed runs.
// There is no kubelet and no cloud: a node stand-in binds pods and claims.
const controllers = "statefulset-controller,garbage-collector-controller,serviceaccount-controller," +
	"serviceaccount-token-controller,persistentvolumeclaim-protection-controller,job-controller,disruption-controller"

// nodeControllers are those of a control plane with a real node: all but
// the node IPAM controller (the bridge CNI hands out pod addresses itself).
const nodeControllers = "*,-node-ipam-controller"

// Start starts etcd and kube-apiserver on loopback, waits until the API
// server is ready and installs the runtime's admission policy
// (deploy/admission), so every runtime in a test runs under it. Both
// servers stop when the test ends.
func Start(t testing.TB) *ControlPlane {
	t.Helper()
	return StartWith(t, Options{})
}

// StartWith starts a control plane with opts. A server that exits at once
// (another process took its free port between the check and the start)
// makes the whole control plane start again on new ports, up to three
// times.
func StartWith(t testing.TB, opts Options) *ControlPlane {
	t.Helper()
	var errs []string
	for attempt := 1; attempt <= 3; attempt++ {
		cp, err := start(t, opts)
		if err == nil {
			return cp
		}
		errs = append(errs, err.Error())
	}
	t.Fatalf("control plane did not start in 3 attempts: %s", strings.Join(errs, "; "))
	return nil
}

func start(t testing.TB, opts Options) (*ControlPlane, error) {
	t.Helper()
	dir, err := os.MkdirTemp(t.TempDir(), "cp-")
	if err != nil {
		return nil, err
	}
	etcdClient, etcdPeer, apiPort := freePort(t), freePort(t), freePort(t)
	etcd := run(t, dir, "etcd", Bin(t, "etcd"),
		"--data-dir", filepath.Join(dir, "etcd"),
		"--listen-client-urls", "http://127.0.0.1:"+strconv.Itoa(etcdClient),
		"--advertise-client-urls", "http://127.0.0.1:"+strconv.Itoa(etcdClient),
		"--listen-peer-urls", "http://127.0.0.1:"+strconv.Itoa(etcdPeer),
		"--initial-advertise-peer-urls", "http://127.0.0.1:"+strconv.Itoa(etcdPeer),
		"--initial-cluster", "default=http://127.0.0.1:"+strconv.Itoa(etcdPeer))
	cp := &ControlPlane{Token: randomHex(t), dir: dir, users: map[string]string{}}
	keyFile := filepath.Join(dir, "sa.key")
	writeKey(t, keyFile)
	tokens := filepath.Join(dir, "tokens.csv")
	lines := cp.Token + ",admin,admin,system:masters\n"
	address, serviceCIDR, authz := "127.0.0.1", "10.96.0.0/16", "RBAC"
	// Loopback cannot back the kubernetes Service; the stand-in's tests
	// do not need it.
	reconciler := "none"
	if n := opts.Node; n != nil {
		address, serviceCIDR, authz, reconciler = n.Address, n.ServiceCIDR, "Node,RBAC", "lease"
		for _, u := range n.Users {
			tok := randomHex(t)
			cp.users[u.Name] = tok
			lines += fmt.Sprintf("%s,%s,%s,\"%s\"\n", tok, u.Name, u.Name, strings.Join(u.Groups, ","))
		}
	}
	if err := os.WriteFile(tokens, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	api := run(t, dir, "kube-apiserver", Bin(t, "kube-apiserver"),
		"--etcd-servers", "http://127.0.0.1:"+strconv.Itoa(etcdClient),
		"--bind-address", address, "--advertise-address", address,
		"--secure-port", strconv.Itoa(apiPort), "--cert-dir", filepath.Join(dir, "certs"),
		"--token-auth-file", tokens, "--authorization-mode", authz,
		"--service-account-issuer", "https://kubernetes.default.svc",
		"--service-account-key-file", keyFile, "--service-account-signing-key-file", keyFile,
		"--service-cluster-ip-range", serviceCIDR, "--allow-privileged",
		"--endpoint-reconciler-type", reconciler)
	cp.URL = "https://" + net.JoinHostPort(address, strconv.Itoa(apiPort))
	procs := []*process{etcd, api}
	stopAll := func() {
		for i := len(procs) - 1; i >= 0; i-- {
			procs[i].stop()
		}
	}
	if err := cp.waitReady(t, etcd, api); err != nil {
		stopAll()
		return nil, err
	}
	if !opts.WithoutRuntimePolicy {
		if err := cp.ServerSideApply(t, "", admission.RuntimePolicy(), false); err != nil {
			stopAll()
			return nil, fmt.Errorf("install the runtime's admission policy: %w", err)
		}
	}
	if opts.ControllerManager || opts.Node != nil {
		set, ownIdentities := controllers, "false"
		if opts.Node != nil {
			// Every controller, each under its own identity, as in a cluster.
			set, ownIdentities = nodeControllers, "true"
		}
		procs = append(procs, run(t, dir, "kube-controller-manager", Bin(t, "kube-controller-manager"),
			"--kubeconfig", cp.Kubeconfig(t), "--controllers", set,
			"--leader-elect=false", "--secure-port=0",
			"--service-account-private-key-file", keyFile,
			"--root-ca-file", filepath.Join(dir, "certs", "apiserver.crt"),
			"--use-service-account-credentials="+ownIdentities,
			"--concurrent-statefulset-syncs=5", "--min-resync-period=1m"))
	}
	if opts.Node != nil {
		procs = append(procs, run(t, dir, "kube-scheduler", Bin(t, "kube-scheduler"),
			"--kubeconfig", cp.Kubeconfig(t), "--leader-elect=false", "--secure-port=0"))
	}
	if len(procs) > 2 {
		time.Sleep(300 * time.Millisecond)
	}
	for _, p := range procs[2:] {
		if p.exited() {
			stopAll()
			return nil, fmt.Errorf("%s exited at once: %s", p.name, p.tail())
		}
	}
	return cp, nil
}

// KubeconfigFor writes a kubeconfig file with the token of one of
// Options.Node's users and returns its path.
func (cp *ControlPlane) KubeconfigFor(t testing.TB, user string) string {
	t.Helper()
	tok, ok := cp.users[user]
	if !ok {
		t.Fatalf("the control plane has no user %q", user)
	}
	return cp.writeKubeconfig(t, "kubeconfig-"+strings.NewReplacer(":", "-").Replace(user), tok)
}

// Config is a client config with the admin token.
func (cp *ControlPlane) Config() *rest.Config {
	return &rest.Config{Host: cp.URL, BearerToken: cp.Token, TLSClientConfig: rest.TLSClientConfig{Insecure: true}, QPS: 100, Burst: 200}
}

// Client is a clientset with the admin token.
func (cp *ControlPlane) Client(t testing.TB) *kubernetes.Clientset {
	t.Helper()
	c, err := kubernetes.NewForConfig(cp.Config())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// waitReady waits until the API server answers ready, or one of the
// processes it needs has exited.
func (cp *ControlPlane) waitReady(t testing.TB, procs ...*process) error {
	t.Helper()
	c := cp.Client(t)
	deadline := time.Now().Add(2 * time.Minute)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		body, err := c.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		cancel()
		if err == nil && string(body) == "ok" {
			return nil
		}
		for _, p := range procs {
			if p.exited() {
				return fmt.Errorf("%s exited: %s", p.name, p.tail())
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("kube-apiserver not ready after 2m: %v %s", err, body)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// process is a server a test bed started; it is stopped when the test
// ends, or by stop when its control plane did not start.
type process struct {
	name string
	log  string
	pgid int
	done chan struct{}
}

// stop ends the process now.
func (p *process) stop() { stop(p.pgid, p.done, 10*time.Second) }

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// tail is the end of the process's log.
func (p *process) tail() string {
	data, _ := os.ReadFile(p.log)
	if len(data) > 3000 {
		data = data[len(data)-3000:]
	}
	return string(data)
}

// Process is a server a test started with Run.
type Process struct{ p *process }

// Run starts bin with args as a server of the test, its output in
// dir/<name>.log, in a process group of its own; it is stopped (SIGTERM,
// then SIGKILL after 10 s) when the test ends, and the end of its log is
// shown when the test failed.
func Run(t testing.TB, dir, name, bin string, args ...string) *Process {
	t.Helper()
	return &Process{run(t, dir, name, bin, args...)}
}

// Exited reports that the process has ended.
func (p *Process) Exited() bool { return p.p.exited() }

// Tail is the end of the process's log.
func (p *Process) Tail() string { return p.p.tail() }

// Stop ends the process now.
func (p *Process) Stop() { p.p.stop() }

func run(t testing.TB, dir, name, bin string, args ...string) *process {
	t.Helper()
	log, err := os.Create(filepath.Join(dir, name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = log, log
	// Pdeathsig: a test process that dies without its cleanups (a panic)
	// takes its servers with it; a CoreDNS or API server left running
	// would answer the next test's queries with this one's objects. The
	// kernel sends it when the thread that started the server ends, so no
	// code in a test process may let Go end a thread (a goroutine that
	// exits while locked to its thread: see kubenode's DialContext).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	p := &process{name: name, log: log.Name(), pgid: cmd.Process.Pid, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		stop(cmd.Process.Pid, p.done, 10*time.Second)
		log.Close()
		if t.Failed() {
			t.Logf("%s log (tail):\n%s", name, p.tail())
		}
	})
	return p
}

// stop sends SIGTERM to the process group pgid and SIGKILL when it has
// not exited (done closed) within grace.
func stop(pgid int, done <-chan struct{}, grace time.Duration) {
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(grace):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-done
	}
}

// PostgresCredential returns the credential PostgreSQL processes must run
// with and gives dir to it: the postgres user when the tests run as root
// (PostgreSQL refuses to run as root), nil otherwise.
func PostgresCredential(t testing.TB, dir string) *syscall.Credential {
	t.Helper()
	if os.Geteuid() != 0 {
		return nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		t.Fatalf("running as root needs a postgres user (apt-get install postgresql-15): %v", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.Chown(dir, uid, gid); err != nil {
		t.Fatal(err)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
}

// FreePort returns a TCP port free on 127.0.0.1 now.
func FreePort(t testing.TB) int { return freePort(t) }

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func randomHex(t testing.TB) string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

func writeKey(t testing.TB, path string) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	data := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// Namespace creates a namespace for a test, with the default
// ServiceAccount the controller-manager would otherwise create, and
// returns its name: name itself, or on a shared control plane (Shared)
// where another test made name already, name-2, name-3...: use the name
// it returns.
func (cp *ControlPlane) Namespace(t testing.TB, name string) string {
	t.Helper()
	if cp.shared {
		name = cp.freeName(name)
	}
	c := cp.Client(t)
	if _, err := c.CoreV1().Namespaces().Create(context.Background(), namespace(name), createOpts); err != nil {
		t.Fatal(fmt.Errorf("create namespace %s: %w", name, err))
	}
	// With a controller-manager, its ServiceAccount controller may have
	// made it already.
	if _, err := c.CoreV1().ServiceAccounts(name).Create(context.Background(), serviceAccount("default"), createOpts); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(fmt.Errorf("create the default ServiceAccount of %s: %w", name, err))
	}
	return name
}

// freeName is name, or name-N for the lowest N from 2 up, whichever no
// test of the package has taken.
func (cp *ControlPlane) freeName(name string) string {
	for i := 1; ; i++ {
		n := name
		if i > 1 {
			n = fmt.Sprintf("%s-%d", name, i)
		}
		if _, taken := cp.names.LoadOrStore(n, true); !taken {
			return n
		}
	}
}

// Kubeconfig writes a kubeconfig file for the control plane with the
// admin token and returns its path.
func (cp *ControlPlane) Kubeconfig(t testing.TB) string {
	t.Helper()
	return cp.writeKubeconfig(t, "kubeconfig", cp.Token)
}

func (cp *ControlPlane) writeKubeconfig(t testing.TB, name, token string) string {
	t.Helper()
	p := filepath.Join(cp.dir, name)
	data := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: testbed
  cluster: {server: %q, insecure-skip-tls-verify: true}
users:
- name: user
  user: {token: %q}
contexts:
- name: testbed
  context: {cluster: testbed, user: user}
current-context: testbed
`, cp.URL, token)
	if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// ServerSideApply applies a YAML stream of objects with server-side apply,
// into namespace when an object names none. With dryRun the API server
// validates and admits everything (schemas, defaults, immutable fields)
// but stores nothing.
func (cp *ControlPlane) ServerSideApply(t testing.TB, namespace string, stream []byte, dryRun bool) error {
	t.Helper()
	return cp.apply(t, namespace, false, stream, dryRun)
}

// ApplyInto applies a YAML stream into namespace, whatever namespace the
// objects name, as Flux's targetNamespace does.
func (cp *ControlPlane) ApplyInto(t testing.TB, namespace string, stream []byte) error {
	t.Helper()
	return cp.apply(t, namespace, true, stream, false)
}

func (cp *ControlPlane) apply(t testing.TB, namespace string, override bool, stream []byte, dryRun bool) error {
	dyn, err := dynamic.NewForConfig(cp.Config())
	if err != nil {
		return err
	}
	groups, err := restmapper.GetAPIGroupResources(cp.Client(t).Discovery())
	if err != nil {
		return err
	}
	mapper := restmapper.NewDiscoveryRESTMapper(groups)
	for _, doc := range strings.Split(string(stream), "\n---\n") {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		var obj unstructured.Unstructured
		if err := yaml.Unmarshal([]byte(doc), &obj.Object); err != nil {
			return fmt.Errorf("decode: %w", err)
		}
		gvk := obj.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return fmt.Errorf("%s: %w", gvk, err)
		}
		ri := dyn.Resource(m.Resource)
		var res dynamic.ResourceInterface = ri
		if m.Scope.Name() == meta.RESTScopeNameNamespace {
			ns := obj.GetNamespace()
			if ns == "" || override {
				ns = namespace
			}
			obj.SetNamespace(ns)
			res = ri.Namespace(ns)
		}
		opts := metav1.ApplyOptions{FieldManager: "cairn-test", Force: true}
		if dryRun {
			opts.DryRun = []string{metav1.DryRunAll}
		}
		if _, err := res.Apply(context.Background(), obj.GetName(), &obj, opts); err != nil {
			return fmt.Errorf("apply %s %s: %w", gvk.Kind, obj.GetName(), err)
		}
	}
	return nil
}

// PostgresBin is the folder of the PostgreSQL programs a test runs:
// $CAIRN_PG_BIN when it is set (the Makefile runs the tests marked
// PerMajor once more with PostgreSQL 13's; the others skip there), else
// PostgreSQL 15's. It fails the test when the folder has no postgres,
// and skips it with -short (a PostgreSQL member is of the integration
// tier).
func PostgresBin(t testing.TB) string {
	t.Helper()
	Require(t, TierIntegration, "PostgreSQL")
	skipUnlessPerMajor(t)
	if bin := os.Getenv("CAIRN_PG_BIN"); bin != "" {
		return checkPostgresBin(t, bin, "set by $CAIRN_PG_BIN")
	}
	return PostgresBinFor(t, 15)
}

// PostgresBinFor is the folder of PostgreSQL major's programs, side by
// side with the others' (LookupPostgresBin), failing the test when the
// bed has none.
func PostgresBinFor(t testing.TB, major int) string {
	t.Helper()
	Require(t, TierIntegration, fmt.Sprintf("PostgreSQL %d", major))
	skipUnlessPerMajor(t)
	bin, err := LookupPostgresBin(major)
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// LookupPostgresBin finds PostgreSQL major's programs: $CAIRN_PG<major>_BIN,
// else Debian's folder for 15 (apt-get install postgresql-15) and the
// repo's .cache/pg13/bin for 13 (unpacked from Debian 11's packages by
// .ci/fetch-pg13).
func LookupPostgresBin(major int) (string, error) {
	env := fmt.Sprintf("CAIRN_PG%d_BIN", major)
	bin, hint := os.Getenv(env), "set by $"+env
	switch {
	case bin != "":
	case major == 15:
		bin, hint = "/usr/lib/postgresql/15/bin", "apt-get install postgresql-15"
	case major == 13:
		_, file, _, _ := runtime.Caller(0)
		bin, hint = filepath.Join(filepath.Dir(file), "..", ".cache", "pg13", "bin"), "run .ci/fetch-pg13"
	default:
		return "", fmt.Errorf("the test bed has no PostgreSQL %d: set $%s", major, env)
	}
	if _, err := os.Stat(filepath.Join(bin, "postgres")); err != nil {
		return "", fmt.Errorf("no PostgreSQL %d in %s (%s): %w", major, bin, hint, err)
	}
	return bin, nil
}

func checkPostgresBin(t testing.TB, bin, hint string) string {
	t.Helper()
	if _, err := os.Stat(filepath.Join(bin, "postgres")); err != nil {
		t.Fatalf("no PostgreSQL in %s (%s): %v", bin, hint, err)
	}
	return bin
}

// InstallCRD creates the CustomResourceDefinition in the repo's
// .cache/crds/<file> (`make testbin-crds` fetches them) and waits until
// the API server serves its kind, so objects of it can be applied.
func (cp *ControlPlane) InstallCRD(t testing.TB, file string) {
	t.Helper()
	_, self, _, _ := runtime.Caller(0)
	p := filepath.Join(filepath.Dir(self), "..", ".cache", "crds", file)
	stream, err := os.ReadFile(p)
	if err != nil {
		Missing(t, err, "make testbin-crds")
	}
	var crd struct {
		Spec struct {
			Group string `json:"group"`
			Names struct {
				Kind string `json:"kind"`
			} `json:"names"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(stream, &crd); err != nil || crd.Spec.Group == "" || crd.Spec.Names.Kind == "" {
		t.Fatalf("%s is no CustomResourceDefinition: %v", p, err)
	}
	if err := cp.ServerSideApply(t, "", stream, false); err != nil {
		t.Fatal(err)
	}
	Eventually(t, "the API server serves "+crd.Spec.Names.Kind, func() error {
		groups, err := restmapper.GetAPIGroupResources(cp.Client(t).Discovery())
		if err != nil {
			return err
		}
		for _, g := range groups {
			if g.Group.Name != crd.Spec.Group {
				continue
			}
			for _, rs := range g.VersionedResources {
				for _, r := range rs {
					if r.Kind == crd.Spec.Names.Kind {
						return nil
					}
				}
			}
		}
		return fmt.Errorf("%s/%s not served yet", crd.Spec.Group, crd.Spec.Names.Kind)
	})
}
