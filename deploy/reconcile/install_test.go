package reconcile

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"

	"github.com/cairn-dev/cairn/renderer"
)

// examples/install is deploy/reconcile and no copy of it: the same
// objects, plus the Namespace (restricted), the observe Role and its
// binding in the clusters' namespace, the Role's rules exactly deploy's,
// deploy/admission's policy and its binding as they are, and the
// Deployment's flags set to a repo and namespace.
func TestTheInstallExampleIsDeployPlusWhatAPersonSets(t *testing.T) {
	base := load(t)
	policy, err := renderer.Build(installTree(t, "", "", ""), "deploy/admission")
	if err != nil {
		t.Fatal(err)
	}
	tree := installTree(t, "", "", "")
	stream, err := renderer.Build(tree, "examples/install")
	if err != nil {
		t.Fatal(err)
	}
	var extra []string
	var deploy appsv1.Deployment
	for _, doc := range bytes.Split(stream, []byte("\n---\n")) {
		var head struct {
			Kind     string
			Metadata struct{ Name, Namespace string }
		}
		if err := yaml.Unmarshal(doc, &head); err != nil {
			t.Fatal(err)
		}
		id := fmt.Sprintf("%s %s/%s", head.Kind, head.Metadata.Namespace, head.Metadata.Name)
		switch {
		case head.Kind == "Deployment":
			strict(t, doc, &deploy)
		case head.Kind == "Namespace":
			var ns corev1.Namespace
			strict(t, doc, &ns)
			if ns.Name != cairnNS || ns.Labels["pod-security.kubernetes.io/enforce"] != "restricted" {
				t.Errorf("%s labels %v: want namespace cairn enforcing restricted", id, ns.Labels)
			}
			extra = append(extra, id)
		case head.Metadata.Namespace == databasesNS && head.Kind == "Role":
			var r rbacv1.Role
			strict(t, doc, &r)
			if want := base.roles["cairn-reconcile-observe"].Rules; fmt.Sprint(r.Rules) != fmt.Sprint(want) {
				t.Errorf("%s rules %v, want deploy/reconcile's %v", id, r.Rules, want)
			}
			extra = append(extra, id)
		case head.Metadata.Namespace == databasesNS && head.Kind == "RoleBinding":
			var b rbacv1.RoleBinding
			strict(t, doc, &b)
			if s := b.Subjects; len(s) != 1 || s[0].Kind != "ServiceAccount" || s[0].Name != base.sa.Name || s[0].Namespace != cairnNS ||
				b.RoleRef.Name != "cairn-reconcile-observe" {
				t.Errorf("%s binds %+v to %+v", id, s, b.RoleRef)
			}
			extra = append(extra, id)
		case strings.HasPrefix(head.Kind, "ValidatingAdmissionPolicy"):
			if !bytes.Contains(policy, doc) {
				t.Errorf("%s differs from deploy/admission's:\n%s", id, doc)
			}
			extra = append(extra, id)
		case !bytes.Contains(base.stream, doc):
			t.Errorf("%s differs from deploy/reconcile's:\n%s", id, doc)
		}
	}
	slices.Sort(extra)
	want := []string{"Namespace /cairn", "Role databases/cairn-reconcile-observe", "RoleBinding databases/cairn-reconcile-observe",
		"ValidatingAdmissionPolicy /cairn-runtime-sets-only-roles", "ValidatingAdmissionPolicyBinding /cairn-runtime-sets-only-roles"}
	if !slices.Equal(extra, want) {
		t.Errorf("beside deploy/reconcile's objects: %v, want %v", extra, want)
	}
	args := deploy.Spec.Template.Spec.Containers[0].Args
	baseArgs := base.container(t).Args
	for name, want := range map[string]string{"repo": "https://github.com/OWNER/gitops.git", "github": "OWNER/gitops", "namespace": databasesNS} {
		if v, _ := flag(args, name); v != want {
			t.Errorf("--%s=%q, want %q", name, v, want)
		}
	}
	if len(args) != len(baseArgs)+1 || !slices.Equal(args[3:len(baseArgs)], baseArgs[3:]) {
		t.Errorf("args %v: want deploy/reconcile's %v with --repo, --github set and --namespace added", args, baseArgs)
	}
}
