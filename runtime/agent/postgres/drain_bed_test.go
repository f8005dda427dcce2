package postgres

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/testbed"
)

// A drain of the primary's node through the Eviction API, with the real
// kube-controller-manager keeping the PodDisruptionBudgets' status: the
// primary's eviction is refused (429) until the runtime, seeing its node
// cordoned, has switched over; then it passes. The budgets are built as
// the renderer renders them (renderer/disruption.go; its tests hold
// their shape).
func TestPostgresDrain(t *testing.T) {
	testbed.Require(t, testbed.TierIntegration, "PostgreSQL members")
	cp := testbed.StartWith(t, testbed.Options{ControllerManager: true})
	t.Run("the primary's node drained: a switchover, then its eviction passes; no row lost, no failover", func(t *testing.T) { drainPrimary(t, cp) })
	t.Run("no replica can take over: the eviction stays refused, the status says why", func(t *testing.T) { drainNoCandidate(t, cp) })
}

// onNodes binds member i's pod to node nodes[i] (created, schedulable),
// marks it ready, and renders the cluster's two budgets.
func (pc *pgCluster) onNodes(nodes []string) {
	ctx := context.Background()
	for _, n := range nodes {
		_, err := pc.c.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			pc.t.Fatal(err)
		}
	}
	for i := range pc.n {
		name := "pg-" + strconv.Itoa(i)
		err := pc.c.CoreV1().Pods(pc.ns).Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: name},
			Target: corev1.ObjectReference{Kind: "Node", Name: nodes[i]}}, metav1.CreateOptions{})
		if err != nil {
			pc.t.Fatal(err)
		}
		// The runtime labels the pods meanwhile.
		err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
			pod, err := pc.c.CoreV1().Pods(pc.ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue})
			_, err = pc.c.CoreV1().Pods(pc.ns).UpdateStatus(ctx, pod, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			pc.t.Fatal(err)
		}
	}
	sel := contract.Selector(contract.AppPostgres, "pg")
	always := policyv1.AlwaysAllow
	for name, b := range map[string]struct {
		roles []string
		min   int
	}{"pg": {[]string{contract.RoleReplica}, max(pc.n-2, 0)}, "pg-primary": {[]string{contract.RolePrimary, contract.RoleFenced}, 1}} {
		s := &metav1.LabelSelector{MatchLabels: sel, MatchExpressions: []metav1.LabelSelectorRequirement{{Key: contract.LabelRole, Operator: metav1.LabelSelectorOpIn, Values: b.roles}}}
		pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: new(intstr.FromInt32(int32(b.min))), Selector: s, UnhealthyPodEvictionPolicy: &always}}
		if _, err := pc.c.PolicyV1().PodDisruptionBudgets(pc.ns).Create(ctx, pdb, metav1.CreateOptions{}); err != nil {
			pc.t.Fatal(err)
		}
	}
	pc.waitFor("the primary's budget observed", func() error {
		b, err := pc.c.PolicyV1().PodDisruptionBudgets(pc.ns).Get(ctx, "pg-primary", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if b.Status.ObservedGeneration != b.Generation || b.Status.CurrentHealthy != 1 || b.Status.DisruptionsAllowed != 0 {
			return fmt.Errorf("status %+v", b.Status)
		}
		return nil
	})
}

func (pc *pgCluster) cordon(node string) {
	_, err := pc.c.CoreV1().Nodes().Patch(context.Background(), node, types.MergePatchType, []byte(`{"spec":{"unschedulable":true}}`), metav1.PatchOptions{})
	if err != nil {
		pc.t.Fatal(err)
	}
}

// evict asks the Eviction API to evict member ord's pod, as kubectl
// drain does.
func (pc *pgCluster) evict(ord int) error {
	name := "pg-" + strconv.Itoa(ord)
	return pc.c.CoreV1().Pods(pc.ns).EvictV1(context.Background(), &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: pc.ns}})
}

