package admission_test

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/cairn-dev/cairn/deploy/admission"
	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/renderer"
	"github.com/cairn-dev/cairn/testbed"
)

const pgSpec = "apiVersion: db.example.com/v1alpha1\nkind: PostgresCluster\nmetadata: {name: db}\nspec: {version: \"15.4\", instances: 2, storage: 1Gi}\n"

// The shipped kustomization builds to the policy file, and the policy
// is what the test beds install.
func TestTheKustomizationIsThePolicy(t *testing.T) {
	tree := renderer.Tree{}
	for _, f := range []string{"kustomization.yaml", "runtime-policy.yaml"} {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		tree["deploy/"+f] = data
	}
	out, err := renderer.Build(tree, "deploy")
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, doc := range bytes.Split(out, []byte("\n---\n")) {
		var head struct {
			Kind     string
			Metadata struct{ Name, Namespace string }
		}
		if err := yaml.Unmarshal(doc, &head); err != nil {
			t.Fatal(err)
		}
		if head.Metadata.Name != admission.PolicyName || head.Metadata.Namespace != "" {
			t.Errorf("%s %s/%s: want %s, cluster-scoped", head.Kind, head.Metadata.Namespace, head.Metadata.Name, admission.PolicyName)
		}
		kinds = append(kinds, head.Kind)
	}
	if strings.Join(kinds, ",") != "ValidatingAdmissionPolicy,ValidatingAdmissionPolicyBinding" {
		t.Errorf("kinds %v", kinds)
	}
}

const etcdSpec = "apiVersion: etcd.database.coreos.com/v1beta2\nkind: EtcdCluster\nmetadata: {name: kv}\nspec: {size: 3, version: \"3.5.17\"}\n"

// A kind's runtime and its members' pods, for the role label cases.
type labelBed struct {
	kind, spec, cluster, container string
	// roles are the role labels the kind's runtime sets; foreign one it
	// does not, refused with a message saying refusal.
	roles            []string
	foreign, refusal string
	ns               string
	runtime, tool    kubernetes.Interface
	member           *corev1.Pod
}

