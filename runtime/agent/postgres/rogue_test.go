package postgres

import (
	"context"
	"log/slog"
	"net"
	"strconv"
	"sync/atomic"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/runtime/agent"
	"github.com/cairn-dev/cairn/testbed"
)

// A pod that carries a cluster's labels and a member's name, but is not
// the StatefulSet's, is never a member: the runtime never connects to it
// (so never sends it a password), never labels it, never backs up from
// it; nor is a pod of another StatefulSet with the same labels.
func TestARoguePodIsNeverAMember(t *testing.T) {
	testbed.Require(t, testbed.TierIntegration, "PostgreSQL members")
	cp := testbed.Start(t)
	c := cp.Client(t)
	ns := cp.Namespace(t, "db")
	m := newMembers(t)
	m.start(0, "new", 0)
	m.start(1, "new", 0)
	pods(t, c, ns, m, 2)

	// What the rogue pods point at: a listener that counts connections.
	rogueIP := "127.0.0.9"
	l, err := net.Listen("tcp", net.JoinHostPort(rogueIP, strconv.Itoa(m.port)))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var dialled atomic.Int32
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			dialled.Add(1)
			conn.Close()
		}
	}()
	other := otherStatefulSet(t, c, ns)
	for name, owner := range map[string][]metav1.OwnerReference{"pg-2": nil, "pg-3": other} {
		rogue(t, c, ns, name, rogueIP, owner)
	}

	r := &Roles{Client: c, Namespace: ns, Cluster: "pg", Port: m.port, Log: slog.New(slog.NewTextHandler(logWriter{t}, nil))}
	for range 3 {
		if err := r.Pass(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	got := labels(t, c, ns)
	if got["pg-0"] != contract.RolePrimary || got["pg-1"] != contract.RoleReplica {
		t.Errorf("members' labels %v", got)
	}
	for _, name := range []string{"pg-2", "pg-3"} {
		if got[name] != "" {
			t.Errorf("the rogue pod %s is labelled %q", name, got[name])
		}
	}
	if n := dialled.Load(); n != 0 {
		t.Errorf("the runtime connected to a rogue pod %d times", n)
	}
	ready, err := agent.ReadyMembers(context.Background(), c, ns, contract.AppPostgres, "pg")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ready {
		if p.Status.PodIP == rogueIP {
			t.Errorf("a rogue pod %s is a backup source", p.Name)
		}
	}
}

// otherStatefulSet is a StatefulSet that is not the cluster's, selecting
// the same labels; its controller reference.
func otherStatefulSet(t *testing.T, c kubernetes.Interface, ns string) []metav1.OwnerReference {
	t.Helper()
	sel := contract.Selector(contract.AppPostgres, "pg")
	one := int32(1)
	sts, err := c.AppsV1().StatefulSets(ns).Create(context.Background(), &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "impostor"},
		Spec: appsv1.StatefulSetSpec{Replicas: &one, Selector: &metav1.LabelSelector{MatchLabels: sel},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: sel},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: contract.PostgresContainer, Image: "postgres:15"}}}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return []metav1.OwnerReference{*metav1.NewControllerRef(sts, appsv1.SchemeGroupVersion.WithKind("StatefulSet"))}
}

// rogue creates a running, ready pod with the cluster's labels at ip.
func rogue(t *testing.T, c kubernetes.Interface, ns, name, ip string, owner []metav1.OwnerReference) {
	t.Helper()
	ctx := context.Background()
	pod, err := c.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: owner,
		Labels: contract.Selector(contract.AppPostgres, "pg")},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: contract.PostgresContainer, Image: "postgres:15"}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
	if _, err := c.CoreV1().Pods(ns).UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}
