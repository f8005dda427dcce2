package postgres

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/runtime/backup"
	"github.com/cairn-dev/cairn/testbed"
	"github.com/cairn-dev/cairn/testbed/agentbed"
)

// A PostgreSQL backup is taken from a ready replica when there is one,
// else from the primary, as the replication user.
func TestPostgresBackupSource(t *testing.T) {
	cp := testbed.Start(t)
	c, ns := cp.Client(t), cp.Namespace(t, "pgsrc")
	ctx := context.Background()
	if _, err := c.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: contract.ReplicationSecret("db")},
		Data: map[string][]byte{contract.SecretKeyPassword: []byte("r3pl")}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := func(name, role, ip string, ready bool) {
		member := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name,
			Labels: map[string]string{contract.LabelName: contract.AppPostgres, contract.LabelInstance: "db", contract.LabelRole: role}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: contract.PostgresContainer, Image: "postgres"}}}}
		agentbed.OwnedByStatefulSet(t, c, ns, "db", member)
		p, err := c.CoreV1().Pods(ns).Create(ctx, member, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		st := corev1.ConditionFalse
		if ready {
			st = corev1.ConditionTrue
		}
		p.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: st}}}
		if _, err := c.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	r := &Roles{Client: c, Namespace: ns, Cluster: "db", Port: 5433}
	pod("db-0", contract.RolePrimary, "127.0.0.1", true)
	pod("db-1", contract.RoleReplica, "127.0.0.2", false)
	for i, want := range []string{"db-0", "db-2"} {
		if i == 1 {
			pod("db-2", contract.RoleReplica, "127.0.0.3", true) // a ready replica is preferred
		}
		src, kind, err := r.BackupSource(ctx)
		if err != nil {
			t.Fatal(err)
		}
		pg, ok := src.(backup.PostgresSource)
		if !ok || kind != "PostgresCluster" || pg.Member != want || pg.User != "replicator" || pg.Password != "r3pl" || pg.Port != 5433 {
			t.Fatalf("source %+v %s, want %s", src, kind, want)
		}
	}
}
