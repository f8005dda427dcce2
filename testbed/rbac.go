package testbed

import (
	"bytes"
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/cairn-dev/cairn/planner"
	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/spec"
	"github.com/cairn-dev/cairn/renderer"
)

// ApplyRenderedRBAC creates the runtime's ServiceAccount, Role and
// RoleBinding as the renderer writes them for the cluster of doc (a spec
// document), so a test runs the runtime under exactly its rendered Role;
// with a namespace in doc (which must be ns), also the node reader's
// ClusterRole and binding, deleted when the test ends.
func ApplyRenderedRBAC(t *testing.T, c kubernetes.Interface, ns, doc string) {
	t.Helper()
	out := RenderedCreate(t, doc)
	ctx := context.Background()
	var err error
	for _, doc := range bytes.Split(out, []byte("\n---\n")) {
		var head struct{ Kind string }
		_ = yaml.Unmarshal(doc, &head)
		switch head.Kind {
		case "ServiceAccount":
			var o corev1.ServiceAccount
			mustYAML(t, doc, &o)
			_, err = c.CoreV1().ServiceAccounts(ns).Create(ctx, &o, metav1.CreateOptions{})
		case "Role":
			var o rbacv1.Role
			mustYAML(t, doc, &o)
			_, err = c.RbacV1().Roles(ns).Create(ctx, &o, metav1.CreateOptions{})
		case "RoleBinding":
			var o rbacv1.RoleBinding
			mustYAML(t, doc, &o)
			_, err = c.RbacV1().RoleBindings(ns).Create(ctx, &o, metav1.CreateOptions{})
		case "ClusterRole":
			var o rbacv1.ClusterRole
			mustYAML(t, doc, &o)
			_, err = c.RbacV1().ClusterRoles().Create(ctx, &o, metav1.CreateOptions{})
			t.Cleanup(func() { _ = c.RbacV1().ClusterRoles().Delete(context.Background(), o.Name, metav1.DeleteOptions{}) })
		case "ClusterRoleBinding":
			var o rbacv1.ClusterRoleBinding
			mustYAML(t, doc, &o)
			_, err = c.RbacV1().ClusterRoleBindings().Create(ctx, &o, metav1.CreateOptions{})
			t.Cleanup(func() {
				_ = c.RbacV1().ClusterRoleBindings().Delete(context.Background(), o.Name, metav1.DeleteOptions{})
			})
		default:
			continue
		}
		if err != nil {
			t.Fatalf("create %s: %v", head.Kind, err)
		}
	}
}

// RenderedCreate is the built YAML stream of the create step of the
// cluster of doc (a spec document), as the renderer writes it.
func RenderedCreate(t *testing.T, doc string) []byte {
	t.Helper()
	cs, err := spec.Decode("spec.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	p := planner.New(planner.Etcd(), planner.Postgres()).PlanCluster(cs[0], nil, nil)
	r, _ := renderer.New(renderer.Options{}, renderer.Etcd(), renderer.Postgres())
	tree, _, err := r.Render(cs[0], p, "create")
	if err != nil {
		t.Fatal(err)
	}
	out, err := renderer.Build(tree, renderer.Root(cs[0].Ref().Name))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func mustYAML(t *testing.T, doc []byte, v any) {
	t.Helper()
	if err := yaml.Unmarshal(doc, v); err != nil {
		t.Fatal(err)
	}
}

// AsRuntime is a client acting as the runtime's ServiceAccount of cluster.
func AsRuntime(t *testing.T, cfg *rest.Config, ns, cluster string) kubernetes.Interface {
	t.Helper()
	cfg.Impersonate.UserName = "system:serviceaccount:" + ns + ":" + contract.Runtime(cluster)
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
