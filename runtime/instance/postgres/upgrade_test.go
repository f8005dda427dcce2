package postgres

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/runtime/instance/internal/instancetest"
	"github.com/cairn-dev/cairn/testbed"
)

// pg_upgrade on real binaries: from 13 (Debian 11's, beside 15) to 15,
// and from 15 to 15 (pg_upgrade accepts the same major), which keeps its
// mechanics tested when the suite runs on another major.
func TestPgUpgradeKeepsRowsAndTheOldDirectory(t *testing.T) {
	for _, c := range []struct{ from, to int }{{13, 15}, {15, 15}} {
		t.Run(fmt.Sprintf("%d-to-%d", c.from, c.to), func(t *testing.T) {
			upgradeKeepsRows(t, c.from, c.to)
		})
	}
}

func upgradeKeepsRows(t *testing.T, from, to int) {
	ctx := context.Background()
	oldBin, newBin := testbed.PostgresBinFor(t, from), testbed.PostgresBinFor(t, to)
	b := newPGBedAt(t, oldBin)
	m := b.member(0, "new", 0)
	s := b.start(m, StartPrimary)
	if _, err := b.conn(0).Exec(ctx, "CREATE TABLE t (id int); INSERT INTO t SELECT generate_series(1, 42)"); err != nil {
		t.Fatal(err)
	}
	s.Kill() // as a pod stopped for the upgrade step might be: not cleanly

	u := &Upgrade{Name: m.Name, PGData: m.PGData, From: from, To: to, OldBin: oldBin, NewBin: newBin,
		ConfigFile: m.ConfigFile, SuperuserPassword: testSuperPW, Credential: b.cred, Log: instancetest.Logger(t)}
	if err := u.upgrade(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(b.dir, "pg-0", fmt.Sprintf("pgdata.pg%d", from), "PG_VERSION")); err != nil {
		t.Errorf("old data directory not kept aside: %v", err)
	}
	if v, err := os.ReadFile(filepath.Join(m.PGData, "PG_VERSION")); err != nil || strings.TrimSpace(string(v)) != strconv.Itoa(to) {
		t.Fatalf("the data directory is on %q after the upgrade to %d: %v", v, to, err)
	}
	b.bin = newBin
	up := b.member(0, "existing")
	b.start(up, StartPrimary)
	if n, err := b.count(ctx, 0); err != nil || n != 42 {
		t.Fatalf("after the upgrade: %d rows, %v", n, err)
	}
	var version int
	if err := b.conn(0).QueryRow(ctx, "SELECT current_setting('server_version_num')::int / 10000").Scan(&version); err != nil || version != to {
		t.Fatalf("the upgraded member runs %d, not %d: %v", version, to, err)
	}
	// Before 18, pg_upgrade keeps no statistics: the primary rebuilds them.
	if _, err := os.Stat(up.analyzeMarker()); err != nil {
		t.Fatalf("no request to rebuild the statistics: %v", err)
	}
	up.analyzeAfterUpgrade(ctx)
	var analyzed bool
	if err := b.conn(0).QueryRow(ctx, "SELECT last_analyze IS NOT NULL FROM pg_stat_user_tables WHERE relname = 't'").Scan(&analyzed); err != nil || !analyzed {
		t.Errorf("t analyzed: %v, %v", analyzed, err)
	}
	if _, err := os.Stat(up.analyzeMarker()); !os.IsNotExist(err) {
		t.Errorf("the marker stays after the statistics were rebuilt: %v", err)
	}
}

