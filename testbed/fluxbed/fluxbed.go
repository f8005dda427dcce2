package fluxbed

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/cairn-dev/cairn/testbed"
)

// Namespace is where Flux's objects live, as flux bootstrap makes it.
const Namespace = "flux-system"

// Source is the GitRepository every Kustomization names, as flux
// bootstrap makes it.
const Source = "flux-system"

var (
	gitRepositories = schema.GroupVersionResource{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "gitrepositories"}
	kustomizations  = schema.GroupVersionResource{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Resource: "kustomizations"}
)

// Flux is source-controller and kustomize-controller running against a
// control plane.
type Flux struct {
	cp  *testbed.ControlPlane
	dyn dynamic.Interface
}

// Start installs Flux's CRDs and its namespace into cp and starts both
// controllers; they stop when the test ends.
func Start(t testing.TB, cp *testbed.ControlPlane) *Flux {
	t.Helper()
	testbed.Require(t, testbed.TierE2E, "Flux")
	entries, err := os.ReadDir(crdDir())
	if err != nil {
		testbed.Missing(t, fmt.Errorf("Flux's CRDs: %w", err), "make testbin-node")
	}
	for _, e := range entries {
		if filepath.Ext(e.Name()) == ".yaml" {
			cp.InstallCRD(t, filepath.Join("flux", e.Name()))
		}
	}
	cl := cp.Client(t)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace}}
	if _, err := cl.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	dir := t.TempDir()
	// source-controller stores artifacts in a folder that must exist.
	if err := os.Mkdir(filepath.Join(dir, "artifacts"), 0o700); err != nil {
		t.Fatal(err)
	}
	kubeconfig := "KUBECONFIG=" + cp.Kubeconfig(t)
	storage := net.JoinHostPort("127.0.0.1", strconv.Itoa(testbed.FreePort(t)))
	srcHealth, kusHealth := testbed.FreePort(t), testbed.FreePort(t)
	common := []string{"--enable-leader-election=false", "--events-addr=", "--metrics-addr=127.0.0.1:0", "--log-level=info"}
	src := testbed.Run(t, dir, "source-controller", "env", append([]string{kubeconfig, testbed.Bin(t, "source-controller"),
		"--health-addr=127.0.0.1:" + strconv.Itoa(srcHealth),
		"--storage-path=" + filepath.Join(dir, "artifacts"), "--storage-addr=" + storage, "--storage-adv-addr=" + storage}, common...)...)
	kus := testbed.Run(t, dir, "kustomize-controller", "env", append([]string{kubeconfig, testbed.Bin(t, "kustomize-controller"),
		"--health-addr=127.0.0.1:" + strconv.Itoa(kusHealth)}, common...)...)
	for _, c := range []struct {
		p    *testbed.Process
		port int
	}{{src, srcHealth}, {kus, kusHealth}} {
		waitHealthy(t, c.p, c.port)
	}
	dyn, err := dynamic.NewForConfig(cp.Config())
	if err != nil {
		t.Fatal(err)
	}
	return &Flux{cp: cp, dyn: dyn}
}

func crdDir() string {
	_, self, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(self), "..", "..", ".cache", "crds", "flux")
}

