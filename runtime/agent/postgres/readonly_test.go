package postgres

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/spec"
	"github.com/cairn-dev/cairn/runtime/agent"
	"github.com/cairn-dev/cairn/testbed"
	"github.com/cairn-dev/cairn/testbed/agentbed"
)

// A PostgreSQL runtime writes nothing under a read-only root
// (agentbed.ReadOnlyRoot): one member, which it labels primary.
func TestTheRuntimeWritesNothingUnderAReadOnlyRoot(t *testing.T) {
	testbed.Require(t, testbed.TierIntegration, "PostgreSQL members")
	agentbed.ReadOnlyRoot(t, agentbed.ReadOnlyCase{Kind: spec.PostgresKind, Cluster: "pg", World: readOnlyWorld,
		Keeper: func(member string) agent.KeeperFactory {
			port, _ := strconv.Atoi(member[strings.LastIndexByte(member, ':')+1:])
			return Config{Port: port}.Keeper
		},
		Kept: func(t *testing.T, c kubernetes.Interface, ns string) error {
			if got := labels(t, c, ns); got["pg-0"] != contract.RolePrimary {
				return fmt.Errorf("labels %v", got)
			}
			return nil
		}})
}

// readOnlyWorld is one PostgreSQL member behind a ready pod pg-0, with
// the superuser's and the replication user's Secrets.
func readOnlyWorld(t *testing.T, cp *testbed.ControlPlane, ns string) string {
	c := cp.Client(t)
	ctx := context.Background()
	m := newMembers(t)
	m.start(0, "new", 0)
	pods(t, c, ns, m, 1)
	pod, err := c.CoreV1().Pods(ns).Get(ctx, "pg-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	if _, err := c.CoreV1().Pods(ns).UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: contract.ReplicationSecret("pg")},
		Data: map[string][]byte{contract.SecretKeyPassword: []byte(replPW)}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return m.ip(0) + ":" + strconv.Itoa(m.port)
}
