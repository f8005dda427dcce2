package argobed

import (
	"context"
	"strconv"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cairn-dev/cairn/testbed"
)

// StartApplicationSets starts argocd-applicationset-controller beside
// the application controller; it stops when the test ends.
func (a *ArgoCD) StartApplicationSets(t testing.TB) {
	t.Helper()
	metrics, probe := testbed.FreePort(t), testbed.FreePort(t)
	p := a.run(t, "argocd-applicationset-controller", a.bin, "--namespace", Namespace,
		"--argocd-repo-server", a.repo, "--repo-server-plaintext",
		"--metrics-addr", "127.0.0.1:"+strconv.Itoa(metrics), "--probe-addr", "127.0.0.1:"+strconv.Itoa(probe),
		"--webhook-addr", "127.0.0.1:"+strconv.Itoa(testbed.FreePort(t)),
		"--enable-leader-election=false", "--loglevel", "info", "--logformat", "text")
	// It registers no health check (its probe endpoints answer 404):
	// its metrics endpoint answering says the manager runs.
	waitOK(t, p, "http://127.0.0.1:"+strconv.Itoa(metrics)+"/metrics")
}

// ApplicationSet makes the ApplicationSet of examples/argocd/
// applicationset.yaml as a person copies it: both repoURLs (the
// generator's and the template's) set to url and the destination
// namespace to targetNamespace, everything else as the example has it
// but the generator's requeue.
func (a *ArgoCD) ApplicationSet(t testing.TB, url, targetNamespace string) {
	t.Helper()
	u := example(t, "applicationset.yaml")
	if u.GetNamespace() != Namespace {
		t.Fatalf("examples/argocd/applicationset.yaml: metadata.namespace %q, want %q", u.GetNamespace(), Namespace)
	}
	gens, _, _ := unstructured.NestedSlice(u.Object, "spec", "generators")
	if len(gens) != 1 {
		t.Fatalf("examples/argocd/applicationset.yaml: %d generators, want the one git generator", len(gens))
	}
	gen, _ := gens[0].(map[string]any)
	if err := unstructured.SetNestedField(gen, url, "git", "repoURL"); err != nil {
		t.Fatal(err)
	}
	// A short requeue stands for the webhook a production setup uses to
	// see a push at once (the generator's default is 3 minutes).
	if err := unstructured.SetNestedField(gen, int64(3), "git", "requeueAfterSeconds"); err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedSlice(u.Object, gens, "spec", "generators"); err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct {
		value string
		path  []string
	}{
		{url, []string{"spec", "template", "spec", "source", "repoURL"}},
		{targetNamespace, []string{"spec", "template", "spec", "destination", "namespace"}},
	} {
		if _, found, _ := unstructured.NestedString(u.Object, f.path...); !found {
			t.Fatalf("examples/argocd/applicationset.yaml sets no %s", strings.Join(f.path, "."))
		}
		if err := unstructured.SetNestedField(u.Object, f.value, f.path...); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.dyn.Resource(applicationSets).Namespace(Namespace).Create(context.Background(), u, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}
