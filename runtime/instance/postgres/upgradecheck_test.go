package postgres

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/runtime/backup"
	"github.com/cairn-dev/cairn/runtime/instance/internal/instancetest"
	"github.com/cairn-dev/cairn/testbed"
)

// The pre-flight check on real binaries: a 13 primary's base backup,
// checked for 13 -> 15 by 15's pg_upgrade, passes; once a user table
// holds a regproc column (which pg_upgrade cannot carry) and a new backup
// is taken, the check fails with pg_upgrade's own reason. The primary
// runs on throughout, its data directory untouched.
func TestPgUpgradeCheckOnABaseBackup(t *testing.T) {
	ctx := context.Background()
	oldBin, newBin := testbed.PostgresBinFor(t, 13), testbed.PostgresBinFor(t, 15)
	stores := t.TempDir()
	b := newPGBedAt(t, oldBin)
	b.start(b.member(0, "new"), StartPrimary)
	if _, err := b.conn(0).Exec(ctx, "CREATE TABLE t (id int); INSERT INTO t SELECT generate_series(1, 42)"); err != nil {
		t.Fatal(err)
	}
	take := func() backup.Manifest {
		t.Helper()
		src := backup.PostgresSource{Member: "pg-0", Host: instancetest.HostOf(0), Port: b.ports[0], User: ReplicationUser, Password: testReplPW}
		m, err := backup.Take(ctx, &backup.FileStore{Root: stores}, "db", "PostgresCluster", src, time.Now)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	take()
	work := filepath.Join(b.dir, "scratch")
	check := &UpgradeCheck{Cluster: "db", Location: "file://" + stores, Backup: contract.RestoreLatest,
		From: 13, To: 15, OldBin: oldBin, NewBin: newBin, Work: work,
		ConfigFile: filepath.Join(b.dir, "postgresql.conf"), Credential: b.cred, Log: instancetest.Logger(t)}
	if err := check.Run(ctx); err != nil {
		t.Fatalf("the check of a clean 13 cluster: %v", err)
	}
	for _, d := range []string{"old", "new"} {
		if _, err := os.Stat(filepath.Join(work, d)); !os.IsNotExist(err) {
			t.Errorf("a passed check left %s: %v", d, err)
		}
	}

	if _, err := b.conn(0).Exec(ctx, "CREATE TABLE refused (id int, fn regproc); INSERT INTO refused VALUES (1, 'now')"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond) // backup IDs are per second
	refused := take()
	err := check.Run(ctx)
	if !errors.Is(err, ErrUpgradeRefused) {
		t.Fatalf("the check of a cluster with a regproc column: %v", err)
	}
	t.Logf("the refusal: %v", err)
	for _, want := range []string{"reg* data types in user tables", "refused", refused.ID, "from 13 to 15"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal does not say %q: %v", want, err)
		}
	}
	if n, err := b.count(ctx, 0); err != nil || n != 42 {
		t.Fatalf("the primary after the checks: %d rows, %v", n, err)
	}

	// The check needs a backup of the major being upgraded.
	wrong := *check
	wrong.From, wrong.OldBin = 14, newBin
	if err := wrong.Run(ctx); err == nil || !strings.Contains(err.Error(), "not 14") {
		t.Fatalf("a check from 14 on a 13 backup: %v", err)
	}
	none := *check
	none.Cluster = "other"
	if err := none.Run(ctx); err == nil || !strings.Contains(err.Error(), "no complete backup") {
		t.Fatalf("a check without a backup: %v", err)
	}
}

// findings keeps pg_upgrade's refusal from its failed check on, with the
// head of the problem list it names, and says something when it printed
// nothing.
func TestUpgradeCheckFindings(t *testing.T) {
	dir := t.TempDir()
	list := filepath.Join(dir, "tables_using_reg.txt")
	if err := os.WriteFile(list, []byte("In database: postgres\n  public.t.fn\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	refused := "Checking cluster versions                                   ok\n" +
		"Checking for reg* data types in user tables                 fatal\n\n" +
		"Your installation contains one of the reg* data types in user tables.\n" +
		"A list of the problem columns is in the file:\n    " + list + "\n\nFailure, exiting\n"
	tests := []struct {
		name, out string
		want, not []string
	}{
		{"a failed check", refused, []string{"reg* data types in user tables", "tables_using_reg.txt:\nIn database: postgres\n  public.t.fn"}, []string{"Checking cluster versions"}},
		{"no fatal line", "could not connect to source postmaster\n", []string{"could not connect to source postmaster"}, nil},
		{"nothing printed", "", []string{"exit status 1"}, nil},
		{"a list that is gone", strings.ReplaceAll(refused, list, filepath.Join(dir, "gone.txt")), []string{"reg* data types"}, []string{"gone.txt:"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := findings(tc.out, errors.New("exit status 1"))
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("findings do not say %q:\n%s", w, got)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(got, n) {
					t.Errorf("findings say %q:\n%s", n, got)
				}
			}
			if len(got) > contract.TerminationMessageMax {
				t.Errorf("findings are %d bytes", len(got))
			}
		})
	}
}