// setUpWithControllers is setUp where kube-controller-manager runs: the
// members' StatefulSet (n members, all at once, OnDelete) makes the
// pods, as in a cluster, and the bed gives them their status as a
// kubelet would.
func setUpWithControllers(t *testing.T, cp *testbed.ControlPlane, n int) (*pgCluster, context.Context) {
	ctx := context.Background()
	c := cp.Client(t)
	ns := cp.Namespace(t, fmt.Sprintf("pg%d", time.Now().UnixNano()%1e9))
	sel := contract.Selector(contract.AppPostgres, "pg")
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: contract.StatefulSet("pg")}, Spec: appsv1.StatefulSetSpec{
		Replicas: new(int32(n)), Selector: &metav1.LabelSelector{MatchLabels: sel}, PodManagementPolicy: appsv1.ParallelPodManagement,
		UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: sel},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: contract.PostgresContainer, Image: "postgres:15"}}}}}}
	if _, err := c.AppsV1().StatefulSets(ns).Create(ctx, sts, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err := c.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: contract.SuperuserSecret("pg")},
		Data: map[string][]byte{contract.SecretKeyPassword: []byte(superPW)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m := newMembers(t)
	pc := &pgCluster{t: t, c: c, ns: ns, m: m, n: n, nodes: make([]*pgNode, n), interval: 100 * time.Millisecond}
	t.Cleanup(pc.stopAll)
	for i := range n {
		name := "pg-" + strconv.Itoa(i)
		pc.waitFor(name+" made by the StatefulSet controller", func() error {
			_, err := c.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			return err
		})
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			pod, err := c.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			pod.Status.Phase, pod.Status.PodIP = corev1.PodRunning, m.ip(i)
			_, err = c.CoreV1().Pods(ns).UpdateStatus(ctx, pod, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return setUpOn(t, pc, 0, FailoverSettings{})
}

func drainPrimary(t *testing.T, cp *testbed.ControlPlane) {
	pc, ctx := setUpWithControllers(t, cp, 3)
	nodes := []string{pc.ns + "-a", pc.ns + "-b", pc.ns + "-c"}
	pc.onNodes(nodes)
	w := pc.sampleWriters(ctx)
	acks := startAckWriter(pc, 1)
	acks.waitRows(pc, "rows written", 50)
	old := pc.primary()
	if err := pc.evict(old); !apierrors.IsTooManyRequests(err) {
		t.Fatalf("evicting the primary pg-%d before its node is cordoned: %v, want 429", old, err)
	}
	pc.cordon(nodes[old])
	pc.waitFor("the primary's eviction passes", func() error {
		if err := pc.evict(old); err != nil {
			if !apierrors.IsTooManyRequests(err) {
				t.Fatalf("evicting pg-%d: %v", old, err)
			}
			return err
		}
		return nil
	})
	// Evicted once another member is labelled primary: the old one
	// fenced (stopping) or a replica.
	got := labels(t, pc.c, pc.ns)
	if role := got[fmt.Sprintf("pg-%d", old)]; role == contract.RolePrimary || pc.primary() < 0 {
		t.Fatalf("pg-%d evicted while labelled %s (labels %v)", old, role, got)
	}
	pc.waitFor("another primary takes writes", func() error {
		if p := pc.primary(); p == old || p < 0 {
			return fmt.Errorf("primary pg-%d", p)
		}
		return pc.write(context.Background(), 3_000_000)
	})
	before := acks.count()
	acks.waitRows(pc, "rows written after the switchover", before+50)
	checkRows(t, pc, acks.finish())
	w.check(t)
	st := pc.status()
	if st.Failovers != 0 || st.LastSwitchover == nil || st.LastSwitchover.From != fmt.Sprintf("pg-%d", old) ||
		!strings.Contains(st.LastSwitchover.Reason, "node "+nodes[old]+" is draining") || st.SwitchoverDone != "" {
		t.Errorf("status %+v, last switchover %+v", st, st.LastSwitchover)
	}
	// The pod stays terminating (no kubelet here); its member goes as its
	// node's kubelet would stop it: cleanly.
	pc.cleanStop(old)
}

func drainNoCandidate(t *testing.T, cp *testbed.ControlPlane) {
	pc, _ := setUpWithControllers(t, cp, 2)
	node := pc.ns + "-a"
	pc.onNodes([]string{node, node})
	old := pc.primary()
	pc.cordon(node)
	pc.waitFor("the status says why there is no switchover", func() error {
		if msg := pc.status().Message; !strings.Contains(msg, "is draining, but no switchover") {
			return fmt.Errorf("status message %q", msg)
		}
		return nil
	})
	if err := pc.evict(old); !apierrors.IsTooManyRequests(err) {
		t.Errorf("evicting the primary pg-%d with no replica to take over: %v, want 429", old, err)
	}
	if p := pc.primary(); p != old {
		t.Errorf("primary pg-%d, want pg-%d still", p, old)
	}
}
