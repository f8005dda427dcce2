package reconcile

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"

	"github.com/cairn-dev/cairn/renderer"
)

// manifests are the objects of the built kustomization, each decoded
// strictly (an unknown field fails).
type manifests struct {
	stream   []byte
	sa       corev1.ServiceAccount
	deploy   appsv1.Deployment
	svc      corev1.Service
	pdb      policyv1.PodDisruptionBudget
	roles    map[string]rbacv1.Role
	bindings []rbacv1.RoleBinding
}

func load(t *testing.T) *manifests {
	t.Helper()
	files, err := filepath.Glob("*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tree := renderer.Tree{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		tree["deploy/"+f] = data
	}
	stream, err := renderer.Build(tree, "deploy")
	if err != nil {
		t.Fatal(err)
	}
	m := &manifests{stream: stream, roles: map[string]rbacv1.Role{}}
	var kinds []string
	for _, doc := range bytes.Split(stream, []byte("\n---\n")) {
		var head struct {
			Kind     string
			Metadata struct{ Name, Namespace string }
		}
		if err := yaml.Unmarshal(doc, &head); err != nil {
			t.Fatal(err)
		}
		kinds = append(kinds, head.Kind)
		if head.Metadata.Namespace != "cairn" {
			t.Errorf("%s %s in namespace %q, want the kustomization's, cairn", head.Kind, head.Metadata.Name, head.Metadata.Namespace)
		}
		var into any
		switch head.Kind {
		case "ServiceAccount":
			into = &m.sa
		case "Deployment":
			into = &m.deploy
		case "Service":
			into = &m.svc
		case "PodDisruptionBudget":
			into = &m.pdb
		case "Role":
			var r rbacv1.Role
			strict(t, doc, &r)
			m.roles[r.Name] = r
			continue
		case "RoleBinding":
			var b rbacv1.RoleBinding
			strict(t, doc, &b)
			m.bindings = append(m.bindings, b)
			continue
		default:
			t.Fatalf("a %s in the manifests", head.Kind)
		}
		strict(t, doc, into)
	}
	slices.Sort(kinds)
	if want := []string{"Deployment", "PodDisruptionBudget", "Role", "Role", "RoleBinding", "RoleBinding", "Service", "ServiceAccount"}; !slices.Equal(kinds, want) {
		t.Fatalf("kinds %v, want %v", kinds, want)
	}
	return m
}

func strict(t *testing.T, doc []byte, into any) {
	t.Helper()
	if err := yaml.UnmarshalStrict(doc, into); err != nil {
		t.Fatalf("%v in:\n%s", err, doc)
	}
}

func (m *manifests) container(t *testing.T) corev1.Container {
	t.Helper()
	cs := m.deploy.Spec.Template.Spec.Containers
	if len(cs) != 1 {
		t.Fatalf("%d containers, want one", len(cs))
	}
	return cs[0]
}

// flag is the value of --name=value in args; "" and false when absent.
func flag(args []string, name string) (string, bool) {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v, true
		}
		if a == "--"+name {
			return "", true
		}
	}
	return "", false
}

// port is the container port named name.
func port(c corev1.Container, name string) int32 {
	for _, p := range c.Ports {
		if p.Name == name {
			return p.ContainerPort
		}
	}
	return 0
}