// An upgrade pg_upgrade --check refuses changes nothing: the old data
// directory stays where it was, on its major, and starts again.
func TestPgUpgradeCheckRefusalChangesNothing(t *testing.T) {
	ctx := context.Background()
	bin := testbed.PostgresBinFor(t, 15)
	b := newPGBedAt(t, bin)
	m := b.member(0, "new", 0)
	s := b.start(m, StartPrimary)
	// A prepared transaction left open: pg_upgrade --check refuses it.
	if _, err := b.conn(0).Exec(ctx, "CREATE TABLE t (id int); INSERT INTO t VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.conn(0).Exec(ctx, "ALTER SYSTEM SET max_prepared_transactions = 2"); err != nil {
		t.Fatal(err)
	}
	s.Stop()
	s = b.start(b.member(0, "existing"), StartPrimary)
	if _, err := b.conn(0).Exec(ctx, "BEGIN; INSERT INTO t VALUES (2); PREPARE TRANSACTION 'left-open'"); err != nil {
		t.Fatal(err)
	}
	s.Kill()

	u := &Upgrade{Name: m.Name, PGData: m.PGData, From: 15, To: 15, OldBin: bin, NewBin: bin,
		ConfigFile: m.ConfigFile, SuperuserPassword: testSuperPW, Credential: b.cred, Log: instancetest.Logger(t)}
	err := u.upgrade(ctx)
	if err == nil || !strings.Contains(err.Error(), "pg_upgrade --check refused the upgrade") || !strings.Contains(err.Error(), "unchanged") {
		t.Fatalf("an upgrade with a prepared transaction: %v", err)
	}
	next, old := u.paths()
	for _, p := range []string{next, old, filepath.Join(m.PGData, "global", "pg_control.old")} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("the refused upgrade left %s: %v", p, err)
		}
	}
	b.start(b.member(0, "existing"), StartPrimary)
	if n, err := b.count(ctx, 0); err != nil || n != 1 {
		t.Fatalf("after the refused upgrade: %d committed rows, %v", n, err)
	}
}

func TestPgUpgradeRunsOnlyWhereItShould(t *testing.T) {
	dir := t.TempDir()
	write := func(member, version string) string {
		d := filepath.Join(dir, member)
		if version != "" {
			_ = os.MkdirAll(d, 0o700)
			_ = os.WriteFile(filepath.Join(d, "PG_VERSION"), []byte(version+"\n"), 0o600)
		}
		return d
	}
	tests := []struct {
		name, member, version, err string
	}{
		{"no data yet", "pg-0", "", ""},
		{"a replica waits to be cloned", "pg-1", "14", ""},
		{"already upgraded", "pg-0", "15", ""},
		{"another major", "pg-0", "13", "is on PostgreSQL 13; this upgrade goes from 14 to 15"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			u := &Upgrade{Name: tc.member, PGData: write(tc.name, tc.version), From: 14, To: 15, Log: instancetest.Logger(t)}
			err := u.Run(context.Background())
			if (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("err = %v, want %q", err, tc.err)
			}
		})
	}
}

func TestPgUpgradeFinishesAnInterruptedSwap(t *testing.T) {
	dir := t.TempDir()
	pgdata := filepath.Join(dir, "pgdata")
	next := pgdata + ".pg15-new"
	_ = os.MkdirAll(next, 0o700)
	_ = os.WriteFile(filepath.Join(next, "PG_VERSION"), []byte("15\n"), 0o600)
	_ = os.MkdirAll(filepath.Join(pgdata, "global"), 0o700)
	_ = os.WriteFile(filepath.Join(pgdata, "PG_VERSION"), []byte("14\n"), 0o600)
	_ = os.WriteFile(filepath.Join(pgdata, "global", "pg_control.old"), nil, 0o600)
	u := &Upgrade{Name: "pg-0", PGData: pgdata, From: 14, To: 15, Log: instancetest.Logger(t)}
	if err := u.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if v, _ := os.ReadFile(filepath.Join(pgdata, "PG_VERSION")); strings.TrimSpace(string(v)) != "15" {
		t.Errorf("PGDATA holds %q", v)
	}
	if _, err := os.Stat(filepath.Join(pgdata+".pg14", "global", "pg_control.old")); err != nil {
		t.Errorf("old directory not kept: %v", err)
	}
}

// From PostgreSQL 18 on, pg_upgrade carries the statistics over: nothing
// to rebuild.
func TestNoStatisticsRebuildFrom18(t *testing.T) {
	dir := t.TempDir()
	for _, to := range []int{17, 18} {
		u := &Upgrade{Name: "pg-0", PGData: filepath.Join(dir, "pgdata"), From: to - 1, To: to, Log: instancetest.Logger(t)}
		if err := u.markAnalyze(); err != nil {
			t.Fatal(err)
		}
		_, err := os.Stat(filepath.Join(dir, analyzePending))
		if got := err == nil; got != (to < 18) {
			t.Errorf("to %d: marker written %v", to, got)
		}
		_ = os.Remove(filepath.Join(dir, analyzePending))
	}
}
