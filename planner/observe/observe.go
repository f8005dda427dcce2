package observe

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/spec"
)

// Observer reads clusters from one Kubernetes cluster.
type Observer struct {
	Client kubernetes.Interface
	// Namespace is where clusters whose spec names none run.
	Namespace string
	// Kinds read what is particular to each kind (cmd/cairn's table of
	// kinds wires them); a cluster of another kind is an error.
	Kinds []Kind
	// RecoverAfter is how long a cluster's quorum must have been lost for
	// the planner to propose a recovery (live.QuorumLoss.Long);
	// contract.EtcdRecoverAfter when zero.
	RecoverAfter time.Duration
}

// Observe returns the observed state of the given clusters; those with no
// StatefulSet are left out (nothing of them is deployed).
func (o *Observer) Observe(ctx context.Context, clusters []spec.Cluster) (*live.Snapshot, error) {
	snap := &live.Snapshot{APIVersion: live.APIVersion, Kind: live.Kind}
	for _, c := range clusters {
		oc, err := o.cluster(ctx, c)
		if err != nil {
			return nil, fmt.Errorf("observe %s: %w", c.Ref(), err)
		}
		if oc != nil {
			snap.Clusters = append(snap.Clusters, *oc)
		}
	}
	return snap, nil
}

func (o *Observer) namespace(c spec.Cluster) string {
	if ns := c.Ref().Namespace; ns != "" {
		return ns
	}
	return o.Namespace
}

func (o *Observer) cluster(ctx context.Context, c spec.Cluster) (*live.Cluster, error) {
	ref, ns := c.Ref(), o.namespace(c)
	sts, err := o.Client.AppsV1().StatefulSets(ns).Get(ctx, ref.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	k, err := o.kind(ref.Kind)
	if err != nil {
		return nil, err
	}
	out := &live.Cluster{Kind: ref.Kind, Name: ref.Name, Namespace: ref.Namespace, StatefulSet: statefulSet(sts, k.Container())}
	config, err := o.configMap(ctx, ns, contract.ConfigMap(ref.Name))
	if err != nil {
		return nil, err
	}
	status, err := o.configMap(ctx, ns, contract.StatusConfigMap(ref.Name))
	if err != nil {
		return nil, err
	}
	applyConfig(out, config)
	if out.Runtime, err = o.runtime(ctx, ns, ref.Name); err != nil {
		return nil, err
	}
	if r, ok := k.(Reader); ok {
		if err := r.Read(ctx, o, ns, ref.Name, out); err != nil {
			return nil, err
		}
	}
	if err := applyBackupStatus(out, status[contract.StatusKeyBackup]); err != nil {
		return nil, fmt.Errorf("runtime status of %s: %w", ref.Name, err)
	}
	member, err := k.Status(status, out)
	if err != nil {
		return nil, fmt.Errorf("runtime status: %w", err)
	}
	if q := out.QuorumLost; q != nil {
		after := o.RecoverAfter
		if after <= 0 {
			after = contract.EtcdRecoverAfter
		}
		q.Long = now().Sub(q.Since.Time()) >= after
	}
	if out.Members, err = o.members(ctx, ns, ref.Name, sts, k.Container(), member); err != nil {
		return nil, err
	}
	if out.Storage, out.Capacity, err = o.storage(ctx, ns, sts, out.Members); err != nil {
		return nil, err
	}
	return out, nil
}

func (o *Observer) kind(name string) (Kind, error) {
	for _, k := range o.Kinds {
		if k.Kind() == name {
			return k, nil
		}
	}
	return nil, fmt.Errorf("cairn cannot observe clusters of kind %q", name)
}

func statefulSet(sts *appsv1.StatefulSet, container string) live.StatefulSet {
	s := live.StatefulSet{Version: versionOf(sts.Spec.Template.Spec.Containers, container)}
	if sts.Spec.Replicas != nil {
		s.Replicas = int(*sts.Spec.Replicas)
	}
	if ru := sts.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.Partition != nil {
		s.UpdatePartition = int(*ru.Partition)
	}
	if len(sts.Spec.VolumeClaimTemplates) > 0 {
		claim := sts.Spec.VolumeClaimTemplates[0].Spec
		if q, ok := claim.Resources.Requests[corev1.ResourceStorage]; ok {
			s.VolumeClaimStorage = q.String()
		}
		if claim.StorageClassName != nil {
			s.StorageClass = *claim.StorageClassName
		}
	}
	s.TemplateRevision = sts.Spec.Template.Annotations[contract.AnnotationTemplateRevision]
	for _, c := range append(slices.Clone(sts.Spec.Template.Spec.InitContainers), sts.Spec.Template.Spec.Containers...) {
		if s.Images == nil {
			s.Images = map[string]string{}
		}
		s.Images[c.Name] = c.Image
	}
	for _, c := range sts.Spec.Template.Spec.Containers {
		if c.Name == container {
			s.Resources = resourcesOf(c.Resources)
			s.ReadOnlyRoot = readOnlyRoot(c)
		}
	}
	for _, ic := range sts.Spec.Template.Spec.InitContainers {
		if ic.Name == contract.PGUpgradeInitContainer {
			if i := slices.Index(ic.Command, "--from"); i >= 0 && i+1 < len(ic.Command) {
				s.UpgradeFrom, _ = strconv.Atoi(ic.Command[i+1])
			}
		}
	}
	return s
}

// versionOf reads the database version from the database container's
// image tag ("quay.io/coreos/etcd:v3.5.21", "postgres:14.5").
func versionOf(containers []corev1.Container, name string) string {
	for _, c := range containers {
		if c.Name != name {
			continue
		}
		image := c.Image
		if i := strings.IndexByte(image, '@'); i >= 0 {
			image = image[:i]
		}
		i := strings.LastIndexByte(image, ':')
		if i < 0 || strings.Contains(image[i:], "/") {
			return ""
		}
		return strings.TrimPrefix(image[i+1:], "v")
	}
	return ""
}

func (o *Observer) configMap(ctx context.Context, ns, name string) (map[string]string, error) {
	cm, err := o.Client.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, err
	}
	return cm.Data, nil
}

