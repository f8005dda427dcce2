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

	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/publish"
	"github.com/cairn-dev/cairn/runtime/backup"
	"github.com/cairn-dev/cairn/runtime/wal"
	"github.com/cairn-dev/cairn/testbed"
)

const pgSuper = "walkthrough-super"

func pgSpecFile(name string, instances int) map[string]string {
	return pgSpecAt(name, instances, "15.10")
}

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
	pods, err := l.cp.Client(l.t).CoreV1().Pods(l.ns).List(l.ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/component=database,app.kubernetes.io/instance=" + cluster})
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

// Walkthrough 3: the create pull requests bring up a streaming primary
// and two replicas on real PostgreSQL; 3 -> 5 through step pull requests;
// a minor upgrade replicas first, a switchover step, the old primary
// last; then the primary's server is killed (and held down) and the
// runtime fails over on its own, with no pull request; the old primary
// rejoins as a replica and the next plan records the new primary without
// fighting the runtime; no drift.
func TestPostgresWalkthrough(t *testing.T) {
	const shop = "pg-shop"
	l := newLoop(t, pgSpecFile(shop, 3))
	l.pgSecrets(shop)
	steps := l.converge(shop, func(step string) {
		if step == "create" {
			l.runRuntime(shop)
		}
	})
	var primary string
	testbed.Eventually(t, "a primary and two replicas", func() (err error) { primary, err = l.primaryOf(shop, 3); return err })

	// 3 -> 5: one replica at a time, each cloned from the primary.
	l.editSpec(pgSpecAt(shop, 5, "15.10"))
	grow := l.converge(shop, nil)
	testbed.Eventually(t, "a primary and four replicas", func() (err error) { primary, err = l.primaryOf(shop, 5); return err })
	// A minor upgrade: replicas first, a switchover, the old primary last.
	l.editSpec(pgSpecAt(shop, 5, "15.11"))
	upgrade := l.converge(shop, nil)
	testbed.Eventually(t, "a primary and four replicas after the upgrade", func() (err error) { primary, err = l.primaryOf(shop, 5); return err })
	t.Logf("3 -> 5: %v; 15.10 -> 15.11: %v", grow, upgrade)
	if err := l.pgWrite(shop, primary, 1); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	if err := l.pg.KillPostmaster(primary); err != nil {
		t.Fatal(err)
	}
	var next string
	testbed.Eventually(t, "a new primary taking writes", func() error {
		if o := l.pass()[shop]; o.Action == publish.ActionOpened {
			t.Fatalf("a pull request during the failover: %+v", o)
		}
		roles, err := l.roles(shop)
		if err != nil {
			return err
		}
		for pod, role := range roles {
			if role == "primary" && pod != primary {
				next = pod
			}
		}
		if next == "" {
			return fmt.Errorf("roles %v", roles)
		}
		return l.pgWrite(shop, next, 2)
	})
	took := time.Since(killed)
	l.pg.Release(primary)
	testbed.Eventually(t, "the old primary back as a replica", func() error {
		if o := l.pass()[shop]; o.Action == publish.ActionOpened {
			t.Fatalf("a pull request after the failover: %+v", o)
		}
		p, err := l.primaryOf(shop, 5)
		if err == nil && p != next {
			err = fmt.Errorf("primary %s, want %s", p, next)
		}
		return err
	})
	if o := l.pass()[shop]; o.Status != plan.StatusConverged || len(l.openOf(shop)) != 0 {
		t.Fatalf("after the failover: %+v", o)
	}
	l.noDrift("after the failover")
	t.Logf("steps %v; failover from %s to %s: %.1fs from the kill to a write on the new primary; from each merge (or spec push) to the next pull request: %s",
		steps, primary, next, took.Seconds(), strings.Join(l.timings, ", "))
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

// Walkthrough 4 on PostgreSQL: a scheduled base backup runs on its cron
// tick (from a replica), and a new cluster bootstrapped from it holds the
// same rows.
func TestPostgresBackupThenRestore(t *testing.T) {
	const src, dst = "pg-orders", "pg-orders-copy"
	backups := t.TempDir()
	spec := pgSpecAt(src, 2, "15.10")
	spec["clusters/"+src+".yaml"] += "  backup:\n    schedule: \"*/2 * * * * *\"\n    storageLocation: \"file://" + backups + "\"\n"
	l := newLoop(t, spec)
	l.pgSecrets(src)
	l.pgSecrets(dst)
	l.converge(src, func(step string) {
		if step == "create" {
			l.runRuntime(src)
		}
	})
	var primary string
	testbed.Eventually(t, "a primary and a replica", func() (err error) { primary, err = l.primaryOf(src, 2); return err })
	for i := range 40 {
		if err := l.pgWrite(src, primary, i); err != nil {
			t.Fatal(err)
		}
	}
	l.backupAfter(src, time.Now())
	// The members archive WAL (the backup policy brings it): 10 orders
	// after the backup, before the target, 10 after it, then the segment
	// switched and archived.
	for i := 40; i < 50; i++ {
		if err := l.pgWrite(src, primary, i); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(20 * time.Millisecond)
	target := time.Now().UTC().Format(time.RFC3339Nano)
	time.Sleep(20 * time.Millisecond)
	for i := 50; i < 60; i++ {
		if err := l.pgWrite(src, primary, i); err != nil {
			t.Fatal(err)
		}
	}
	l.pgArchived(src, primary)
	byHandToATarget(t, backups, src, target)
	copySpec := pgSpecAt(dst, 2, "15.10")
	copySpec["clusters/"+dst+".yaml"] += "  restoreFrom:\n    storageLocation: \"file://" + backups + "\"\n    cluster: " + src + "\n    targetTime: \"" + target + "\"\n"
	l.editSpec(copySpec)
	l.converge(dst, func(step string) {
		if step == "create" {
			l.runRuntime(dst)
		}
	})
	var copyPrimary string
	testbed.Eventually(t, "the copy's primary and replica", func() (err error) { copyPrimary, err = l.primaryOf(dst, 2); return err })
	n, err := l.pgCount(dst, copyPrimary)
	if err != nil || n != 50 {
		t.Fatalf("the copy restored to %s holds %d orders (%v), want the 50 committed before it", target, n, err)
	}
	l.noDrift("at the end")
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

// pgArchived switches pod's WAL segment and waits until its archiver has
// archived it.
func (l *loop) pgArchived(cluster, pod string) {
	l.t.Helper()
	ctx, c, done, err := l.pgConn(cluster, pod)
	if err != nil {
		l.t.Fatal(err)
	}
	defer done()
	var seg string
	if err := c.QueryRow(ctx, "SELECT pg_walfile_name(pg_switch_wal())").Scan(&seg); err != nil {
		l.t.Fatal(err)
	}
	testbed.Eventually(l.t, cluster+" archives "+seg, func() error {
		var last string
		if err := c.QueryRow(ctx, "SELECT coalesce(last_archived_wal, '') FROM pg_stat_archiver").Scan(&last); err != nil {
			return err
		}
		if last < seg {
			return fmt.Errorf("last archived %q", last)
		}
		return nil
	})
}
