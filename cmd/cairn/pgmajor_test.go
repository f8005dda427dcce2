package main

import (
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/publish"
	"github.com/cairn-dev/cairn/runtime/backup"
	"github.com/cairn-dev/cairn/testbed"
)

// withBackups gives a PostgreSQL spec file a backup policy to dir.
func withBackups(s map[string]string, name, dir string) map[string]string {
	s["clusters/"+name+".yaml"] += "  backup:\n    schedule: \"0 3 * * *\"\n    storageLocation: \"file://" + dir + "\"\n"
	return s
}

// A major upgrade on real binaries, through the step pull requests: a
// PostgreSQL 13 cluster of three with backups is moved to 15 (the backup
// the upgrade is gated on, the pre-flight pg_upgrade --check on it in a
// Job, the offline pg_upgrade, the replicas cloned again), keeping every
// row; then the rollback its pull request names,
// the pinned pre-upgrade backup restored into a new cluster at 13, holds
// the same rows.
func TestPostgresMajorUpgrade13To15(t *testing.T) {
	const db, back = "pg-major", "pg-major-back"
	backups := t.TempDir()
	l := newLoop(t, withBackups(pgSpecAt(db, 3, "13.23"), db, backups))
	l.pgSecrets(db)
	l.pgSecrets(back)
	l.converge(db, func(step string) {
		if step == "create" {
			l.runRuntime(db)
		}
	})
	var primary string
	testbed.Eventually(t, "a primary and two replicas at 13", func() (err error) { primary, err = l.primaryOf(db, 3); return err })
	for i := range 50 {
		if err := l.pgWrite(db, primary, i); err != nil {
			t.Fatal(err)
		}
	}
	if major := l.pgMajor(db, primary); major != 13 {
		t.Fatalf("the cluster runs PostgreSQL %d before the upgrade", major)
	}

	l.editSpec(withBackups(pgSpecAt(db, 3, "15.10"), db, backups))
	steps := l.converge(db, nil)
	joined := strings.Join(steps, " ")
	for _, want := range []string{"backup", "upgrade-check", "major"} {
		if !strings.Contains(joined, want) {
			t.Errorf("the upgrade's steps %v have no %q step", steps, want)
		}
	}
	testbed.Eventually(t, "a primary and two replicas at 15", func() (err error) { primary, err = l.primaryOf(db, 3); return err })
	roles, err := l.roles(db)
	if err != nil {
		t.Fatal(err)
	}
	for pod := range roles {
		if major := l.pgMajor(db, pod); major != 15 {
			t.Errorf("%s runs PostgreSQL %d after the upgrade", pod, major)
		}
	}
	if n, err := l.pgCount(db, primary); err != nil || n != 50 {
		t.Fatalf("after the upgrade the primary holds %d orders (%v), want 50", n, err)
	}
	l.noDrift("after the upgrade")
	// The upgrade's step removed the pre-flight check's Job.
	job := contract.PGUpgradeCheckJob(db, 13, 15)
	if _, err := l.cp.Client(t).BatchV1().Jobs(l.ns).Get(l.ctx, job, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the check Job %s after the upgrade: %v", job, err)
	}
	// Each merged step's pull request says how it ended, once.
	for _, pr := range l.gh.PRs {
		if !strings.HasPrefix(pr.Head.Ref, "cairn/"+db+"/") || !pr.Merged {
			continue
		}
		if len(pr.Comments) != 1 || !strings.Contains(pr.Comments[0], "is done.") || !strings.Contains(pr.Body, "outcome=posted") {
			t.Errorf("merged pull request #%d (%s): outcome comments %q", pr.Number, pr.Head.Ref, pr.Comments)
		}
	}

	// The rollback: the backup the upgrade was gated on is pinned, and
	// restores at 13.
	all, err := backup.List(l.ctx, &backup.FileStore{Root: backups}, db)
	if err != nil {
		t.Fatal(err)
	}
	pinned := backup.Pinned(all)
	if len(pinned) != 1 || !strings.HasPrefix(pinned[0].Version, "13.") {
		t.Fatalf("pinned backups %+v, want the one pre-upgrade backup of 13", pinned)
	}
	copySpec := pgSpecAt(back, 2, "13.23")
	copySpec["clusters/"+back+".yaml"] += fmt.Sprintf("  restoreFrom:\n    storageLocation: \"file://%s\"\n    cluster: %s\n    backup: %s\n", backups, db, pinned[0].ID)
	l.editSpec(copySpec)
	l.converge(back, func(step string) {
		if step == "create" {
			l.runRuntime(back)
		}
	})
	var backPrimary string
	testbed.Eventually(t, "the rolled back cluster's primary and replica", func() (err error) { backPrimary, err = l.primaryOf(back, 2); return err })
	if major := l.pgMajor(back, backPrimary); major != 13 {
		t.Errorf("the rolled back cluster runs PostgreSQL %d", major)
	}
	if n, err := l.pgCount(back, backPrimary); err != nil || n != 50 {
		t.Fatalf("the rolled back cluster holds %d orders (%v), want 50", n, err)
	}
	t.Logf("13 -> 15 steps %v; from each merge to the next pull request: %s", steps, strings.Join(l.timings, ", "))
}

