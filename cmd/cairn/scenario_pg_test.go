package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/publish"
	"github.com/cairn-dev/cairn/testbed"
)

// Walkthrough 3 in process, on real PostgreSQL servers behind the pods:
// pgWalkthrough.
func TestPostgresWalkthrough(t *testing.T) { pgWalkthrough(newBed(t)) }

// Walkthrough 3 on a real node, once per sync engine (engines: Flux,
// Argo CD): PostgreSQL members in containers of the postgres images make
// builds, cairn's runtime as its Deployment's pods, the real engine
// applying each step and reporting no drift (Argo CD: Synced and Healthy,
// with cairn's health check) at every settled point, the failover
// included; the minor upgrade goes from the 15 release before the newest
// to the newest, two images of Debian's packages.
func TestRealNodePostgresWalkthrough(t *testing.T) {
	engineTable(t, func(t *testing.T, start func(*testing.T, *testbed.ControlPlane) engine) {
		pgWalkthrough(newNodeBedWith(t, start, "postgres-15-previous", "postgres-15"))
	})
}

// pgWalkthrough: the create pull requests bring up a streaming primary
// and two replicas; 3 -> 5 through step pull requests, with a client
// writing through the -rw Service from then on. A minor upgrade rolls
// through the members one step at a time, replicas first, the primary
// handing over to an upgraded replica by a switchover step: no
// acknowledged write lost. The primary's server crashes once and comes
// back as the primary (a crash the runtime rides out). Then it is kept
// down (holdDown): the runtime fails over on its own, with no pull
// request, -rw follows the new primary, and once it is let up the old
// primary comes back as a replica; the next plan records the new primary
// without fighting the runtime; no drift.
func pgWalkthrough(l *loop) {
	t := l.t
	const shop = "pg-shop"
	from, to := l.version("postgres-15-previous", "15.10"), l.version("postgres-15", "15.11")
	l.pgSecrets(shop)
	l.begin(l.pgSpecAt(shop, 3, from, ""), []string{shop})
	steps := l.create(shop)
	var primary string
	l.eventually("a primary and two replicas", func() (err error) { primary, err = l.primaryOf(shop, 3); return err })
	created := time.Since(l.began)
	l.noDrift("once created")
	w := l.startPgWriter(shop)

	// 3 -> 5 with the writer running: one replica at a time, each cloned
	// from the primary.
	l.editSpec(l.pgSpecAt(shop, 5, from, ""))
	grow := l.converge(shop, nil)
	l.eventually("a primary and four replicas", func() (err error) { primary, err = l.primaryOf(shop, 5); return err })
	l.noDrift("at 5 members")

	// The minor upgrade, with the writer running.
	var upgrade string
	upgradeOutage := w.resumes(t, "the minor upgrade", func() { upgrade = l.minorUpgrade(shop, 5, primary, from, to) })
	l.eventually("a primary and four replicas at "+to, func() (err error) { primary, err = l.primaryOf(shop, 5); return err })
	if acked, lost := w.lost(l, shop); lost != 0 || acked == 0 {
		t.Fatalf("the minor upgrade lost %d of %d acknowledged writes", lost, acked)
	}
	l.runsByDigest(shop)
	l.noDrift("after the minor upgrade and its switchover")

	// One crash: the server is back before a failover is due.
	crashOutage := w.resumes(t, "one crash", func() { l.crash(primary) })
	l.noDrift("after the crash the runtime rode out")

	// Kept down: the runtime fails over.
	killed := time.Now()
	keep, release := l.holdDown(primary)
	var next string
	kills := 0
	l.eventually("a new primary behind -rw", func() error {
		if next == "" && keep() {
			kills++
		}
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
		return nil
	})
	failoverOutage := w.resumes(t, "the failover", func() {})
	took := time.Since(killed)
	release()
	l.eventually("the old primary back as a replica", func() error {
		if o := l.pass()[shop]; o.Action == publish.ActionOpened {
			t.Fatalf("a pull request after the failover: %+v", o)
		}
		p, err := l.primaryOf(shop, 5)
		if err == nil && p != next {
			err = fmt.Errorf("primary %s, want %s", p, next)
		}
		return err
	})
	time.Sleep(2 * time.Second)
	acked, lost := w.stop(l, shop)
	if o := l.pass()[shop]; o.Status != plan.StatusConverged || len(l.openOf(shop)) != 0 {
		t.Fatalf("after the failover: %+v", o)
	}
	l.noDrift("after the failover")
	if acked == 0 {
		t.Fatal("no write was acknowledged")
	}
	t.Logf("steps %v, 3 -> 5 %v; %s, longest write outage %s; created in %.1fs; one crash: longest write outage %s; held down (%d kills): failover from %s to %s %.1fs from the first kill to writes again through -rw, longest write outage %s; %d writes acknowledged through -rw, %d lost, %d failed; from each merge (or spec push) to the next pull request: %s",
		steps, grow, upgrade, upgradeOutage, created.Seconds(), crashOutage, kills, primary, next, took.Seconds(), failoverOutage, acked, lost, w.failed, strings.Join(l.timings, ", "))
}