// On a real kube-apiserver, a runtime with its rendered Role may set its
// members' role labels (PostgreSQL: primary, replica, fenced; etcd:
// leader, follower) and nothing else of their pods; the Role alone would
// let it swap a member's image, which is what the policy is for; other
// requesters are not its business.
func TestTheRuntimeChangesOnlyRoleLabels(t *testing.T) {
	ctx := context.Background()
	cp := testbed.StartWith(t, testbed.Options{WithoutRuntimePolicy: true})
	admin := cp.Client(t)
	beds := []*labelBed{
		{kind: "PostgreSQL", spec: pgSpec, cluster: "db", container: "postgres",
			roles: []string{contract.RolePrimary, contract.RoleReplica, contract.RoleFenced}, foreign: contract.RoleLeader, refusal: "primary, replica or fenced on a PostgreSQL member"},
		{kind: "etcd", spec: etcdSpec, cluster: "kv", container: "etcd",
			roles: []string{contract.RoleLeader, contract.RoleFollower}, foreign: contract.RolePrimary, refusal: "leader or follower on an etcd member"},
	}
	for _, b := range beds {
		b.ns = cp.Namespace(t, "apps-"+b.cluster)
		testbed.ApplyRenderedRBAC(t, admin, b.ns, b.spec)
		b.member = renderedMember(t, b.spec)
		for _, name := range []string{b.cluster + "-0", b.cluster + "-1"} {
			p := b.member.DeepCopy()
			p.Name = name
			if _, err := admin.CoreV1().Pods(b.ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		b.runtime = testbed.AsRuntime(t, cp.Config(), b.ns, b.cluster)
		// Without the policy, the Role lets the runtime swap a member's image.
		if err := patch(ctx, b.runtime, b.ns, b.cluster+"-0", b.swap(), true); err != nil {
			t.Fatalf("%s: without the policy the runtime's image swap was refused (%v): the test shows nothing", b.kind, err)
		}
		// Another ServiceAccount allowed to patch pods, the policy lets be.
		b.tool = serviceAccountWithPatch(t, cp, admin, b.ns, "tool")
	}
	if err := cp.ServerSideApply(t, "", admission.RuntimePolicy(), false); err != nil {
		t.Fatal(err)
	}
	for _, b := range beds {
		waitDenied(t, b.runtime, b.ns, b.cluster+"-0", b.swap())
	}
	pol, err := admin.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(ctx, admission.PolicyName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if tc := pol.Status.TypeChecking; tc != nil && len(tc.ExpressionWarnings) > 0 {
		t.Errorf("the API server's type check warns: %+v", tc.ExpressionWarnings)
	}
	for _, b := range beds {
		t.Run(b.kind, func(t *testing.T) { b.cases(t, admin) })
	}
}

// swap is a patch that swaps a member's image.
func (b *labelBed) swap() string {
	return `{"spec":{"containers":[{"name":"` + b.container + `","image":"attacker.example/evil"}]}}`
}

func (b *labelBed) cases(t *testing.T, admin kubernetes.Interface) {
	ctx := context.Background()
	runtime, swap := b.runtime, b.swap()
	cases := []struct {
		name  string
		as    kubernetes.Interface
		patch string
		want  string // "" admitted, else a part of the refusal
	}{
		{"the runtime sets a role under the listed resourceVersion", runtime, `{"metadata":{"resourceVersion":"RV","labels":{"cairn.dev/role":"` + b.roles[1] + `"}}}`, ""},
		{"the runtime removes the role", runtime, `{"metadata":{"labels":{"cairn.dev/role":null}}}`, ""},
		{"the runtime swaps the image", runtime, swap, "not their spec"},
		{"the runtime swaps the image while setting a role", runtime, `{"metadata":{"labels":{"cairn.dev/role":"` + b.roles[0] + `"}},"spec":{"containers":[{"name":"` + b.container + `","image":"x"}]}}`, "not their spec"},
		{"the runtime adds a toleration", runtime, `{"spec":{"tolerations":[{"key":"k","operator":"Exists"}]}}`, "not their spec"},
		{"the runtime sets a role of the other kind", runtime, label(b.foreign), b.refusal},
		{"the runtime sets a role no runtime uses", runtime, label("writer"), b.refusal},
		{"the runtime adds a label", runtime, `{"metadata":{"labels":{"app":"x"}}}`, "no other label"},
		{"the runtime moves the member to another cluster", runtime, `{"metadata":{"labels":{"app.kubernetes.io/instance":"other"}}}`, "no other label"},
		{"the runtime drops the member's name label", runtime, `{"metadata":{"labels":{"app.kubernetes.io/name":null}}}`, "no other label"},
		{"the runtime sets no-promote", runtime, `{"metadata":{"labels":{"` + contract.LabelNoPromote + `":"true"}}}`, "no other label"},
		{"the runtime annotates", runtime, `{"metadata":{"annotations":{"a":"b"}}}`, "not their annotations"},
		{"the runtime adds a finalizer", runtime, `{"metadata":{"finalizers":["example.com/hold"]}}`, "owners or finalizers"},
		{"an administrator swaps the image", admin, swap, ""},
		{"another ServiceAccount swaps the image", b.tool, swap, ""},
	}
	for _, role := range b.roles {
		cases = append(cases, struct {
			name  string
			as    kubernetes.Interface
			patch string
			want  string
		}{"the runtime sets the role " + role, runtime, label(role), ""})
	}
	pod := b.cluster + "-1"
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := c.patch
			if strings.Contains(p, `"RV"`) {
				got, err := admin.CoreV1().Pods(b.ns).Get(ctx, pod, metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				p = strings.Replace(p, `"RV"`, `"`+got.ResourceVersion+`"`, 1)
			}
			err := patch(ctx, c.as, b.ns, pod, p, true)
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.want != "" && err == nil:
				t.Fatal("admitted")
			case c.want != "" && !strings.Contains(err.Error(), c.want):
				t.Fatalf("refused with %v, want %q in it", err, c.want)
			}
		})
	}

	// Not a dry run: the label is there, nothing else moved.
	if err := patch(ctx, runtime, b.ns, pod, label(b.roles[0]), false); err != nil {
		t.Fatal(err)
	}
	got, err := admin.CoreV1().Pods(b.ns).Get(ctx, pod, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Labels[contract.LabelRole] != b.roles[0] || got.Spec.Containers[0].Image != b.member.Spec.Containers[0].Image {
		t.Fatalf("labels %v, image %s", got.Labels, got.Spec.Containers[0].Image)
	}
}

func label(role string) string {
	return `{"metadata":{"labels":{"` + contract.LabelRole + `":"` + role + `"}}}`
}

func patch(ctx context.Context, c kubernetes.Interface, ns, pod, p string, dry bool) error {
	opts := metav1.PatchOptions{FieldManager: contract.FieldManager}
	if dry {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	// The runtime's own patches are JSON merge patches; a change to the
	// spec merges its containers by name.
	kind := types.MergePatchType
	if strings.Contains(p, `"spec"`) {
		kind = types.StrategicMergePatchType
	}
	_, err := c.CoreV1().Pods(ns).Patch(ctx, pod, kind, []byte(p), opts)
	return err
}

// waitDenied waits until the policy, just created, refuses patch p (as a
// dry run): the API server compiles and starts a new policy within a few
// seconds.
func waitDenied(t *testing.T, c kubernetes.Interface, ns, pod, p string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		err := patch(context.Background(), c, ns, pod, p, true)
		if err != nil && strings.Contains(err.Error(), admission.PolicyName) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the policy did not take effect: the last answer was %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// renderedMember is a member pod as the StatefulSet controller makes one
// from the rendered template of spec's create step.
func renderedMember(t *testing.T, spec string) *corev1.Pod {
	t.Helper()
	out := testbed.RenderedCreate(t, spec)
	for _, doc := range bytes.Split(out, []byte("\n---\n")) {
		var sts appsv1.StatefulSet
		if err := yaml.Unmarshal(doc, &sts); err != nil || sts.Kind != "StatefulSet" {
			continue
		}
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: sts.Spec.Template.Labels}, Spec: sts.Spec.Template.Spec}
		// The controller adds a volume per claim template; any source does.
		for _, c := range sts.Spec.VolumeClaimTemplates {
			pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: c.Name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
		}
		return pod
	}
	t.Fatal("no StatefulSet in the create step")
	return nil
}

// serviceAccountWithPatch is a client of ServiceAccount name, which a
// Role lets patch every pod of ns.
func serviceAccountWithPatch(t *testing.T, cp *testbed.ControlPlane, admin kubernetes.Interface, ns, name string) kubernetes.Interface {
	t.Helper()
	return serviceAccountWith(t, cp, admin, ns, name, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "patch"}})
}

