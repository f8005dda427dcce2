package renderer

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/spec"
)

// keepImages sets the images of a StatefulSet's pod template to those
// that run (Settings.Images), container by container; a container that
// does not run yet keeps the Options' image.
func keepImages(o Object, images map[string]string) Object {
	sts, ok := o.Obj.(*appsv1.StatefulSet)
	if !ok || len(images) == 0 {
		return o
	}
	spec := &sts.Spec.Template.Spec
	for _, cs := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for i := range cs {
			if img := images[cs[i].Name]; img != "" {
				cs[i].Image = img
			}
		}
	}
	return o
}

// writableDir is a folder a database pod's containers write outside their
// volumes, an emptyDir of its own under a read-only root filesystem.
type writableDir struct{ volume, path string }

// tmpDir is /tmp, in every database pod.
var tmpDir = writableDir{"tmp", "/tmp"}

// readOnlyRoot gives the StatefulSet's containers read-only root
// filesystems, with dirs as emptyDir volumes mounted in each, when s
// asks for it; without (a template rendered before cairn set it) the
// template stays as it runs, so nothing restarts outside a step.
func readOnlyRoot(o Object, s Settings, dirs ...writableDir) Object {
	sts, ok := o.Obj.(*appsv1.StatefulSet)
	if !ok || !s.ReadOnlyRoot {
		return o
	}
	spec := &sts.Spec.Template.Spec
	for _, d := range dirs {
		spec.Volumes = append(spec.Volumes, corev1.Volume{Name: d.volume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	}
	for _, cs := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for i := range cs {
			sc := cs[i].SecurityContext
			if sc == nil {
				sc = &corev1.SecurityContext{}
				cs[i].SecurityContext = sc
			}
			sc.ReadOnlyRootFilesystem = ptr(true)
			for _, d := range dirs {
				cs[i].VolumeMounts = append(cs[i].VolumeMounts, corev1.VolumeMount{Name: d.volume, MountPath: d.path})
			}
		}
	}
	return o
}

// Paths inside database pods.
const (
	cairnBinDir  = "/cairn-bin"
	cairnBin     = cairnBinDir + "/cairn"
	cairnConfDir = contract.ConfigDir
	podInfoDir   = contract.PodInfoDir
	dataVolume   = contract.DataVolume
)

// installContainer copies the cairn binary (the instance manager) into a
// shared volume, so database images stay the official ones.
func installContainer(o Options) corev1.Container {
	return corev1.Container{
		Name:            "install-cairn",
		Image:           o.CairnImage,
		Command:         []string{"/cairn", "instance", "install", cairnBin},
		VolumeMounts:    []corev1.VolumeMount{{Name: "cairn-bin", MountPath: cairnBinDir}},
		SecurityContext: restricted(),
	}
}

// commonVolumes are the volumes every database pod has: the instance
// manager's binary, the runtime config (bootstrap mode, requests) and the
// pod's own labels through the downward API (the role the runtime set).
func commonVolumes(n names) []corev1.Volume {
	return []corev1.Volume{
		{Name: "cairn-bin", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: "cairn-config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: contract.ConfigMap(n.cluster)}}}},
		{Name: "podinfo", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{
			Items: []corev1.DownwardAPIVolumeFile{{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}}}}}},
	}
}

func commonMounts() []corev1.VolumeMount {
	return []corev1.VolumeMount{
		{Name: "cairn-bin", MountPath: cairnBinDir, ReadOnly: true},
		{Name: "cairn-config", MountPath: cairnConfDir, ReadOnly: true},
		{Name: "podinfo", MountPath: podInfoDir, ReadOnly: true},
	}
}

func podEnv(n names) []corev1.EnvVar {
	return []corev1.EnvVar{
		{Name: contract.EnvCluster, Value: n.cluster},
		envFrom(contract.EnvPodName, "metadata.name"),
		envFrom(contract.EnvPodNamespace, "metadata.namespace"),
	}
}

// restricted meets the Pod Security "restricted" profile.
func restricted() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr(false),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

