package renderer

import (
	"encoding/json"
	"maps"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/spec"
)

// names are the object names of one cluster.
type names struct {
	cluster   string
	namespace string
	kind      string // the spec's kind
	app       string // contract.contract.LabelName of the members
	labels    map[string]string
}

func namesOf(c spec.Cluster, app string) names {
	ref := c.Ref()
	return names{cluster: ref.Name, namespace: ref.Namespace, kind: ref.Kind, app: app, labels: c.Common().Labels}
}

// selector are the labels that select the cluster's pods; they never
// change after creation.
func (n names) selector() map[string]string {
	return map[string]string{contract.LabelName: n.app, contract.LabelInstance: n.cluster}
}

// objectLabels are the labels of every rendered object of a component;
// the spec's labels first, cairn's on top.
func (n names) objectLabels(component string) map[string]string {
	l := maps.Clone(n.labels)
	if l == nil {
		l = map[string]string{}
	}
	maps.Copy(l, n.selector())
	l[contract.LabelComponent] = component
	l[contract.LabelManagedBy] = contract.ManagedByCairn
	return l
}

func (n names) meta(name, component string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Labels: n.objectLabels(component)}
}

func typeMeta(apiVersion, kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: apiVersion, Kind: kind}
}

// toMap turns a typed object into plain data without the fields the API
// server owns (status, creationTimestamp), so output is minimal and stable.
func toMap(obj any) (map[string]any, error) {
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	return jsonToMap(data)
}

// jsonToMap is toMap of the object whose JSON data is.
func jsonToMap(data []byte) (map[string]any, error) {
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	delete(m, "status")
	prune(m)
	return m, nil
}

// prune removes what typed Kubernetes structs marshal without meaning:
// null values (creationTimestamp: null) and empty resources, strategy and
// status objects. Other empty objects are kept: emptyDir: {} is a volume.
func prune(v any) {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			prune(e)
			if m, ok := e.(map[string]any); e == nil || ok && len(m) == 0 && prunableEmpty[k] {
				delete(t, k)
			}
		}
	case []any:
		for _, e := range t {
			prune(e)
		}
	}
}

var prunableEmpty = map[string]bool{"resources": true, "strategy": true, "status": true}

// marshalYAML renders objects as one YAML file with sorted keys.
func marshalYAML(objs ...any) ([]byte, error) {
	var out []byte
	for i, o := range objs {
		m, err := toMap(o)
		if err != nil {
			return nil, err
		}
		data, err := yaml.Marshal(m)
		if err != nil {
			return nil, err
		}
		if i > 0 {
			out = append(out, "---\n"...)
		}
		out = append(out, data...)
	}
	return out, nil
}

func envFrom(name, fieldPath string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: fieldPath}}}
}

func envSecret(name, secret, key string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: key}}}
}

func ptr[T any](v T) *T { return &v }

func quorum(members int) int { return members/2 + 1 }

func selector(n names) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: n.selector()}
}

// podMeta labels pods with the selector and component only: the role
// label is added by the runtime and never rendered.
// podMeta is the pod template's metadata; a rolling restart's revision
// is an annotation, so changing it restarts the members.
func podMeta(n names, s Settings) metav1.ObjectMeta {
	m := metav1.ObjectMeta{Labels: n.objectLabels("database")}
	if s.TemplateRevision != "" {
		m.Annotations = map[string]string{contract.AnnotationTemplateRevision: s.TemplateRevision}
	}
	return m
}

// retainVolumes keeps members' volumes when the StatefulSet shrinks or is
// deleted: cairn never deletes data.
func retainVolumes() *appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy {
	return &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
		WhenDeleted: appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
		WhenScaled:  appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
	}
}

// spreadMembers asks the scheduler to put members on different nodes.
func spreadMembers(n names) *corev1.Affinity {
	return &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
			Weight: 100,
			PodAffinityTerm: corev1.PodAffinityTerm{
				LabelSelector: selector(n),
				TopologyKey:   "kubernetes.io/hostname",
			},
		}},
	}}
}