// Walkthrough 4 on PostgreSQL in process, the backups in a folder of the
// test's: pgBackupThenRestore.
func TestPostgresBackupThenRestore(t *testing.T) { pgBackupThenRestore(newBed(t)) }

// Walkthrough 4 on PostgreSQL on a real node: the base backups and the
// archived WAL go to the S3-protocol server from the pods (its address,
// keys and CA from the <cluster>-backup Secret), and the copy starts in
// its containers.
func TestRealNodePostgresBackupThenRestore(t *testing.T) {
	pgBackupThenRestore(newNodeBed(t, "postgres-15"))
}

// pgBackupThenRestore: the members' scheduled base backups (from a
// replica) and archived WAL go to the backup location, and a new cluster
// whose spec says restoreFrom with a target time starts with exactly the
// rows committed before the target.
func pgBackupThenRestore(l *loop) {
	t := l.t
	const src, dst = "pg-orders", "pg-orders-copy"
	version := l.version("postgres-15", "15.10")
	l.pgSecrets(src)
	l.pgSecrets(dst)
	loc, _ := l.backupLocation(src, dst)
	l.begin(l.pgSpecAt(src, 2, version, "  backup:\n    schedule: \""+l.backupSchedule()+"\"\n    storageLocation: \""+loc+"\"\n"), []string{src, dst})
	l.create(src)
	l.eventually("a primary and a replica", func() error { _, err := l.primaryOf(src, 2); return err })
	insert := func(from, to int) {
		var qs []string
		for i := from; i < to; i++ {
			qs = append(qs, fmt.Sprintf("INSERT INTO orders VALUES (%d)", i))
		}
		l.rwExec(src, qs...)
	}
	l.rwExec(src, "CREATE TABLE orders (id int primary key)")
	insert(0, 40)
	id := l.backupAfter(src, time.Now())
	// The members archive WAL (the backup policy brings it): 10 orders
	// after the backup, before the target, 10 after it, then the segment
	// switched and archived.
	insert(40, 50)
	time.Sleep(20 * time.Millisecond)
	target := time.Now().UTC().Format(time.RFC3339Nano)
	time.Sleep(20 * time.Millisecond)
	insert(50, 60)
	l.rwArchived(src)
	if dir, ok := strings.CutPrefix(loc, "file://"); ok {
		// By hand, from the test's process: only in process are the
		// backups a folder of the test's; on a real node they are in the
		// S3-protocol server, whose settings only the pods are given.
		byHandToATarget(t, dir, src, target)
	}

	l.editSpec(l.pgSpecAt(dst, 2, version, "  restoreFrom:\n    storageLocation: \""+loc+"\"\n    cluster: "+src+"\n    targetTime: \""+target+"\"\n    trustForeignBucket: true\n"))
	l.create(dst)
	l.eventually("the copy's primary and replica", func() error { _, err := l.primaryOf(dst, 2); return err })
	if n, _, err := l.rwCount(dst); err != nil || n != 50 {
		t.Fatalf("the copy restored to %s holds %d orders (%v), want the 50 committed before it", target, n, err)
	}
	l.noDrift("at the end")
	t.Logf("backup %s to %s; the copy restored to %s holds the 50 orders committed before it, of 60", id, loc, target)
}