// waitHealthy waits until a controller's readiness endpoint answers.
func waitHealthy(t testing.TB, p *testbed.Process, port int) {
	t.Helper()
	url := "http://127.0.0.1:" + strconv.Itoa(port) + "/readyz"
	deadline := time.Now().Add(time.Minute)
	for {
		if p.Exited() {
			t.Fatalf("a Flux controller exited: %s", p.Tail())
		}
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("a Flux controller is not ready after 1m: %v: %s", err, p.Tail())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// GitRepository makes the flux-system GitRepository, following branch of
// the repository at url with a basic-auth token, polled every interval
// (a test's interval is short: it stands for the webhook receiver a
// production setup uses to reconcile at once).
func (f *Flux) GitRepository(t testing.TB, url, branch, username, token string, interval time.Duration) {
	t.Helper()
	ctx := context.Background()
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: Source + "-auth", Namespace: Namespace},
		StringData: map[string]string{"username": username, "password": token}}
	if _, err := f.cp.Client(t).CoreV1().Secrets(Namespace).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	repo := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
		"metadata": map[string]any{"name": Source, "namespace": Namespace},
		"spec": map[string]any{"url": url, "interval": interval.String(),
			"ref": map[string]any{"branch": branch}, "secretRef": map[string]any{"name": secret.Name}},
	}}
	if _, err := f.dyn.Resource(gitRepositories).Namespace(Namespace).Create(ctx, repo, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// Kustomization makes the Kustomization of one cairn-rendered cluster
// from examples/flux/kustomization.yaml, as a person copies it: its name,
// path and targetNamespace set for the cluster, everything else as the
// example has it.
func (f *Flux) Kustomization(t testing.TB, cluster, targetNamespace string) {
	t.Helper()
	_, self, _, _ := runtime.Caller(0)
	data, err := os.ReadFile(filepath.Join(filepath.Dir(self), "..", "..", "examples", "flux", "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var obj map[string]any
	if err := yaml.Unmarshal(data, &obj); err != nil {
		t.Fatalf("examples/flux/kustomization.yaml: %v", err)
	}
	u := &unstructured.Unstructured{Object: obj}
	u.SetName(cluster)
	for field, value := range map[string]string{"path": "./rendered/" + cluster, "targetNamespace": targetNamespace} {
		if err := unstructured.SetNestedField(u.Object, value, "spec", field); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.dyn.Resource(kustomizations).Namespace(Namespace).Create(context.Background(), u, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// Names are the names of the Kustomizations, sorted.
func (f *Flux) Names(t testing.TB) []string {
	return testbed.Names(t, f.dyn, kustomizations, Namespace)
}

// Applied is what a Kustomization last reported: its Ready condition and
// the revision it last applied.
type Applied struct {
	Ready    bool
	Reason   string
	Message  string
	Revision string
}

// Status reads a Kustomization's status.
func (f *Flux) Status(t testing.TB, name string) Applied {
	t.Helper()
	u, err := f.dyn.Resource(kustomizations).Namespace(Namespace).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var a Applied
	a.Revision, _, _ = unstructured.NestedString(u.Object, "status", "lastAppliedRevision")
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Ready" {
			a.Ready = m["status"] == "True"
			a.Reason, _ = m["reason"].(string)
			a.Message, _ = m["message"].(string)
		}
	}
	return a
}

// WaitApplied waits until Kustomization name is Ready at a revision of
// commit (Flux writes "<branch>@sha1:<commit>").
func (f *Flux) WaitApplied(t testing.TB, name, commit string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		a := f.Status(t, name)
		if a.Ready && hasCommit(a.Revision, commit) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("Kustomization %s not Ready at %s after %s: %+v", name, commit, timeout, a)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

func hasCommit(revision, commit string) bool {
	return commit != "" && len(revision) >= len(commit) && revision[len(revision)-len(commit):] == commit
}

// Drift asks kustomize-controller to reconcile Kustomization name now
// (the annotation `flux reconcile` sets) and returns what that apply of
// the same revision changed in the cluster: the lines of the event
// kustomize-controller records only when its server-side apply changed
// something ("ConfigMap/ns/x configured"). None means the cluster holds
// exactly what Git says, as far as Flux manages it.
func (f *Flux) Drift(t testing.TB, name string, timeout time.Duration) []string {
	t.Helper()
	ctx := context.Background()
	before := map[string]int32{} // event name -> its count before the request
	for _, e := range f.events(t, name) {
		before[e.Name] = e.Count
	}
	token := time.Now().UTC().Format(time.RFC3339Nano)
	patch := []byte(`{"metadata":{"annotations":{"reconcile.fluxcd.io/requestedAt":"` + token + `"}}}`)
	if _, err := f.dyn.Resource(kustomizations).Namespace(Namespace).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(timeout)
	for {
		u, err := f.dyn.Resource(kustomizations).Namespace(Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		handled, _, _ := unstructured.NestedString(u.Object, "status", "lastHandledReconcileAt")
		if handled == token {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Kustomization %s did not reconcile on request within %s (last handled %q)", name, timeout, handled)
		}
		time.Sleep(200 * time.Millisecond)
	}
	var changed []string
	for _, e := range f.events(t, name) {
		if n, seen := before[e.Name]; seen && e.Count <= n {
			continue // recorded before the request
		}
		for line := range strings.Lines(e.Message) {
			line = strings.TrimSpace(line)
			for _, action := range []string{" created", " configured", " deleted"} {
				if strings.HasSuffix(line, action) {
					changed = append(changed, line)
				}
			}
		}
	}
	sort.Strings(changed)
	return changed
}

// events are the Events recorded about Kustomization name.
func (f *Flux) events(t testing.TB, name string) []corev1.Event {
	t.Helper()
	list, err := f.cp.Client(t).CoreV1().Events(Namespace).List(context.Background(), metav1.ListOptions{
		FieldSelector: "involvedObject.kind=Kustomization,involvedObject.name=" + name})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}
