package observe

import (
	"context"
	"encoding/json"
	"os"
	"reflect"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/spec"
	"github.com/cairn-dev/cairn/testbed"
)

func decode(t *testing.T, doc string) []spec.Cluster {
	t.Helper()
	cs, err := spec.Decode("specs.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func ptr[T any](v T) *T { return &v }

// readyAt is when deploy's pods became ready, as their Ready condition says.
var readyAt = metav1.NewTime(time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC))

// deploy creates what the renderer's manifests and the controllers make
// of a cluster: the StatefulSet, its pods (with their readiness), their
// PVCs (with capacities), the rendered config and the runtime's status.
func deploy(t *testing.T, c kubernetes.Interface, ns, name, app, image string, ready []bool, roles []string, requested, capacity []string, config, status map[string]string) {
	t.Helper()
	ctx := context.Background()
	sel := map[string]string{contract.LabelName: app, contract.LabelInstance: name}
	container := corev1.Container{Name: map[string]string{"etcd": "etcd", "postgresql": "postgres"}[app], Image: image}
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: appsv1.StatefulSetSpec{
		Replicas: ptr(int32(len(ready))), Selector: &metav1.LabelSelector{MatchLabels: sel}, ServiceName: name,
		UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
			RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr(int32(1))}},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: sel}, Spec: corev1.PodSpec{Containers: []corev1.Container{container}}},
		VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}, Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("8Gi")}}}}},
	}}
	if _, err := c.AppsV1().StatefulSets(ns).Create(ctx, sts, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for i, r := range ready {
		labels := map[string]string{contract.LabelName: app, contract.LabelInstance: name}
		if roles != nil && roles[i] != "" {
			labels[contract.LabelRole] = roles[i]
		}
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name + "-" + string(rune('0'+i)), Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{container}}}
		created, err := c.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cond := corev1.ConditionFalse
		if r {
			cond = corev1.ConditionTrue
		}
		created.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: cond, LastTransitionTime: readyAt}}}
		if _, err := c.CoreV1().Pods(ns).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		// A grown volume's claim requests what it was grown to; its
		// capacity may be rounded up by the provisioner.
		claim := *sts.Spec.VolumeClaimTemplates[0].Spec.DeepCopy()
		claim.Resources.Requests[corev1.ResourceStorage] = resource.MustParse(requested[i])
		pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data-" + pod.Name}, Spec: claim}
		pc, err := c.CoreV1().PersistentVolumeClaims(ns).Create(ctx, pvc, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pc.Status = corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound, Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(capacity[i])}}
		if _, err := c.CoreV1().PersistentVolumeClaims(ns).UpdateStatus(ctx, pc, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for cm, data := range map[string]map[string]string{name + "-cairn": config, name + "-cairn-status": status} {
		if data == nil {
			continue
		}
		if _, err := c.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: cm}, Data: data}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

