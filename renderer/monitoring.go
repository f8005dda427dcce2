package renderer

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/spec"
)

// MonitoringDir is the folder, relative to Root, of a cluster's
// monitoring objects (Options.PodMonitor): the runtime's metrics Service
// and PodMonitor, with a kustomization.yaml of their own. The entry point
// never includes it, so what the cluster's Argo CD Application or Flux
// Kustomization syncs is the same with or without it; a separate one
// syncs it, where the Prometheus Operator's CRDs are installed.
const MonitoringDir = "monitoring"

// The runtime's metrics endpoint: the Deployment's container port
// (runtime.go) and cairn runtime's --metrics-addr default.
const (
	runtimeMetricsPortName = "metrics"
	runtimeMetricsPort     = 9090
	runtimeMetricsPath     = "/metrics"
)

// podMonitor is the part of a monitoring.coreos.com/v1 PodMonitor cairn
// renders; the Prometheus Operator's Go types are not a dependency.
type podMonitor struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              podMonitorSpec `json:"spec"`
}

type podMonitorSpec struct {
	Selector            metav1.LabelSelector `json:"selector"`
	PodMetricsEndpoints []podMetricsEndpoint `json:"podMetricsEndpoints"`
}

type podMetricsEndpoint struct {
	Port string `json:"port"`
	Path string `json:"path"`
}

// monitoringObjects are the runtime's metrics Service (headless: one
// address per replica, for a ServiceMonitor or a plain Prometheus's
// endpoints discovery) and a PodMonitor that scrapes both replicas. The
// standby exports only cairn_runtime_leader (0) and its own counters;
// deploy/monitoring's alerts and dashboard rely on that.
func monitoringObjects(c spec.Cluster, o Options) []Object {
	n := namesOf(c, contract.AppRuntime)
	name := contract.Runtime(n.cluster) + "-metrics"
	meta := n.meta(name, "metrics")
	maps.Copy(meta.Labels, o.MonitoringLabels)
	pods := contract.Selector(contract.AppRuntime, n.cluster)
	return []Object{
		{File: "runtime-metrics-service.yaml", Obj: &corev1.Service{
			TypeMeta: typeMeta("v1", "Service"), ObjectMeta: meta,
			Spec: corev1.ServiceSpec{
				ClusterIP: "None",
				Selector:  pods,
				Ports: []corev1.ServicePort{{Name: runtimeMetricsPortName, Port: runtimeMetricsPort,
					TargetPort: intstr.FromString(runtimeMetricsPortName)}},
			},
		}},
		{File: "runtime-podmonitor.yaml", Obj: &podMonitor{
			TypeMeta: typeMeta("monitoring.coreos.com/v1", "PodMonitor"), ObjectMeta: meta,
			Spec: podMonitorSpec{
				Selector:            metav1.LabelSelector{MatchLabels: pods},
				PodMetricsEndpoints: []podMetricsEndpoint{{Port: runtimeMetricsPortName, Path: runtimeMetricsPath}},
			},
		}},
	}
}

// putMonitoring writes MonitoringDir of cluster c's tree when the options
// ask for it, and checks that it builds.
func (r *Renderer) putMonitoring(t Tree, c spec.Cluster) error {
	if !r.opts.PodMonitor {
		return nil
	}
	files := map[string]map[string]any{}
	for _, o := range monitoringObjects(c, r.opts) {
		m, err := toMap(o.Obj)
		if err != nil {
			return fmt.Errorf("monitoring %s: %w", o.File, err)
		}
		files[o.File] = m
	}
	dir := Root(c.Ref().Name) + "/" + MonitoringDir
	sub := Tree{}
	if err := putFull(sub, dir, c, files); err != nil {
		return fmt.Errorf("monitoring: %w", err)
	}
	if _, err := Build(sub, dir); err != nil {
		return fmt.Errorf("monitoring: %w", err)
	}
	maps.Copy(t, sub)
	return nil
}

// validateMonitoring checks MonitoringLabels: Kubernetes labels, none of
// the keys cairn sets, and only with PodMonitor.
func (o Options) validateMonitoring() error {
	if len(o.MonitoringLabels) == 0 {
		return nil
	}
	if !o.PodMonitor {
		return fmt.Errorf("monitoring labels are set but the PodMonitor is not rendered")
	}
	own := []string{contract.LabelName, contract.LabelInstance, contract.LabelComponent, contract.LabelManagedBy}
	for _, k := range slices.Sorted(maps.Keys(o.MonitoringLabels)) {
		v := o.MonitoringLabels[k]
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return fmt.Errorf("monitoring label %q: %s", k, strings.Join(errs, "; "))
		}
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			return fmt.Errorf("monitoring label %s=%q: %s", k, v, strings.Join(errs, "; "))
		}
		if slices.Contains(own, k) || strings.HasPrefix(k, contract.LabelPrefix) {
			return fmt.Errorf("monitoring label %q is cairn's own", k)
		}
	}
	return nil
}