// applyConfig reads the rendered config the pods run with.
func applyConfig(out *live.Cluster, data map[string]string) {
	out.Bootstrap = data[contract.KeyBootstrap]
	out.ConfigRevision = data[contract.KeyConfigRevision]
	out.SynchronousStandbys, _ = strconv.Atoi(data[contract.KeySynchronousStandbys])
	etcdMaintenanceConfig(out, data)
	out.Recovering = data[contract.KeyRecoverID]
	out.SwitchoverServed = data[contract.KeySwitchoverServed]
	out.TLS = observedTLS(data[contract.KeyTLS])
	out.Network = observedNetwork(data[contract.KeyNetwork])
	if name := data[contract.KeyTLSIssuerName]; name != "" {
		out.TLSIssuer = &contract.IssuerRef{Name: name, Kind: data[contract.KeyTLSIssuerKind], Group: data[contract.KeyTLSIssuerGroup]}
	}
	if data[contract.KeyBackupSchedule] == "" {
		return
	}
	b := &live.Backup{Schedule: data[contract.KeyBackupSchedule], TimeZone: data[contract.KeyBackupTimeZone],
		StorageLocation: data[contract.KeyBackupStorageLocation], RetentionMaxAge: data[contract.KeyBackupRetentionMaxAge]}
	b.RetentionCount, _ = strconv.Atoi(data[contract.KeyBackupRetentionCount])
	out.Backup = b
}

// observedTLS is the rendered TLS mode: "" for off (as configs rendered
// before TLS have no key), the mode when it is another known one, and an
// unknown value as it is, for the planner to refuse.
func observedTLS(v string) string {
	if mode, ok := contract.TLSMode(v); ok && contract.TLSOn(mode) {
		return mode
	} else if ok {
		return ""
	}
	return v
}

// observedNetwork is the rendered network mode: "" for open (as configs
// rendered before the NetworkPolicy have no key), restricted, and an
// unknown value as it is, for the planner to refuse.
func observedNetwork(v string) string {
	if v == contract.NetworkOpen {
		return ""
	}
	return v
}

func (o *Observer) members(ctx context.Context, ns, cluster string, sts *appsv1.StatefulSet, container string, member MemberFunc) ([]live.Member, error) {
	pods, err := o.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{
		LabelSelector: metav1.FormatLabelSelector(sts.Spec.Selector)})
	if err != nil {
		return nil, err
	}
	var out []live.Member
	for _, p := range pods.Items {
		if !strings.HasPrefix(p.Name, cluster+"-") || p.DeletionTimestamp != nil {
			continue
		}
		m := live.Member{Name: p.Name, Version: versionOf(p.Spec.Containers, container), Ready: ready(&p), ReadySince: readySince(&p), Role: live.RoleUnknown,
			TemplateRevision: p.Annotations[contract.AnnotationTemplateRevision]}
		member(&p, &m)
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b live.Member) int { return a.Ordinal() - b.Ordinal() })
	return out, nil
}

// readySince is when a ready pod became ready; empty when it is not ready
// or Kubernetes recorded no time.
func readySince(p *corev1.Pod) live.Timestamp {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue && !c.LastTransitionTime.IsZero() {
			return live.Timestamp(c.LastTransitionTime.UTC().Format(time.RFC3339))
		}
	}
	return ""
}

func ready(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// storage is the smallest size the members' volume claims request (what
// a spec is compared with: a provisioner may round capacity up) and the
// smallest capacity they report (what an expansion waits for); the claim
// template's size while no claim exists.
func (o *Observer) storage(ctx context.Context, ns string, sts *appsv1.StatefulSet, members []live.Member) (string, string, error) {
	var request, capacity *resource.Quantity
	smaller := func(cur **resource.Quantity, l corev1.ResourceList) {
		if q, ok := l[corev1.ResourceStorage]; ok && (*cur == nil || q.Cmp(**cur) < 0) {
			*cur = &q
		}
	}
	for _, m := range members {
		pvc, err := o.Client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, contract.DataClaim(m.Name), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return "", "", err
		}
		smaller(&request, pvc.Spec.Resources.Requests)
		smaller(&capacity, pvc.Status.Capacity)
	}
	out := []string{statefulSet(sts, "").VolumeClaimStorage, ""}
	if request != nil {
		out[0] = request.String()
	}
	if capacity != nil {
		out[1] = capacity.String()
	}
	return out[0], out[1], nil
}
