package renderer

import (
	"bytes"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/cairn-dev/cairn/planner/contract"
)

var monitoringOptions = Options{PodMonitor: true, MonitoringLabels: map[string]string{"release": "prometheus"}}

// monitoringCases render each kind created, changed and converged.
var monitoringCases = []string{"etcd-create", "etcd-add-learner", "pg-converged", "pg-upgrade-replica"}

func newMonitoringRenderer(t *testing.T, o Options) *Renderer {
	t.Helper()
	r, err := New(o, Etcd(), Postgres())
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestMonitoringChangesNothingTheClusterSyncs: with PodMonitor, a tree
// gains MonitoringDir and nothing else changes, the entry point
// included; without it, the tree has no MonitoringDir.
func TestMonitoringChangesNothingTheClusterSyncs(t *testing.T) {
	off, on := newMonitoringRenderer(t, Options{}), newMonitoringRenderer(t, monitoringOptions)
	for _, name := range monitoringCases {
		t.Run(name, func(t *testing.T) {
			rc := caseNamed(t, name)
			c, p := loadCase(t, rc)
			plain, plainBuilt, err := off.Render(c, p, rc.step)
			if err != nil {
				t.Fatal(err)
			}
			withMon, monBuilt, err := on.Render(c, p, rc.step)
			if err != nil {
				t.Fatal(err)
			}
			dir := Root(c.Ref().Name) + "/" + MonitoringDir + "/"
			var added []string
			for _, path := range withMon.Paths() {
				if rest, ok := strings.CutPrefix(path, dir); ok {
					added = append(added, rest)
					continue
				}
				if !bytes.Equal(plain[path], withMon[path]) {
					t.Errorf("%s differs with PodMonitor", path)
				}
			}
			if want := []string{"kustomization.yaml", "runtime-metrics-service.yaml", "runtime-podmonitor.yaml"}; !slices.Equal(added, want) {
				t.Errorf("PodMonitor adds %q, want %q", added, want)
			}
			for _, path := range plain.Paths() {
				if strings.HasPrefix(path, dir) {
					t.Errorf("%s is rendered without PodMonitor", path)
				}
				if _, ok := withMon[path]; !ok {
					t.Errorf("%s is missing with PodMonitor", path)
				}
			}
			if !bytes.Equal(plainBuilt.Selected, monBuilt.Selected) || !bytes.Equal(plainBuilt.Base, monBuilt.Base) {
				t.Error("the built entry point or base differs with PodMonitor")
			}
			e, err := ReadEntry(withMon.ReadFile, c.Ref().Name)
			if err != nil || e.Step != rc.step {
				t.Errorf("ReadEntry = step %q, %v; want %q", e.Step, err, rc.step)
			}
		})
	}
}

// TestMonitoringSelectsTheRuntime: the Service and the PodMonitor select
// the rendered runtime Deployment's pods, on its metrics port, in the
// cluster's namespace.
func TestMonitoringSelectsTheRuntime(t *testing.T) {
	r := newMonitoringRenderer(t, monitoringOptions)
	for _, name := range monitoringCases {
		t.Run(name, func(t *testing.T) {
			rc := caseNamed(t, name)
			c, p := loadCase(t, rc)
			tree, built, err := r.Render(c, p, rc.step)
			if err != nil {
				t.Fatal(err)
			}
			var dep appsv1.Deployment
			for _, doc := range bytes.Split(built.Selected, []byte("\n---\n")) {
				var d appsv1.Deployment
				if err := yaml.Unmarshal(doc, &d); err == nil && d.Kind == "Deployment" && d.Name == contract.Runtime(c.Ref().Name) {
					dep = d
				}
			}
			if dep.Name == "" {
				t.Fatal("no runtime Deployment in the build")
			}
			port := corev1.ContainerPort{}
			for _, ctr := range dep.Spec.Template.Spec.Containers {
				for _, p := range ctr.Ports {
					if p.Name == runtimeMetricsPortName {
						port = p
					}
				}
			}
			if port.ContainerPort != runtimeMetricsPort {
				t.Fatalf("the runtime's port %q is %d, want %d", runtimeMetricsPortName, port.ContainerPort, runtimeMetricsPort)
			}
			if !slices.Contains(dep.Spec.Template.Spec.Containers[0].Command, "runtime") {
				t.Errorf("the runtime Deployment runs %q", dep.Spec.Template.Spec.Containers[0].Command)
			}
			out, err := Build(tree, Root(c.Ref().Name)+"/"+MonitoringDir)
			if err != nil {
				t.Fatal(err)
			}
			var svc corev1.Service
			var pm podMonitor
			for _, doc := range bytes.Split(out, []byte("\n---\n")) {
				var meta struct{ Kind string }
				if err := yaml.Unmarshal(doc, &meta); err != nil {
					t.Fatal(err)
				}
				switch meta.Kind {
				case "Service":
					err = yaml.Unmarshal(doc, &svc)
				case "PodMonitor":
					err = yaml.Unmarshal(doc, &pm)
				default:
					t.Errorf("monitoring renders a %s", meta.Kind)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			pods := dep.Spec.Template.Labels
			if !maps.Equal(svc.Spec.Selector, pods) || !maps.Equal(pm.Spec.Selector.MatchLabels, pods) || !maps.Equal(dep.Spec.Selector.MatchLabels, pods) {
				t.Errorf("selectors: Service %v, PodMonitor %v; the runtime's pods are %v", svc.Spec.Selector, pm.Spec.Selector.MatchLabels, pods)
			}
			if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != port.ContainerPort || svc.Spec.Ports[0].TargetPort.StrVal != port.Name || svc.Spec.ClusterIP != "None" {
				t.Errorf("Service ports %+v, clusterIP %q; want headless, port %d to %s", svc.Spec.Ports, svc.Spec.ClusterIP, port.ContainerPort, port.Name)
			}
			if len(pm.Spec.PodMetricsEndpoints) != 1 || pm.Spec.PodMetricsEndpoints[0].Port != port.Name || pm.Spec.PodMetricsEndpoints[0].Path != "/metrics" {
				t.Errorf("PodMonitor endpoints %+v, want port %s at /metrics", pm.Spec.PodMetricsEndpoints, port.Name)
			}
			for _, m := range []struct{ kind, ns, api string }{{"Service", svc.Namespace, svc.APIVersion}, {"PodMonitor", pm.Namespace, pm.APIVersion}} {
				if m.ns != dep.Namespace {
					t.Errorf("%s in namespace %q, the runtime in %q", m.kind, m.ns, dep.Namespace)
				}
			}
			if pm.APIVersion != "monitoring.coreos.com/v1" {
				t.Errorf("PodMonitor apiVersion %q", pm.APIVersion)
			}
			for _, l := range []map[string]string{svc.Labels, pm.Labels} {
				if l["release"] != "prometheus" || l[contract.LabelInstance] != c.Ref().Name || l[contract.LabelManagedBy] != contract.ManagedByCairn {
					t.Errorf("labels %v: want the monitoring labels and cairn's", l)
				}
			}
		})
	}
}

// TestMonitoringGolden: the monitoring objects as written, under
// testdata/monitoring/<case>/ (go test ./renderer -update).
func TestMonitoringGolden(t *testing.T) {
	r := newMonitoringRenderer(t, monitoringOptions)
	for _, name := range []string{"etcd-create", "pg-converged"} {
		t.Run(name, func(t *testing.T) {
			rc := caseNamed(t, name)
			c, p := loadCase(t, rc)
			tree, _, err := r.Render(c, p, rc.step)
			if err != nil {
				t.Fatal(err)
			}
			prefix := Root(c.Ref().Name) + "/" + MonitoringDir + "/"
			dir := filepath.Join("testdata", "monitoring", name)
			if *update {
				if err := os.RemoveAll(dir); err != nil {
					t.Fatal(err)
				}
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			got := Tree{}
			for _, path := range tree.Paths() {
				if rest, ok := strings.CutPrefix(path, prefix); ok {
					got[rest] = tree[path]
					if *update {
						if err := os.WriteFile(filepath.Join(dir, rest), tree[path], 0o644); err != nil {
							t.Fatal(err)
						}
					}
				}
			}
			if diff := compareTrees(readTree(t, dir), got); diff != "" {
				t.Fatalf("monitoring objects differ from %s (go test ./renderer -update):\n%s", dir, diff)
			}
		})
	}
}

func TestMonitoringLabelsAreChecked(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    Options
		want string // "" for valid
	}{
		{"none", Options{}, ""},
		{"podmonitor", Options{PodMonitor: true}, ""},
		{"labels", monitoringOptions, ""},
		{"labels without podmonitor", Options{MonitoringLabels: map[string]string{"release": "p"}}, "not rendered"},
		{"bad key", Options{PodMonitor: true, MonitoringLabels: map[string]string{"a b": "p"}}, `"a b"`},
		{"bad value", Options{PodMonitor: true, MonitoringLabels: map[string]string{"release": "a b"}}, `release="a b"`},
		{"cairn's key", Options{PodMonitor: true, MonitoringLabels: map[string]string{contract.LabelInstance: "x"}}, "cairn's own"},
		{"cairn's prefix", Options{PodMonitor: true, MonitoringLabels: map[string]string{contract.LabelRole: "x"}}, "cairn's own"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.o, Etcd(), Postgres())
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("New: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("New: %v, want an error with %q", err, tc.want)
			}
		})
	}
}
