package agent

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-dev/cairn/runtime/backup"
)

// replicationUser is the PostgreSQL role with the REPLICATION attribute
// that the instance manager creates; base backups use it.
const replicationUser = "replicator"

// source picks the member to back up from: for PostgreSQL a ready
// replica when there is one, else the primary (a backup never waits for a
// replica); for etcd any ready member, the highest ordinal first.
func (b *Backups) source(ctx context.Context) (backup.Source, string, error) {
	app := "etcd"
	if b.Postgres {
		app = "postgresql"
	}
	pods, err := b.Client.CoreV1().Pods(b.Namespace).List(ctx, metav1.ListOptions{LabelSelector: labelName + "=" + app + "," + labelInstance + "=" + b.Cluster})
	if err != nil {
		return nil, "", fmt.Errorf("list members: %w", err)
	}
	ready := slices.DeleteFunc(pods.Items, func(p corev1.Pod) bool { return !podReady(&p) || p.Status.PodIP == "" })
	slices.SortFunc(ready, func(a, b corev1.Pod) int { return podRank(b) - podRank(a) })
	if !b.Postgres {
		if len(ready) == 0 {
			return nil, "", errNoMember
		}
		p := ready[0]
		return backup.EtcdSource{Member: p.Name, Endpoint: "http://" + p.Status.PodIP + ":" + strconv.Itoa(cmp.Or(b.EtcdPort, 2379))}, "EtcdCluster", nil
	}
	var pick *corev1.Pod
	for _, role := range []string{RoleReplica, RolePrimary} {
		if i := slices.IndexFunc(ready, func(p corev1.Pod) bool { return p.Labels[LabelRole] == role }); i >= 0 {
			pick = &ready[i]
			break
		}
	}
	if pick == nil {
		return nil, "", errNoMember
	}
	secret, err := b.Client.CoreV1().Secrets(b.Namespace).Get(ctx, b.Cluster+"-replication", metav1.GetOptions{})
	if err != nil {
		return nil, "", fmt.Errorf("read the replication password: %w", err)
	}
	return backup.PostgresSource{Member: pick.Name, Host: pick.Status.PodIP, Port: cmp.Or(b.PostgresPort, 5432),
		User: replicationUser, Password: string(secret.Data["password"])}, "PostgresCluster", nil
}

// podRank orders members by ordinal.
func podRank(p corev1.Pod) int {
	for i := len(p.Name) - 1; i >= 0; i-- {
		if p.Name[i] == '-' {
			n, _ := strconv.Atoi(p.Name[i+1:])
			return n
		}
	}
	return 0
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