// serviceAccountWith is a client of ServiceAccount name, which a Role
// lets do rules in ns.
func serviceAccountWith(t *testing.T, cp *testbed.ControlPlane, admin kubernetes.Interface, ns, name string, rules ...rbacv1.PolicyRule) kubernetes.Interface {
	t.Helper()
	ctx := context.Background()
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}
	if _, err := admin.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: name},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: ns}}}
	if _, err := admin.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg := cp.Config()
	cfg.Impersonate.UserName = "system:serviceaccount:" + ns + ":" + name
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// On a real kube-apiserver, a runtime's Role lets it create any Secret,
// ConfigMap or Lease of the namespace (RBAC cannot narrow create by
// name), which is what the policy is for: with it, a runtime creates and
// updates only its own cluster's, by exact name; another cluster's CA,
// backup endpoint, superuser password, status record or leader Lease is
// refused, and so is a name that merely starts with its cluster's.
// Other requesters are not its business.
func TestTheRuntimeWritesOnlyItsOwnObjects(t *testing.T) {
	ctx := context.Background()
	cp := testbed.StartWith(t, testbed.Options{WithoutRuntimePolicy: true})
	admin := cp.Client(t)
	ns := cp.Namespace(t, "apps")
	testbed.ApplyRenderedRBAC(t, admin, ns, pgSpec)
	runtime := testbed.AsRuntime(t, cp.Config(), ns, "db")
	plant := func(c kubernetes.Interface, kind, name string) error { return create(ctx, c, ns, kind, name, true) }

	// Without the policy, the Role lets the runtime plant another cluster's CA.
	if err := plant(runtime, "secrets", "newdb-ca"); err != nil {
		t.Fatalf("without the policy the runtime's plant was refused (%v): the test shows nothing", err)
	}
	if err := cp.ServerSideApply(t, "", admission.RuntimePolicy(), false); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for err := plant(runtime, "secrets", "newdb-ca"); err == nil || !strings.Contains(err.Error(), admission.PolicyName); err = plant(runtime, "secrets", "newdb-ca") {
		if time.Now().After(deadline) {
			t.Fatalf("the policy did not take effect: the last answer was %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	pol, err := admin.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(ctx, admission.PolicyName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if tc := pol.Status.TypeChecking; tc != nil && len(tc.ExpressionWarnings) > 0 {
		t.Errorf("the API server's type check warns: %+v", tc.ExpressionWarnings)
	}
	tool := serviceAccountWith(t, cp, admin, ns, "tool-runner", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"create"}})

	cases := []struct {
		name       string
		as         kubernetes.Interface
		kind, obj  string
		wantRefuse bool
	}{
		{"the runtime creates its CA", runtime, "secrets", "db-ca", false},
		{"the runtime creates its server certificate", runtime, "secrets", "db-server-tls", false},
		{"the runtime creates its client certificate", runtime, "secrets", "db-superuser-tls", false},
		{"the runtime creates its status", runtime, "configmaps", contract.StatusConfigMap("db"), false},
		{"the runtime creates its members' clean-stop records", runtime, "configmaps", contract.StopsConfigMap("db"), false},
		{"the runtime creates its leader Lease", runtime, "leases", "db-runtime", false},
		{"the runtime plants another cluster's CA", runtime, "secrets", "newdb-ca", true},
		{"the runtime plants another cluster's backup endpoint", runtime, "secrets", "newdb-backup", true},
		{"the runtime plants another cluster's superuser password", runtime, "secrets", "newdb-superuser", true},
		{"the runtime plants its own superuser password", runtime, "secrets", "db-superuser", true},
		{"the runtime plants a cluster's CA whose name starts with its own", runtime, "secrets", "db-x-ca", true},
		{"the runtime plants another cluster's CA record", runtime, "configmaps", contract.StatusConfigMap("newdb"), true},
		{"the runtime plants another cluster's clean stops", runtime, "configmaps", contract.StopsConfigMap("newdb"), true},
		{"the runtime plants another cluster's rendered config", runtime, "configmaps", "newdb-cairn", true},
		{"the runtime takes another cluster's leader Lease", runtime, "leases", "newdb-runtime", true},
		{"an administrator creates a cluster's CA", admin, "secrets", "newdb-ca", false},
		{"another ServiceAccount creates a Secret", tool, "secrets", "newdb-ca", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := plant(c.as, c.kind, c.obj)
			switch {
			case !c.wantRefuse && err != nil:
				t.Fatalf("refused: %v", err)
			case c.wantRefuse && err == nil:
				t.Fatal("admitted")
			case c.wantRefuse && !strings.Contains(err.Error(), "only its own cluster's "+c.kind) || c.wantRefuse && !strings.Contains(err.Error(), c.obj):
				t.Fatalf("refused with %v, want the policy's reason naming %s", err, c.obj)
			}
		})
	}

	// Not a dry run: the runtime's own CA Secret is created, and it may
	// update it (its Role by name, the policy by name).
	if err := create(ctx, runtime, ns, "secrets", "db-ca", false); err != nil {
		t.Fatal(err)
	}
	s, err := runtime.CoreV1().Secrets(ns).Get(ctx, "db-ca", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.Data = map[string][]byte{"k": []byte("v")}
	if _, err := runtime.CoreV1().Secrets(ns).Update(ctx, s, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("the runtime's update of its own CA Secret: %v", err)
	}
}

// create creates an object of kind (secrets, configmaps or leases) named
// name in ns as c, as a dry run when dry is set.
func create(ctx context.Context, c kubernetes.Interface, ns, kind, name string, dry bool) error {
	var opts metav1.CreateOptions
	if dry {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	meta := metav1.ObjectMeta{Name: name, Labels: map[string]string{contract.LabelManagedBy: contract.ManagedByRuntime}}
	var err error
	switch kind {
	case "secrets":
		_, err = c.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: meta}, opts)
	case "configmaps":
		_, err = c.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: meta}, opts)
	case "leases":
		_, err = c.CoordinationV1().Leases(ns).Create(ctx, &coordinationv1.Lease{ObjectMeta: meta}, opts)
	default:
		panic("create: unknown kind " + kind)
	}
	return err
}