func TestObserveARealAPIServer(t *testing.T) {
	cp := testbed.Shared(t, testbed.Options{})
	c := cp.Client(t)
	ns := cp.Namespace(t, "db")
	deploy(t, c, ns, "e", "etcd", "quay.io/coreos/etcd:v3.5.21", []bool{true, true, false}, nil, []string{"16Gi", "8Gi", "8Gi"}, []string{"16Gi", "8Gi", "8Gi"},
		map[string]string{"bootstrap": "existing"},
		map[string]string{contract.StatusKeyEtcd: freshStatus(t)})
	deploy(t, c, ns, "pg", "postgresql", "docker.io/library/postgres:14.5", []bool{true, true}, []string{"primary", ""}, []string{"10Gi", "10Gi"}, []string{"10Gi", "11Gi"},
		map[string]string{"bootstrap": "new", "synchronous-standbys": "1", "backup.schedule": "0 2 * * *", "backup.time-zone": "UTC", "backup.storage-location": "s3://b/pg", "backup.retention.count": "7"}, nil)
	// pg's runtime was rendered read-only; e's is not there to read.
	deployRuntime(t, c, ns, "pg", ptr(true))
	specs := decode(t, `apiVersion: etcd.database.coreos.com/v1beta2
kind: EtcdCluster
metadata: {name: e}
spec: {size: 3, version: "3.5.21"}
---
apiVersion: db.example.com/v1alpha1
kind: PostgresCluster
metadata: {name: pg}
spec: {version: "14.5", instances: 2, storage: 10Gi}
---
apiVersion: db.example.com/v1alpha1
kind: PostgresCluster
metadata: {name: not-deployed}
spec: {version: "14.5", instances: 1, storage: 10Gi}
`)
	snap, err := (&Observer{Client: c, Namespace: ns, Kinds: []Kind{Etcd(), Postgres()}}).Observe(context.Background(), specs)
	if err != nil {
		t.Fatal(err)
	}
	want := []live.Cluster{
		{Kind: "EtcdCluster", Name: "e", Storage: "8Gi", Capacity: "8Gi", ClusterVersion: "3.5", Bootstrap: "existing",
			StatefulSet: live.StatefulSet{Replicas: 3, UpdatePartition: 1, Version: "3.5.21", VolumeClaimStorage: "8Gi",
				Images: map[string]string{"etcd": "quay.io/coreos/etcd:v3.5.21"}},
			Members: []live.Member{
				{Name: "e-0", Version: "3.5.21", Ready: true, ReadySince: "2026-11-29T10:00:00Z", Role: live.RoleLeader},
				{Name: "e-1", Version: "3.5.21", Ready: true, ReadySince: "2026-11-29T10:00:00Z", Role: live.RoleFollower},
				{Name: "e-2", Version: "3.5.21", Ready: false, Role: live.RoleLearner},
			}},
		// The provisioner rounded pg-1's volume up to 11Gi: the claims
		// still request 10Gi, which is what the spec is compared with.
		{Kind: "PostgresCluster", Name: "pg", Storage: "10Gi", Capacity: "10Gi", Bootstrap: "new", SynchronousStandbys: 1, Runtime: live.Runtime{ReadOnlyRoot: true},
			Backup: &live.Backup{Schedule: "0 2 * * *", TimeZone: "UTC", StorageLocation: "s3://b/pg", RetentionCount: 7},
			StatefulSet: live.StatefulSet{Replicas: 2, UpdatePartition: 1, Version: "14.5", VolumeClaimStorage: "8Gi",
				Images: map[string]string{"postgres": "docker.io/library/postgres:14.5"}},
			Members: []live.Member{
				{Name: "pg-0", Version: "14.5", Ready: true, ReadySince: "2026-11-29T10:00:00Z", Role: live.RolePrimary},
				{Name: "pg-1", Version: "14.5", Ready: true, ReadySince: "2026-11-29T10:00:00Z", Role: live.RoleUnknown},
			}},
	}
	if !reflect.DeepEqual(snap.Clusters, want) {
		t.Fatalf("observed:\n%+v\nwant:\n%+v", snap.Clusters, want)
	}
}

func TestVersionOf(t *testing.T) {
	for image, want := range map[string]string{
		"quay.io/coreos/etcd:v3.5.21": "3.5.21", "postgres:14.5": "14.5", "localhost:5000/postgres": "",
		"docker.io/library/postgres:15.4@sha256:abc": "15.4",
	} {
		if got := versionOf([]corev1.Container{{Name: "postgres", Image: image}, {Name: "etcd", Image: image}}, "postgres"); got != want {
			t.Errorf("%s: %q, want %q", image, got, want)
		}
	}
}

// freshStatus is the shared example of the runtime's status, observed now.
func freshStatus(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile("testdata/etcd-status.json")
	if err != nil {
		t.Fatal(err)
	}
	var st contract.EtcdStatus
	if err := json.Unmarshal(data, &st); err != nil {
		t.Fatal(err)
	}
	st.ObservedAt = time.Now().Add(time.Minute).UTC().Format(time.RFC3339)
	out, _ := json.Marshal(st)
	return string(out)
}

