package argobed

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/cairn-dev/cairn/testbed"
)

// Namespace is where Argo CD's objects live, as its install manifests
// put them.
const Namespace = "argocd"

// Project is the AppProject every Application names: the one Argo CD's
// API server makes at its first start (this bed runs no API server, so
// it makes it the same way).
const Project = "default"

// binary is Argo CD's one binary in .cache/bin; it runs the component
// ARGOCD_BINARY_NAME names.
const binary = "argocd"

var (
	applications    = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"}
	appProjects     = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "appprojects"}
	applicationSets = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applicationsets"}
)

// partOf is the label Argo CD's settings informers select its
// ConfigMaps and Secrets by.
var partOf = map[string]string{"app.kubernetes.io/part-of": "argocd"}

// ArgoCD is Redis, argocd-repo-server and argocd-application-controller
// running against a control plane.
type ArgoCD struct {
	cp   *testbed.ControlPlane
	dyn  dynamic.Interface
	dir  string
	env  []string // what every component runs with
	bin  string   // Argo CD's one binary
	repo string   // the repo-server's address
}

// Start installs Argo CD's CRDs, its namespace, settings and default
// project into cp and starts Redis, the repo-server and the application
// controller; they stop when the test ends.
func Start(t testing.TB, cp *testbed.ControlPlane) *ArgoCD {
	t.Helper()
	testbed.Require(t, testbed.TierE2E, "Argo CD")
	bin := testbed.Bin(t, binary)
	// The repo-server runs `kustomize build` for every Application: the
	// pinned CLI of .cache/bin, never whatever a machine has on PATH.
	kustomize := testbed.Bin(t, "kustomize")
	redis, err := exec.LookPath("redis-server")
	if err != nil {
		testbed.Missing(t, fmt.Errorf("Argo CD's cache: %w", err), "apt-get install redis-server")
	}
	installCRDs(t, cp)
	a := &ArgoCD{cp: cp, dir: t.TempDir(), bin: bin}
	a.dyn, err = dynamic.NewForConfig(cp.Config())
	if err != nil {
		t.Fatal(err)
	}
	a.settings(t)

	redisAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(testbed.FreePort(t)))
	_, redisPort, _ := net.SplitHostPort(redisAddr)
	rp := testbed.Run(t, a.dir, "redis", redis, "--bind", "127.0.0.1", "--port", redisPort,
		"--save", "", "--appendonly", "no", "--dir", a.dir)
	waitTCP(t, rp, redisAddr)

	// What every component runs with: the test's kubeconfig as the
	// in-cluster destination, Argo CD's one binary and kustomize on PATH
	// (the repo-server runs `kustomize build`, and git runs `argocd` as
	// its askpass helper), state in the test's folder.
	for _, d := range []string{"tls", "ssh", "gpg", "home", "tmp"} {
		if err := os.Mkdir(filepath.Join(a.dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	a.env = []string{
		"PATH=" + filepath.Dir(bin) + ":" + filepath.Dir(kustomize) + ":" + os.Getenv("PATH"),
		"KUBECONFIG=" + cp.Kubeconfig(t),
		"ARGOCD_FAKE_IN_CLUSTER=true",
		"HOME=" + filepath.Join(a.dir, "home"),
		"TMPDIR=" + filepath.Join(a.dir, "tmp"),
		"ARGOCD_TLS_DATA_PATH=" + filepath.Join(a.dir, "tls"),
		"ARGOCD_SSH_DATA_PATH=" + filepath.Join(a.dir, "ssh"),
		"ARGOCD_GNUPGHOME=" + filepath.Join(a.dir, "gpg"),
		"ARGOCD_GPG_ENABLED=false",
		"ARGOCD_ASK_PASS_SOCK=" + filepath.Join(a.dir, "askpass.sock"),
	}

	repoPort, repoMetrics := testbed.FreePort(t), testbed.FreePort(t)
	a.repo = net.JoinHostPort("127.0.0.1", strconv.Itoa(repoPort))
	repo := a.run(t, "argocd-repo-server", bin, "--address", "127.0.0.1", "--port", strconv.Itoa(repoPort),
		"--metrics-address", "127.0.0.1", "--metrics-port", strconv.Itoa(repoMetrics),
		"--disable-tls", "--redis", redisAddr, "--loglevel", "info", "--logformat", "text",
		// What a branch points at is looked up again after 3 s, not 3
		// minutes: the webhook's stand-in, as the controller's resync.
		"--revision-cache-expiration", "3s")
	waitHealthy(t, repo, repoMetrics)

	ctlMetrics := testbed.FreePort(t)
	ctl := a.run(t, "argocd-application-controller", bin, "--namespace", Namespace,
		"--repo-server", a.repo, "--repo-server-plaintext", "--redis", redisAddr,
		"--metrics-port", strconv.Itoa(ctlMetrics),
		// A short resync stands for the webhook a production setup
		// uses to see a push at once.
		"--app-resync", "5", "--app-resync-jitter", "0",
		"--loglevel", "info", "--logformat", "text")
	waitHealthy(t, ctl, ctlMetrics)
	return a
}

// run starts one component of Argo CD's binary by its name.
func (a *ArgoCD) run(t testing.TB, name, bin string, args ...string) *testbed.Process {
	t.Helper()
	env := append([]string{"ARGOCD_BINARY_NAME=" + name}, a.env...)
	return testbed.Run(t, a.dir, name, "env", append(append(env, bin), args...)...)
}

// crdDir is where `make testbin-argocd` puts Argo CD's CRDs.
func crdDir() string {
	_, self, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(self), "..", "..", ".cache", "crds", "argocd")
}

func installCRDs(t testing.TB, cp *testbed.ControlPlane) {
	t.Helper()
	entries, err := os.ReadDir(crdDir())
	if err != nil {
		testbed.Missing(t, fmt.Errorf("Argo CD's CRDs: %w", err), "make testbin-argocd")
	}
	n := 0
	for _, e := range entries {
		if filepath.Ext(e.Name()) == ".yaml" {
			cp.InstallCRD(t, filepath.Join("argocd", e.Name()))
			n++
		}
	}
	if n == 0 {
		testbed.Missing(t, fmt.Errorf("no CRD in %s", crdDir()), "make testbin-argocd")
	}
}

// settings makes Argo CD's namespace, the settings its components read
// (argocd-cm, argocd-secret, argocd-rbac-cm, labelled as its install
// manifests label them) and the default AppProject.
func (a *ArgoCD) settings(t testing.TB) {
	t.Helper()
	ctx := context.Background()
	cl := a.cp.Client(t)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace}}
	if _, err := cl.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	meta := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: Namespace, Labels: partOf}
	}
	for _, cm := range []*corev1.ConfigMap{
		{ObjectMeta: meta("argocd-cm"), Data: shippedSettings(t)},
		{ObjectMeta: meta("argocd-rbac-cm")},
	} {
		if _, err := cl.CoreV1().ConfigMaps(Namespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	secret := &corev1.Secret{ObjectMeta: meta("argocd-secret"),
		StringData: map[string]string{"server.secretkey": hex.EncodeToString(key)}}
	if _, err := cl.CoreV1().Secrets(Namespace).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	project := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "AppProject",
		"metadata": map[string]any{"name": Project, "namespace": Namespace},
		"spec": map[string]any{
			"sourceRepos":              []any{"*"},
			"destinations":             []any{map[string]any{"server": "*", "namespace": "*"}},
			"clusterResourceWhitelist": []any{map[string]any{"group": "*", "kind": "*"}},
		},
	}}
	if _, err := a.dyn.Resource(appProjects).Namespace(Namespace).Create(ctx, project, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// shippedSettings are the keys of examples/argocd/argocd-cm.yaml, the
// health check cairn ships, which every Argo CD of the bed runs with as a
// person would merge them into argocd-cm.
func shippedSettings(t testing.TB) map[string]string {
	t.Helper()
	u := example(t, "argocd-cm.yaml")
	if u.GetKind() != "ConfigMap" || u.GetName() != "argocd-cm" || u.GetNamespace() != Namespace {
		t.Fatalf("examples/argocd/argocd-cm.yaml is %s %s/%s, want ConfigMap %s/argocd-cm", u.GetKind(), u.GetNamespace(), u.GetName(), Namespace)
	}
	data, ok, err := unstructured.NestedStringMap(u.Object, "data")
	if err != nil || !ok || len(data) == 0 {
		t.Fatalf("examples/argocd/argocd-cm.yaml: no data (%v)", err)
	}
	return data
}

// Repository gives Argo CD the credentials of the git repository at url
// (a repository Secret, as `argocd repo add` makes it).
func (a *ArgoCD) Repository(t testing.TB, url, username, token string) {
	t.Helper()
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "repo-gitops", Namespace: Namespace,
			Labels: map[string]string{"argocd.argoproj.io/secret-type": "repository"}},
		StringData: map[string]string{"type": "git", "url": url, "username": username, "password": token},
	}
	if _, err := a.cp.Client(t).CoreV1().Secrets(Namespace).Create(context.Background(), s, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// waitTCP waits until a server accepts connections at addr.
func waitTCP(t testing.TB, p *testbed.Process, addr string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		if p.Exited() {
			t.Fatalf("%s exited: %s", addr, p.Tail())
		}
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("nothing listens at %s after 1m: %v: %s", addr, err, p.Tail())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitHealthy waits until a component's health endpoint (on its metrics
// port) answers OK.
func waitHealthy(t testing.TB, p *testbed.Process, port int) {
	t.Helper()
	waitOK(t, p, "http://127.0.0.1:"+strconv.Itoa(port)+"/healthz")
}

// waitOK waits until url answers 200 OK while p runs.
func waitOK(t testing.TB, p *testbed.Process, url string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if p.Exited() {
			t.Fatalf("an Argo CD component exited: %s", p.Tail())
		}
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
			err = fmt.Errorf("%s", resp.Status)
		}
		if time.Now().After(deadline) {
			t.Fatalf("an Argo CD component is not healthy after 2m: %v: %s", err, p.Tail())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// hasCommit reports that revision names commit (Argo CD records the
// full commit hash).
func hasCommit(revision, commit string) bool {
	return commit != "" && strings.HasSuffix(revision, commit)
}
