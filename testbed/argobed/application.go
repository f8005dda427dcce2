package argobed

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/cairn-dev/cairn/testbed"
)

// Argo CD's status values the tests read.
const (
	Synced    = "Synced"
	OutOfSync = "OutOfSync"
	Healthy   = "Healthy"
)

// example reads a file of examples/argocd.
func example(t testing.TB, file string) *unstructured.Unstructured {
	t.Helper()
	_, self, _, _ := runtime.Caller(0)
	p := filepath.Join(filepath.Dir(self), "..", "..", "examples", "argocd", file)
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var obj map[string]any
	if err := yaml.Unmarshal(data, &obj); err != nil {
		t.Fatalf("examples/argocd/%s: %v", file, err)
	}
	return &unstructured.Unstructured{Object: obj}
}

// Application makes the Application of one cairn-rendered cluster from
// examples/argocd/application.yaml, as a person copies it: its name,
// repoURL, path and destination namespace set for the cluster,
// everything else (sync policy and options) as the example has it.
func (a *ArgoCD) Application(t testing.TB, cluster, url, targetNamespace string) {
	t.Helper()
	u := example(t, "application.yaml")
	if u.GetNamespace() != Namespace {
		t.Fatalf("examples/argocd/application.yaml: metadata.namespace %q, want %q", u.GetNamespace(), Namespace)
	}
	u.SetName(cluster)
	for _, f := range []struct {
		value string
		path  []string
	}{
		{url, []string{"spec", "source", "repoURL"}},
		{"rendered/" + cluster, []string{"spec", "source", "path"}},
		{targetNamespace, []string{"spec", "destination", "namespace"}},
	} {
		if _, found, _ := unstructured.NestedString(u.Object, f.path...); !found {
			t.Fatalf("examples/argocd/application.yaml sets no %s", strings.Join(f.path, "."))
		}
		if err := unstructured.SetNestedField(u.Object, f.value, f.path...); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.dyn.Resource(applications).Namespace(Namespace).Create(context.Background(), u, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// Delete deletes Application name; with no finalizer on it, what it
// synced stays.
func (a *ArgoCD) Delete(t testing.TB, name string) {
	t.Helper()
	if err := a.dyn.Resource(applications).Namespace(Namespace).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		_, err := a.dyn.Resource(applications).Namespace(Namespace).Get(context.Background(), name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("Application %s still there 1m after its deletion: %v", name, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Names are the names of the Applications, sorted.
func (a *ArgoCD) Names(t testing.TB) []string {
	return testbed.Names(t, a.dyn, applications, Namespace)
}

// Status is what an Application last reported, in Argo CD's words.
type Status struct {
	// Sync is status.sync.status (Synced, OutOfSync, Unknown) and
	// Revision the commit it compared against.
	Sync     string
	Revision string
	// Health is status.health.status (Healthy, Progressing, Degraded,
	// Suspended, Missing, Unknown).
	Health string
	// Operation is the last sync operation's phase (Running, Succeeded,
	// Failed, Error), with its message; empty before any.
	Operation        string
	OperationMessage string
	// NotSynced are the managed resources whose status.resources[*].status
	// is not Synced, as "Kind/namespace/name Status".
	NotSynced []string
	// Conditions are the Application's conditions, as "Type: message".
	Conditions []string
	// SyncsOfRevision counts the successful syncs status.history records
	// of Revision: more than one means a sync of the same commit again,
	// self-heal repairing drift.
	SyncsOfRevision int
	ReconciledAt    time.Time
	// Refreshing is set while a refresh asked for is not yet done.
	Refreshing bool
}

func (s Status) String() string {
	return fmt.Sprintf("sync %s at %.12s (synced %d times), health %s, operation %s %q, not synced %v, conditions %v",
		s.Sync, s.Revision, s.SyncsOfRevision, s.Health, s.Operation, s.OperationMessage, s.NotSynced, s.Conditions)
}

// Settled reports that Argo CD says the Application is Synced and
// Healthy, every resource Synced, and no sync is running.
func (s Status) Settled() bool {
	return s.Sync == Synced && s.Health == Healthy && len(s.NotSynced) == 0 && s.Operation != "Running"
}

// Status reads an Application's status.
func (a *ArgoCD) Status(t testing.TB, name string) Status {
	t.Helper()
	u, err := a.dyn.Resource(applications).Namespace(Namespace).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return statusOf(u)
}

func statusOf(u *unstructured.Unstructured) Status {
	str := func(path ...string) string {
		v, _, _ := unstructured.NestedString(u.Object, path...)
		return v
	}
	s := Status{
		Sync:             str("status", "sync", "status"),
		Revision:         str("status", "sync", "revision"),
		Health:           str("status", "health", "status"),
		Operation:        str("status", "operationState", "phase"),
		OperationMessage: str("status", "operationState", "message"),
	}
	_, s.Refreshing = u.GetAnnotations()[refreshAnnotation]
	if at := str("status", "reconciledAt"); at != "" {
		s.ReconciledAt, _ = time.Parse(time.RFC3339, at)
	}
	resources, _, _ := unstructured.NestedSlice(u.Object, "status", "resources")
	for _, r := range resources {
		m, _ := r.(map[string]any)
		if st, _ := m["status"].(string); st != Synced {
			s.NotSynced = append(s.NotSynced, fmt.Sprintf("%v/%v/%v %s", m["kind"], m["namespace"], m["name"], st))
		}
	}
	history, _, _ := unstructured.NestedSlice(u.Object, "status", "history")
	for _, h := range history {
		m, _ := h.(map[string]any)
		if rev, _ := m["revision"].(string); rev != "" && rev == s.Revision {
			s.SyncsOfRevision++
		}
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		s.Conditions = append(s.Conditions, fmt.Sprintf("%v: %v", m["type"], m["message"]))
	}
	return s
}

// refreshAnnotation asks the application controller for a refresh
// (what `argocd app get --refresh` / `--hard-refresh` set); the
// controller removes it once the refresh is done.
const refreshAnnotation = "argocd.argoproj.io/refresh"

// refresh asks for a refresh of Application name ("normal" or "hard")
// and returns when it was asked.
func (a *ArgoCD) refresh(t testing.TB, name, kind string) time.Time {
	t.Helper()
	asked := time.Now()
	patch := []byte(`{"metadata":{"annotations":{"` + refreshAnnotation + `":"` + kind + `"}}}`)
	if _, err := a.dyn.Resource(applications).Namespace(Namespace).Patch(context.Background(), name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	return asked
}

// WaitSynced waits until Application name is Synced at commit (Argo CD
// compared the live objects with that commit's manifests and found them
// equal) and no sync operation runs. It asks for a refresh first, as
// the webhook of a production setup would on a push. Health is not
// waited for: between two steps a cluster may be unhealthy by design
// (Drift, at a settled point, checks it).
func (a *ArgoCD) WaitSynced(t testing.TB, name, commit string, timeout time.Duration) {
	t.Helper()
	a.refresh(t, name, "normal")
	deadline := time.Now().Add(timeout)
	for {
		s := a.Status(t, name)
		if s.Sync == Synced && hasCommit(s.Revision, commit) && s.Operation != "Running" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("Application %s not Synced at %s after %s: %s", name, commit, timeout, s)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// Drift asks Argo CD to compare Application name afresh (a hard refresh:
// manifests generated again from Git, live objects compared anew) and
// returns what that comparison reported. It diffs nothing itself: the
// Application's status.sync, status.resources[*].status and
// status.health are Argo CD's own verdict.
func (a *ArgoCD) Drift(t testing.TB, name string, timeout time.Duration) Status {
	t.Helper()
	// reconciledAt has whole seconds: a comparison that began after the
	// request ends at or after its second.
	asked := a.refresh(t, name, "hard").Truncate(time.Second)
	deadline := time.Now().Add(timeout)
	for {
		s := a.Status(t, name)
		if !s.Refreshing && !s.ReconciledAt.Before(asked) {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("Application %s did not refresh on request within %s: %s", name, timeout, s)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// SelfHeal turns the automated sync's self-heal of Application name on
// or off: off, a hand edit stays until the next sync, so a test can see
// Argo CD report it.
func (a *ArgoCD) SelfHeal(t testing.TB, name string, on bool) {
	t.Helper()
	patch := fmt.Appendf(nil, `{"spec":{"syncPolicy":{"automated":{"selfHeal":%t}}}}`, on)
	if _, err := a.dyn.Resource(applications).Namespace(Namespace).Patch(context.Background(), name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}