func TestEtcdRoleNeedsAFreshStatus(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "e-3", CreationTimestamp: metav1.NewTime(time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC))}}
	old := &contract.EtcdStatus{ObservedAt: "2026-11-30T07:59:00Z", Members: []contract.EtcdMember{{Name: "e-0"}}}
	if r := etcdRole(pod, old); r != live.RoleUnknown {
		t.Errorf("a status older than the pod: %s", r)
	}
	fresh := &contract.EtcdStatus{ObservedAt: "2026-11-30T08:01:00Z", Members: []contract.EtcdMember{{Name: "e-0"}}}
	if r := etcdRole(pod, fresh); r != live.RoleRemoved {
		t.Errorf("a fresh status without the pod: %s", r)
	}
	fresh.Members = append(fresh.Members, contract.EtcdMember{Name: "", PeerURLs: []string{"http://e-3.e.db.svc:2380"}})
	if r := etcdRole(pod, fresh); r != live.RoleUnknown {
		t.Errorf("a member not started yet may be this pod: %s", r)
	}
	fresh.Members[1].Learner = true
	if r := etcdRole(pod, fresh); r != live.RoleLearner {
		t.Errorf("the learner added for this pod, not started yet: %s", r)
	}
	other := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "e-1", CreationTimestamp: pod.CreationTimestamp}}
	if r := etcdRole(other, fresh); r != live.RoleRemoved {
		t.Errorf("a learner added for e-3 says nothing of e-1: %s", r)
	}
}

// An etcd member's role and version come from what its own etcd reports:
// a pod restarted at a new image counts as upgraded only once the runtime
// reports that version; an unhealthy voter's role is unknown; a member the
// runtime replaces is neither removed nor known.
func TestEtcdMemberFromStatus(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "e-1", CreationTimestamp: metav1.NewTime(time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC))}}
	at := "2026-11-30T08:01:00Z"
	tests := []struct {
		name    string
		st      *contract.EtcdStatus
		role    live.Role
		version string
	}{
		{"no status", nil, live.RoleUnknown, "3.6.16"},
		{"reports the old version", &contract.EtcdStatus{ObservedAt: at, Members: []contract.EtcdMember{{Name: "e-1", Healthy: true, Version: "3.5.21"}}}, live.RoleFollower, "3.5.21"},
		{"reports the new version", &contract.EtcdStatus{ObservedAt: at, Members: []contract.EtcdMember{{Name: "e-1", Healthy: true, Leader: true, Version: "3.6.16"}}}, live.RoleLeader, "3.6.16"},
		{"does not answer", &contract.EtcdStatus{ObservedAt: at, Members: []contract.EtcdMember{{Name: "e-1"}}}, live.RoleUnknown, "3.6.16"},
		{"an unhealthy learner", &contract.EtcdStatus{ObservedAt: at, Members: []contract.EtcdMember{{Name: "e-1", Learner: true}}}, live.RoleLearner, "3.6.16"},
		{"being replaced", &contract.EtcdStatus{ObservedAt: at, Members: []contract.EtcdMember{{Name: "e-0", Healthy: true}}, Replacing: []string{"e-1"}}, live.RoleUnknown, "3.6.16"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if r := etcdRole(pod, tc.st); r != tc.role {
				t.Errorf("role %s, want %s", r, tc.role)
			}
			if v := etcdVersion("e-1", "3.6.16", tc.st); v != tc.version {
				t.Errorf("version %s, want %s", v, tc.version)
			}
		})
	}
}

// A status from an older runtime, without health, reads as before.
func TestLegacyStatusIsHealthy(t *testing.T) {
	raw := `{"observedAt":"2026-11-30T08:01:00Z","clusterVersion":"3.5","members":[{"name":"e-0","id":"1","leader":true},{"name":"e-1","id":"2"}]}`
	var st contract.EtcdStatus
	if err := json.Unmarshal([]byte(raw), &st); err != nil {
		t.Fatal(err)
	}
	legacyHealth(raw, &st)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "e-0", CreationTimestamp: metav1.NewTime(time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC))}}
	if r := etcdRole(pod, &st); r != live.RoleLeader || !st.Quorum {
		t.Errorf("role %s, quorum %v", r, st.Quorum)
	}
	current := freshStatus(t)
	var now contract.EtcdStatus
	_ = json.Unmarshal([]byte(current), &now)
	now.Members[0].Healthy = false
	data, _ := json.Marshal(now)
	legacyHealth(string(data), &now)
	if now.Members[0].Healthy {
		t.Error("a current status's health is taken as written")
	}
}
