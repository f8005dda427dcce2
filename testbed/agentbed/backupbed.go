package agentbed

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/spec"
	"github.com/cairn-dev/cairn/runtime/backup"
	"github.com/cairn-dev/cairn/testbed"
)

// BackupBed is one real etcd member behind a ready pod "kv-0" of the
// cluster "kv", with the cluster's rendered config and StatefulSet.
type BackupBed struct {
	T      *testing.T
	Client kubernetes.Interface
	// Cluster is the cluster whose config and status the bed reads and
	// writes; "" is "kv".
	Cluster   string
	Namespace string
	// Port is the member's client port on 127.0.0.1.
	Port int
	// Etcd is a client of the member.
	Etcd *clientv3.Client
	// Stores is a folder for file:// backup locations.
	Stores string
}

// NewBackupBed is the bed in a namespace of a control plane of its own.
func NewBackupBed(t *testing.T) *BackupBed {
	cp := testbed.Start(t)
	return NewBackupBedIn(t, cp, cp.Namespace(t, "backups"))
}

// NewBackupBedIn is the bed in namespace ns of control plane cp.
func NewBackupBedIn(t *testing.T, cp *testbed.ControlPlane, ns string) *BackupBed {
	b := &BackupBed{T: t, Client: cp.Client(t), Namespace: ns, Stores: t.TempDir()}
	ctx := context.Background()
	curl, cli := testbed.EtcdMember(t, "kv-0", filepath.Join(t.TempDir(), "d"), "")
	b.Port, _ = strconv.Atoi(curl[strings.LastIndexByte(curl, ':')+1:])
	b.Etcd = cli
	sel := contract.Selector(contract.AppEtcd, "kv")
	one := int32(1)
	tmpl := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: sel}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "etcd", Image: "etcd"}}}}
	if _, err := b.Client.AppsV1().StatefulSets(b.Namespace).Create(ctx, &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "kv"},
		Spec: appsv1.StatefulSetSpec{Replicas: &one, Selector: &metav1.LabelSelector{MatchLabels: sel}, Template: tmpl}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	kv0 := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "kv-0", Labels: sel}, Spec: tmpl.Spec}
	OwnedByStatefulSet(t, b.Client, b.Namespace, "kv", kv0)
	pod, err := b.Client.CoreV1().Pods(b.Namespace).Create(ctx, kv0, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "127.0.0.1", Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
	if _, err := b.Client.CoreV1().Pods(b.Namespace).UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	return b
}

// Source is a backup source of the member kv-0, as the etcd keeper's
// would pick it.
func (b *BackupBed) Source(context.Context) (backup.Source, string, error) {
	return backup.EtcdSource{Member: "kv-0", Endpoint: "http://127.0.0.1:" + strconv.Itoa(b.Port)}, spec.EtcdKind, nil
}

// SetPolicy writes the rendered config's backup policy.
func (b *BackupBed) SetPolicy(data map[string]string) {
	ctx := context.Background()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: contract.ConfigMap(cmp.Or(b.Cluster, "kv"))}, Data: data}
	if _, err := b.Client.CoreV1().ConfigMaps(b.Namespace).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		if _, err := b.Client.CoreV1().ConfigMaps(b.Namespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			b.T.Fatal(err)
		}
	}
}

// Status is the backup status the runtime recorded (empty when none).
func (b *BackupBed) Status() contract.BackupStatus {
	name := contract.StatusConfigMap(cmp.Or(b.Cluster, "kv"))
	cm, err := b.Client.CoreV1().ConfigMaps(b.Namespace).Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return contract.BackupStatus{}
	}
	if err != nil {
		b.T.Fatal(err)
	}
	st, err := contract.ParseBackupStatus(cm.Data[contract.StatusKeyBackup])
	if err != nil {
		b.T.Fatalf("%s: %v", name, err)
	}
	return st
}

// Complete lists the complete backups of "kv" under Stores.
func (b *BackupBed) Complete() []backup.Manifest {
	all, err := backup.List(context.Background(), &backup.FileStore{Root: b.Stores}, "kv")
	if err != nil {
		b.T.Fatal(err)
	}
	return all
}

// Put writes n keys named prefix000, prefix001, ... into the member.
func (b *BackupBed) Put(prefix string, n int) {
	for i := range n {
		if _, err := b.Etcd.Put(context.Background(), fmt.Sprintf("%s%03d", prefix, i), "v"); err != nil {
			b.T.Fatal(err)
		}
	}
}

// WriteBackupStatus records st as cluster's backup status in namespace
// ns, as a runtime that took a backup would have.
func WriteBackupStatus(t testing.TB, c kubernetes.Interface, ns, cluster string, st contract.BackupStatus) {
	t.Helper()
	data, _ := json.Marshal(st)
	if _, err := c.CoreV1().ConfigMaps(ns).Create(context.Background(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: contract.StatusConfigMap(cluster), Namespace: ns},
		Data:       map[string]string{contract.StatusKeyBackup: string(data)}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}
