package main

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/cairn-dev/cairn/runtime/backup"
	"github.com/cairn-dev/cairn/runtime/wal"
)

const pgSuper = "walkthrough-super"

func pgSpecAt(name string, instances int, version string) map[string]string {
	return map[string]string{"clusters/" + name + ".yaml": fmt.Sprintf(`apiVersion: "db.example.com/v1alpha1"
kind: "PostgresCluster"
metadata:
  name: %q
spec:
  version: %q
  instances: %d
  storage: "1Gi"
`, name, version, instances)}
}

// roles are the members' role labels, by pod, and whether each is ready
// (the runtime's pods, on a real node, are not members).
func (l *loop) roles(cluster string) (map[string]string, error) {
	return podRoles(l.ctx, l.cp.Client(l.t), l.ns, cluster)
}

// podRoles is roles through the client c.
func podRoles(ctx context.Context, c kubernetes.Interface, ns, cluster string) (map[string]string, error) {
	pods, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/component=database,app.kubernetes.io/instance=" + cluster})
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, p := range pods.Items {
		ready := false
		for _, c := range p.Status.Conditions {
			ready = ready || c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue
		}
		out[p.Name] = p.Labels["cairn.dev/role"]
		if !ready {
			out[p.Name] += "(not ready)"
		}
	}
	return out, nil
}

// primaryOf is the pod labelled primary when the cluster has exactly one
// primary and every other member is a ready replica.
func (l *loop) primaryOf(cluster string, n int) (string, error) {
	roles, err := l.roles(cluster)
	if err != nil {
		return "", err
	}
	primary, replicas := "", 0
	for pod, role := range roles {
		switch role {
		case "primary":
			primary = pod
		case "replica":
			replicas++
		}
	}
	if primary == "" || replicas != n-1 || len(roles) != n {
		return "", fmt.Errorf("roles %v", roles)
	}
	return primary, nil
}

// pgConn connects to a member of cluster as the superuser, within 3 s.
func (l *loop) pgConn(cluster, pod string) (context.Context, *pgx.Conn, func(), error) {
	var o int
	fmt.Sscan(pod[strings.LastIndexByte(pod, '-')+1:], &o)
	ctx, cancel := context.WithTimeout(l.ctx, 3*time.Second)
	c, err := l.pg.Conn(ctx, cluster, o)
	if err != nil {
		cancel()
		return nil, nil, nil, err
	}
	return ctx, c, func() { c.Close(context.Background()); cancel() }, nil
}

func (l *loop) pgWrite(cluster, pod string, id int) error {
	ctx, c, done, err := l.pgConn(cluster, pod)
	if err != nil {
		return err
	}
	defer done()
	if _, err := c.Exec(ctx, "CREATE TABLE IF NOT EXISTS orders (id int primary key)"); err != nil {
		return err
	}
	_, err = c.Exec(ctx, "INSERT INTO orders VALUES ($1)", id)
	return err
}

func (l *loop) pgCount(cluster, pod string) (int, error) {
	ctx, c, done, err := l.pgConn(cluster, pod)
	if err != nil {
		return 0, err
	}
	defer done()
	var n int
	err = c.QueryRow(ctx, "SELECT count(*) FROM orders").Scan(&n)
	return n, err
}

func (l *loop) pgSecrets(cluster string) {
	for name, pw := range map[string]string{cluster + "-superuser": pgSuper, cluster + "-replication": "walkthrough-repl"} {
		if _, err := l.cp.Client(l.t).CoreV1().Secrets(l.ns).Create(l.ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name},
			Data: map[string][]byte{"password": []byte(pw)}}, metav1.CreateOptions{}); err != nil {
			l.t.Fatal(err)
		}
	}
}

// byHandToATarget: cairn restore --target-time leaves a data directory
// that recovers to target with cairn backup wal-fetch, whose fetches
// exit as PostgreSQL reads them; a target before every backup is refused
// with nothing left behind.
func byHandToATarget(t *testing.T, backups, cluster, target string) {
	t.Helper()
	loc := "file://" + backups
	dir := filepath.Join(t.TempDir(), "pgdata")
	code, out, errOut := cairn(t, "restore", "--location", loc, "--cluster", cluster, "--kind", "PostgresCluster", "--data-dir", dir, "--target-time", target)
	if code != exitOK || !strings.Contains(out, "recovery to "+target+" prepared") {
		t.Fatalf("cairn restore --target-time: exit %d\n%s%s", code, out, errOut)
	}
	auto, err := os.ReadFile(filepath.Join(dir, "postgresql.auto.conf"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`restore_command = '(\S+) backup wal-fetch --location (\S+) --cluster (\S+) --system (\d+) %f %p'`).FindStringSubmatch(string(auto))
	if m == nil || m[2] != loc || m[3] != cluster || !strings.Contains(string(auto), "recovery_target_time = ") {
		t.Fatalf("postgresql.auto.conf:\n%s", auto)
	}
	if _, err := os.Stat(filepath.Join(dir, "recovery.signal")); err != nil {
		t.Fatal(err)
	}
	sys, _ := strconv.ParseUint(m[4], 10, 64)
	keys, err := (&backup.FileStore{Root: backups}).List(context.Background(), backup.WALPrefix(cluster, sys))
	if err != nil || len(keys) == 0 {
		t.Fatalf("the archive of %s: %v %v", cluster, keys, err)
	}
	seg := strings.TrimSuffix(path.Base(keys[len(keys)-1]), ".gz")
	fetched := filepath.Join(dir, "pg_wal", "RECOVERYXLOG")
	for _, c := range []struct {
		name string
		code int
	}{{seg, 0}, {"0000000900000000000000FF", wal.ExitMissing}} {
		if code, _, errOut := cairn(t, "backup", "wal-fetch", "--location", loc, "--cluster", cluster, "--system", m[4], c.name, fetched); code != c.code {
			t.Errorf("wal-fetch %s: exit %d, want %d: %s", c.name, code, c.code, errOut)
		}
	}
	if fi, err := os.Stat(fetched); err != nil || fi.Size() != 16<<20 {
		t.Errorf("fetched %s: %v %v", seg, fi, err)
	}
	early := filepath.Join(t.TempDir(), "pgdata")
	if code, _, errOut := cairn(t, "restore", "--location", loc, "--cluster", cluster, "--kind", "PostgresCluster", "--data-dir", early, "--target-time", "2020-01-01T00:00:00Z"); code == exitOK || !strings.Contains(errOut, "no complete backup that finished before") {
		t.Errorf("a target before every backup: exit %d: %s", code, errOut)
	}
	if _, err := os.Stat(early); !os.IsNotExist(err) {
		t.Errorf("a refused restore left %s", early)
	}
}