// The Deployment runs sharded replicas under the restricted rules, its
// probes where --metrics-addr serves them, and the other objects point at
// what it runs.
func TestTheDeploymentIsShardedAndRestricted(t *testing.T) {
	m := load(t)
	spec := m.deploy.Spec.Template.Spec
	c := m.container(t)
	if r := m.deploy.Spec.Replicas; r == nil || *r < 2 {
		t.Errorf("replicas %v, want several", r)
	}
	if v, _ := flag(c.Args, "shards"); atoi(v) < 2 {
		t.Errorf("--shards %q: want sharding", v)
	}
	for _, f := range []string{"in-cluster", "repo", "webhook-secret-file", "lease-duration"} {
		if _, ok := flag(c.Args, f); !ok {
			t.Errorf("no --%s", f)
		}
	}
	var podName bool
	for _, e := range c.Env {
		podName = podName || e.Name == "POD_NAME" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.name"
	}
	if !podName {
		t.Error("POD_NAME is not the pod's name from the downward API: the replica IDs would not be unique")
	}

	psc, sc := spec.SecurityContext, c.SecurityContext
	switch {
	case psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot, psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault:
		t.Errorf("pod security context %+v: want runAsNonRoot and the RuntimeDefault seccomp profile", psc)
	case sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation, sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem,
		sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}):
		t.Errorf("container security context %+v: want no privilege escalation, a read-only root and every capability dropped", sc)
	}
	var tmp bool
	for _, vm := range c.VolumeMounts {
		tmp = tmp || vm.MountPath == "/tmp"
	}
	if !tmp {
		t.Error("nothing writable at /tmp, where the clone lives, under a read-only root")
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
		t.Errorf("resources %+v: want CPU and memory requests and a memory limit", c.Resources)
	}

	metrics, _ := flag(c.Args, "metrics-addr")
	webhook, _ := flag(c.Args, "webhook-addr")
	if ":"+strconv.Itoa(int(port(c, "metrics"))) != metrics || ":"+strconv.Itoa(int(port(c, "webhook"))) != webhook {
		t.Errorf("ports %+v, for --metrics-addr %s and --webhook-addr %s", c.Ports, metrics, webhook)
	}
	for _, p := range []struct {
		name  string
		probe *corev1.Probe
		path  string
	}{{"startup", c.StartupProbe, "/healthz"}, {"liveness", c.LivenessProbe, "/healthz"}, {"readiness", c.ReadinessProbe, "/readyz"}} {
		if p.probe == nil || p.probe.HTTPGet == nil || p.probe.HTTPGet.Path != p.path || p.probe.HTTPGet.Port.String() != "metrics" {
			t.Errorf("%s probe %+v: want GET %s on the metrics port", p.name, p.probe, p.path)
		}
	}

	labels := m.deploy.Spec.Template.Labels
	selects := func(sel map[string]string) bool {
		for k, v := range sel {
			if labels[k] != v {
				return false
			}
		}
		return len(sel) > 0
	}
	if !selects(m.deploy.Spec.Selector.MatchLabels) || !selects(m.svc.Spec.Selector) || !selects(m.pdb.Spec.Selector.MatchLabels) {
		t.Errorf("the Deployment's, Service's and PDB's selectors do not all select the pods %v", labels)
	}
	if len(m.svc.Spec.Ports) != 1 || m.svc.Spec.Ports[0].TargetPort.String() != "webhook" {
		t.Errorf("service ports %+v: want the webhook's", m.svc.Spec.Ports)
	}
	if m.pdb.Spec.MaxUnavailable == nil || m.pdb.Spec.MaxUnavailable.IntValue() != 1 {
		t.Errorf("PDB %+v: want one replica evicted at a time", m.pdb.Spec)
	}
	if spec.ServiceAccountName != m.sa.Name {
		t.Errorf("the pods run as %q, the ServiceAccount is %q", spec.ServiceAccountName, m.sa.Name)
	}
}

// The Roles grant reads, and writes of Leases only; each is bound to the
// ServiceAccount.
func TestTheRolesAreLeastPrivilege(t *testing.T) {
	m := load(t)
	want := map[string][]string{
		"coordination.k8s.io/leases": {"create", "get", "list", "update"},
		"apps/statefulsets":          {"get"},
		"apps/deployments":           {"get"},
		"/pods":                      {"list"},
		"/persistentvolumeclaims":    {"get"},
		"/configmaps":                {"get"},
		"batch/jobs":                 {"list"},
	}
	got := map[string][]string{}
	for _, r := range m.roles {
		for _, rule := range r.Rules {
			if len(rule.ResourceNames) > 0 || len(rule.NonResourceURLs) > 0 {
				t.Errorf("role %s: rule %+v", r.Name, rule)
			}
			for _, g := range rule.APIGroups {
				for _, res := range rule.Resources {
					got[g+"/"+res] = append(got[g+"/"+res], rule.Verbs...)
				}
			}
		}
	}
	for k := range got {
		slices.Sort(got[k])
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("the Roles grant %v, want exactly %v", got, want)
	}
	bound := map[string]bool{}
	for _, b := range m.bindings {
		if len(b.Subjects) != 1 || b.Subjects[0].Kind != "ServiceAccount" || b.Subjects[0].Name != m.sa.Name || b.RoleRef.Kind != "Role" {
			t.Errorf("binding %s: %+v to %+v", b.Name, b.Subjects, b.RoleRef)
		}
		bound[b.RoleRef.Name] = true
	}
	for name := range m.roles {
		if !bound[name] {
			t.Errorf("role %s is bound to nobody", name)
		}
	}
}

// Every flag the Deployment passes is one cairn reconcile has: the
// binary's own help says so.
func TestTheDeploymentsFlagsAreCairnReconciles(t *testing.T) {
	m := load(t)
	c := m.container(t)
	if c.Args[0] != "reconcile" {
		t.Fatalf("args %v: want cairn reconcile", c.Args)
	}
	cmd := exec.Command("go", "run", "../../cmd/cairn", "reconcile", "--help")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("cairn reconcile --help: %v\n%s", err, out)
	}
	for _, a := range c.Args[1:] {
		name, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !strings.HasPrefix(a, "--") || !bytes.Contains(out, []byte("--"+name+" ")) {
			t.Errorf("%s: not a flag of cairn reconcile", a)
		}
	}
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}