// podSecurity runs a database pod as uid, with its volumes group-owned
// by it. OnRootMismatch keeps the kubelet from re-applying group
// permissions on every mount, which would make PGDATA group-readable and
// stop PostgreSQL from starting.
func podSecurity(uid int64) *corev1.PodSecurityContext {
	return &corev1.PodSecurityContext{
		RunAsNonRoot: ptr(true), RunAsUser: ptr(uid), FSGroup: ptr(uid),
		FSGroupChangePolicy: ptr(corev1.FSGroupChangeOnRootMismatch),
		SeccompProfile:      &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

// startupProbe gives a member an hour to start (a clone, a rewind, crash
// recovery, waiting for its cluster) before liveness applies.
func startupProbe(h corev1.ProbeHandler) *corev1.Probe {
	return &corev1.Probe{ProbeHandler: h, PeriodSeconds: 10, FailureThreshold: 360, TimeoutSeconds: 5}
}

// resources turns the spec's resources into a container's.
// resources are the database container's; quantities were checked when
// the spec or the live state was read.
func resources(r *contract.Resources) (corev1.ResourceRequirements, error) {
	var out corev1.ResourceRequirements
	if r == nil {
		return out, nil
	}
	var err error
	if out.Requests, err = resourceList(r.Requests); err != nil {
		return out, fmt.Errorf("requests: %w", err)
	}
	if out.Limits, err = resourceList(r.Limits); err != nil {
		return out, fmt.Errorf("limits: %w", err)
	}
	return out, nil
}

func resourceList(l contract.ResourceList) (corev1.ResourceList, error) {
	if l == (contract.ResourceList{}) {
		return nil, nil
	}
	out := corev1.ResourceList{}
	for _, q := range []struct {
		name  corev1.ResourceName
		value string
	}{{corev1.ResourceCPU, l.CPU}, {corev1.ResourceMemory, l.Memory}} {
		if q.value == "" {
			continue
		}
		v, err := resource.ParseQuantity(q.value)
		if err != nil {
			return nil, fmt.Errorf("%s %q: %w", q.name, q.value, err)
		}
		out[q.name] = v
	}
	return out, nil
}

// volumeClaim is the data volume of one member: the StatefulSet's
// template, or a PVC of its own once volumes have grown past it.
func volumeClaimSpec(storage, class string) corev1.PersistentVolumeClaimSpec {
	s := corev1.PersistentVolumeClaimSpec{
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceStorage: resource.MustParse(storage)}},
	}
	if class != "" {
		s.StorageClassName = ptr(class)
	}
	return s
}

// grownVolumes renders each member's PVC at the grown size. The
// StatefulSet's volumeClaimTemplates cannot change; a PVC named as the
// StatefulSet would name it is adopted by the StatefulSet, so new members
// get the grown size too. Pruning is off: a PVC leaves only by hand.
func grownVolumes(n names, s Settings) []Object {
	if s.Storage == "" || s.TemplateStorage == "" || spec.Quantity(s.Storage).Cmp(spec.Quantity(s.TemplateStorage)) <= 0 {
		return nil
	}
	var out []Object
	for i := range s.Replicas {
		name := dataVolume + "-" + contract.MemberName(n.cluster, i)
		m := n.meta(name, "database")
		m.Annotations = map[string]string{
			"kustomize.toolkit.fluxcd.io/prune":  "disabled",
			"argocd.argoproj.io/sync-options":    "Prune=false",
			"argocd.argoproj.io/compare-options": "IgnoreExtraneous",
		}
		out = append(out, Object{File: "pvc-" + contract.MemberName(n.cluster, i) + ".yaml", Obj: &corev1.PersistentVolumeClaim{
			TypeMeta: typeMeta("v1", "PersistentVolumeClaim"), ObjectMeta: m,
			Spec: volumeClaimSpec(s.Storage, s.StorageClass),
		}})
	}
	return out
}

// templateClaim is the StatefulSet's one volumeClaimTemplate. It carries
// apiVersion and kind as the API server stores them: without them a
// server-side apply diff (Argo CD's ServerSideApply=true, argo-cd issue
// 11143) sees the stored template differ from Git forever.
func templateClaim(n names, s Settings) corev1.PersistentVolumeClaim {
	return corev1.PersistentVolumeClaim{
		TypeMeta:   typeMeta("v1", "PersistentVolumeClaim"),
		ObjectMeta: metav1.ObjectMeta{Name: dataVolume, Labels: n.selector()},
		Spec:       volumeClaimSpec(s.TemplateStorage, s.StorageClass),
	}
}
