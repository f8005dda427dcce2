package postgres

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	pginstance "github.com/cairn-dev/cairn/runtime/instance/postgres"
	"github.com/cairn-dev/cairn/testbed"
	"github.com/cairn-dev/cairn/testbed/promtest"
)

// A primary that cannot archive WAL (its archive folder is blocked by a
// file) is reported: the status names the segment, a Warning Event says
// what waits, the metrics say failing; once the archive works again, a
// Normal Event, the status cleared, the last archived time exported.
// Nothing in pg_wal is lost on the way: the segment that failed is
// archived once it can be.
func TestPostgresWALArchiveFailureIsReported(t *testing.T) {
	testbed.PerMajor(t) // its behaviour depends on the major: the PostgreSQL 13 pass runs it too
	testbed.Require(t, testbed.TierIntegration, "PostgreSQL members")
	cp := testbed.Start(t)
	ns := cp.Namespace(t, "pgarchive")
	pc := newPgCluster(t, cp, ns, 1, 30*time.Second)
	root := t.TempDir()
	block := filepath.Join(root, "archive")
	if err := os.WriteFile(block, []byte("not a folder"), 0o644); err != nil {
		t.Fatal(err)
	}
	client := testbed.WALClient(t)
	pc.member = func(p *pginstance.Manager) {
		socket := filepath.Join(filepath.Dir(p.PGData), ".s.cairn-wal")
		p.Cluster, p.Config.ArchiveLocation = "pg", "file://"+block
		p.WALSocket, p.WALCommand = socket, client+" --socket "+socket
		p.Settings["archive_mode"] = "on"
		p.Settings["archive_command"] = p.WALCommand + " push %f %p"
		p.Settings["archive_timeout"] = "1"
		p.Settings["max_wal_size"], p.Settings["wal_keep_size"] = "256MB", "64MB"
	}
	pc.start()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pc.runtime(ctx, "runtime-a", FailoverSettings{}, nil)
	pc.waitFor("healthy", pc.healthy)
	pc.m.exec(0, "CREATE TABLE t (id int)")
	pc.m.exec(0, "SELECT pg_switch_wal()")

	failing := func() string { return pc.status().ArchiveFailing }
	pc.waitFor("the status names the failing segment", func() error {
		if f := failing(); f == "" {
			return fmt.Errorf("status %+v", pc.status())
		}
		return nil
	})
	segment := failing()
	pc.waitFor("a WALArchiveFailing Event", func() error { return pc.event(ReasonWALArchiveFailing, segment) })
	series := promtest.Series(t, pc.metrics[0])
	if v := series[`cairn_postgres_wal_archive_failing{cluster="pg",member="pg-0"}`]; v != 1 {
		t.Errorf("failing gauge %v in %v", v, series)
	}
	if v := series[`cairn_postgres_wal_archive_pending_segments{cluster="pg",member="pg-0"}`]; v < 1 {
		t.Errorf("pending segments %v", v)
	}
	if v := series[`cairn_postgres_wal_bound_bytes{cluster="pg",member="pg-0"}`]; v != 320<<20 {
		t.Errorf("pg_wal's bound %v, want max_wal_size + wal_keep_size = %d", v, 320<<20)
	}

	// The folder unblocked: the next segment wakes the archiver.
	if err := os.Remove(block); err != nil {
		t.Fatal(err)
	}
	pc.m.exec(0, "INSERT INTO t VALUES (1)")
	pc.m.exec(0, "SELECT pg_switch_wal()")
	pc.waitFor("the archive works again", func() error {
		if f := failing(); f != "" {
			return fmt.Errorf("still failing at %s", f)
		}
		return pc.event(ReasonWALArchiveRecovered, "archives WAL again")
	})
	if _, err := os.Stat(filepath.Join(block, "_wal", "pg")); err != nil {
		t.Fatalf("nothing archived after the recovery: %v", err)
	}
	var archived bool
	_ = filepath.Walk(block, func(path string, _ os.FileInfo, _ error) error {
		archived = archived || strings.HasSuffix(path, segment+".gz")
		return nil
	})
	if !archived {
		t.Errorf("the segment that failed, %s, was never archived", segment)
	}
	if v := promtest.Series(t, pc.metrics[0])[`cairn_postgres_wal_last_archived_timestamp_seconds{cluster="pg",member="pg-0"}`]; time.Since(time.Unix(int64(v), 0)) > time.Minute {
		t.Errorf("last archived at %v", v)
	}
}

// event finds an Event of reason whose message holds text.
func (pc *pgCluster) event(reason, text string) error {
	evs, err := pc.c.CoreV1().Events(pc.ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return err
	}
	for _, e := range evs.Items {
		if e.Reason == reason && strings.Contains(e.Message, text) {
			return nil
		}
	}
	return fmt.Errorf("no %s Event saying %q among %d", reason, text, len(evs.Items))
}