// pgMajor is the PostgreSQL major pod of cluster runs, 0 when it does
// not answer.
func (l *loop) pgMajor(cluster, pod string) int {
	ctx, c, done, err := l.pgConn(cluster, pod)
	if err != nil {
		l.t.Errorf("%s: %v", pod, err)
		return 0
	}
	defer done()
	var major int
	if err := c.QueryRow(ctx, "SELECT current_setting('server_version_num')::int / 10000").Scan(&major); err != nil {
		l.t.Errorf("%s: %v", pod, err)
	}
	return major
}

// A major upgrade pg_upgrade would refuse is found before any downtime:
// a PostgreSQL 13 cluster whose user table holds a regproc column, asked
// to go to 15, gets its backup and the pre-flight check; the check's Job
// fails with pg_upgrade's reason, which the merged check step's gate and
// `cairn status` show, and the offline upgrade's pull request never
// opens: the primary stays up, on 13, its rows all there.
func TestPostgresMajorUpgradeRefusedByItsCheck(t *testing.T) {
	const db = "pg-refused"
	backups := t.TempDir()
	l := newLoop(t, withBackups(pgSpecAt(db, 1, "13.23"), db, backups))
	l.pgSecrets(db)
	l.converge(db, func(step string) {
		if step == "create" {
			l.runRuntime(db)
		}
	})
	var primary string
	testbed.Eventually(t, "a primary at 13", func() (err error) { primary, err = l.primaryOf(db, 1); return err })
	for i := range 10 {
		if err := l.pgWrite(db, primary, i); err != nil {
			t.Fatal(err)
		}
	}
	ctx, c, done, err := l.pgConn(db, primary)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, "CREATE TABLE handlers (id int, fn regproc); INSERT INTO handlers VALUES (1, 'now')"); err != nil {
		t.Fatal(err)
	}
	done()

	l.editSpec(withBackups(pgSpecAt(db, 1, "15.10"), db, backups))
	var steps []string
	var note string
	testbed.Eventually(t, "the check refuses the upgrade", func() error {
		o := l.pass()[db]
		if o.Action == publish.ActionOpened {
			if strings.Contains(o.Step, "major") {
				t.Fatalf("the offline upgrade's pull request opened: %s", o.Step)
			}
			l.mergeAndSync(db, o.Step)
			steps = append(steps, o.Step)
		}
		if note = o.Note; !strings.Contains(note, "reg* data types in user tables") {
			return fmt.Errorf("steps %v, last outcome %s %q", steps, o.Action, note)
		}
		return nil
	})
	if len(steps) != 2 || !strings.HasPrefix(steps[0], "backup-before-") || !strings.HasPrefix(steps[1], "pg-upgrade-check-") {
		t.Errorf("steps %v, want the backup and the check", steps)
	}
	for _, want := range []string{"pg_upgrade --check refused the upgrade", "public.handlers.fn", "delete the failed Job"} {
		if !strings.Contains(note, want) {
			t.Errorf("the held step's note does not say %q: %s", want, note)
		}
	}
	code, out, errOut := cairn(t, "status", db, "--repo", "file://"+l.bare, "--kubeconfig", l.cp.Kubeconfig(t), "--namespace", l.ns)
	t.Logf("cairn status:\n%s", out)
	if !strings.Contains(out+errOut, "reg* data types in user tables") {
		t.Errorf("cairn status (exit %d) does not show pg_upgrade's reason:\n%s%s", code, out, errOut)
	}
	for range 3 { // and stays held
		if o := l.pass()[db]; o.Action == publish.ActionOpened {
			t.Fatalf("a refused check let step %s open", o.Step)
		}
	}
	if major := l.pgMajor(db, primary); major != 13 {
		t.Errorf("the primary runs PostgreSQL %d", major)
	}
	if n, err := l.pgCount(db, primary); err != nil || n != 10 {
		t.Errorf("the primary holds %d orders (%v), want 10", n, err)
	}
}
