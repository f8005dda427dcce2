package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/publish"
	"github.com/cairn-dev/cairn/testbed"
)

// withBackups gives a PostgreSQL spec file a backup policy to dir.
func withBackups(s map[string]string, name, dir string) map[string]string {
	s["clusters/"+name+".yaml"] += "  backup:\n    schedule: \"0 3 * * *\"\n    storageLocation: \"file://" + dir + "\"\n"
	return s
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
	l.create(db)
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
