package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/runtime/backup"
	"github.com/cairn-dev/cairn/testbed"
)

// The major upgrade in process, on real binaries of both majors:
// pgMajorUpgrade.
func TestPostgresMajorUpgrade13To15(t *testing.T) { pgMajorUpgrade(newBed(t)) }

// The major upgrade on a real node: the members in containers of the
// postgres-13 image, backups to the S3-protocol server, the pre-flight
// check Job in the pg_upgrade image (restoring the backup from S3 in its
// own pod), the offline pg_upgrade in the primary's pg-upgrade init
// container; once per sync engine (engines: Flux, Argo CD).
func TestRealNodePostgresMajorUpgrade13To15(t *testing.T) {
	engineTable(t, func(t *testing.T, start func(*testing.T, *testbed.ControlPlane) engine) {
		pgMajorUpgrade(newNodeBedWith(t, start, "postgres-13", "postgres-15", "postgres-upgrade-13-to-15"))
	})
}

// pgMajorUpgrade: a PostgreSQL 13 cluster of three with backups is moved
// to 15 through its step pull requests (the backup the upgrade is gated
// on, the pre-flight pg_upgrade --check on it in a Job, the offline
// pg_upgrade, the replicas cloned again), keeping every row; then the
// rollback its pull request names, the pinned pre-upgrade backup
// restored into a new cluster at 13, holds the same rows.
func pgMajorUpgrade(l *loop) {
	t := l.t
	const db, back = "pg-major", "pg-major-back"
	pg13, pg15 := l.version("postgres-13", "13.23"), l.version("postgres-15", "15.10")
	l.pgSecrets(db)
	l.pgSecrets(back)
	loc, store := l.backupLocation(db, back)
	policy := "  backup:\n    schedule: \"0 3 * * *\"\n    storageLocation: \"" + loc + "\"\n"
	l.begin(l.pgSpecAt(db, 3, pg13, policy), []string{db, back})
	l.create(db)
	l.eventually("a primary and two replicas at 13", func() error { _, err := l.primaryOf(db, 3); return err })
	l.noDrift("at 13")
	qs := []string{"CREATE TABLE orders (id int primary key)"}
	for i := range 50 {
		qs = append(qs, fmt.Sprintf("INSERT INTO orders VALUES (%d)", i))
	}
	l.rwExec(db, qs...)
	if _, major, err := l.rwCount(db); err != nil || major != 13 {
		t.Fatalf("before the upgrade: PostgreSQL %d, %v", major, err)
	}

	start := time.Now()
	l.editSpec(l.pgSpecAt(db, 3, pg15, policy))
	steps := l.converge(db, nil)
	took := time.Since(start)
	joined := strings.Join(steps, " ")
	for _, want := range []string{"backup", "upgrade-check", "major"} {
		if !strings.Contains(joined, want) {
			t.Errorf("the upgrade's steps %v have no %q step", steps, want)
		}
	}
	l.eventually("a primary and two replicas at 15", func() error { _, err := l.primaryOf(db, 3); return err })
	if l.node == nil {
		// Every member, not only the primary behind -rw: the test reaches
		// each member at its own address in process only; on a real node
		// it reaches the cluster as an application does.
		roles, err := l.roles(db)
		if err != nil {
			t.Fatal(err)
		}
		for pod := range roles {
			if major := l.pgMajor(db, pod); major != 15 {
				t.Errorf("%s runs PostgreSQL %d after the upgrade", pod, major)
			}
		}
	}
	if n, major, err := l.rwCount(db); err != nil || n != 50 || major != 15 {
		t.Fatalf("after the upgrade: %d orders at PostgreSQL %d (%v), want 50 at 15", n, major, err)
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
	all, err := backup.List(l.ctx, store, db)
	if err != nil {
		t.Fatal(err)
	}
	pinned := backup.Pinned(all)
	if len(pinned) != 1 || !strings.HasPrefix(pinned[0].Version, "13.") {
		t.Fatalf("pinned backups %+v, want the one pre-upgrade backup of 13", pinned)
	}
	l.editSpec(l.pgSpecAt(back, 2, pg13, fmt.Sprintf("  restoreFrom:\n    storageLocation: %q\n    cluster: %s\n    backup: %s\n    trustForeignBucket: true\n", loc, db, pinned[0].ID)))
	l.create(back)
	l.eventually("the rolled back cluster's primary and replica", func() error { _, err := l.primaryOf(back, 2); return err })
	if n, major, err := l.rwCount(back); err != nil || n != 50 || major != 13 {
		t.Fatalf("the rolled back cluster: %d orders at PostgreSQL %d (%v), want 50 at 13", n, major, err)
	}
	t.Logf("13 -> 15 steps %v in %.1fs; from each merge to the next pull request: %s", steps, took.Seconds(), strings.Join(l.timings, ", "))
}
