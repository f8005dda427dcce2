package main

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/runtime/certs"
	"github.com/cairn-dev/cairn/testbed"
	"github.com/cairn-dev/cairn/testbed/kubenode"
)

// pgWriter inserts a row every 20 ms through the cluster's -rw Service,
// as an application does, connecting again after each failure, and keeps
// the ids PostgreSQL acknowledged.
type pgWriter struct {
	cancel context.CancelFunc
	done   chan struct{}

	mu     sync.Mutex
	acked  []int
	failed int
	// outage is the longest run of failed writes since the last look.
	outage time.Duration
	last   error
}

// look returns how many writes were acknowledged so far, the longest
// outage since the last look, and the last error.
func (w *pgWriter) look() (acked int, outage time.Duration, last error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	acked, outage, last = len(w.acked), w.outage, w.last
	w.outage = 0
	return acked, outage, last
}

// rwConfig connects to the cluster's -rw Service as an application in
// the cluster does: its DNS name looked up in the cluster's DNS, TLS
// verified against the cluster's CA and that name, and the superuser's
// client certificate (pg_hba admits the superuser over the network only
// with one).
func (l *loop) rwConfig(cluster string) *pgx.ConnConfig {
	c := l.cp.Client(l.t)
	m, err := (&certs.Files{Client: c, Namespace: l.ns, Cluster: cluster}).Material(l.ctx)
	if err != nil {
		l.t.Fatal(err)
	}
	name := contract.PrimaryService(cluster) + "." + l.ns + ".svc"
	tc, err := m.ClientConfig(name)
	if err != nil {
		l.t.Fatal(err)
	}
	cfg, err := pgx.ParseConfig(fmt.Sprintf("postgres://postgres@%s:5432/postgres?connect_timeout=2", name))
	if err != nil {
		l.t.Fatal(err)
	}
	cfg.TLSConfig, cfg.Fallbacks = tc, nil
	cfg.LookupFunc = l.node.PodLookup(l.ns)
	cfg.DialFunc = (&net.Dialer{Timeout: 2 * time.Second}).DialContext
	return cfg
}

// rwDialer connects to the cluster's primary as an application does: on
// a real node through the -rw Service (rwConfig); in process, where no
// Service proxies, to the member whose pod is labelled primary and
// ready, as the -rw Service selects it (the runtime owns that label).
func (l *loop) rwDialer(cluster string) func(context.Context) (*pgx.Conn, error) {
	if l.node != nil {
		cfg := l.rwConfig(cluster)
		return func(ctx context.Context) (*pgx.Conn, error) { return pgx.ConnectConfig(ctx, cfg) }
	}
	c := l.cp.Client(l.t)
	return func(ctx context.Context) (*pgx.Conn, error) {
		roles, err := podRoles(ctx, c, l.ns, cluster)
		if err != nil {
			return nil, err
		}
		for pod, role := range roles {
			if ord, ok := contract.MemberOrdinal(cluster, pod); ok && role == "primary" {
				return l.pg.Conn(ctx, cluster, ord)
			}
		}
		return nil, fmt.Errorf("no ready primary behind -rw: roles %v", roles)
	}
}

// rwConn connects to the cluster's primary as rwDialer does, with a
// context of d; done closes the connection and ends the context.
func (l *loop) rwConn(cluster string, d time.Duration) (context.Context, *pgx.Conn, func(), error) {
	ctx, cancel := context.WithTimeout(l.ctx, d)
	conn, err := l.rwDialer(cluster)(ctx)
	if err != nil {
		cancel()
		return nil, nil, nil, err
	}
	return ctx, conn, func() { conn.Close(context.Background()); cancel() }, nil
}

func (l *loop) startPgWriter(cluster string) *pgWriter { return l.startPgWriterFrom(cluster, 1) }

// startPgWriterFrom is startPgWriter with ids from first on: a second
// writer on a cluster that had one starts past the first one's ids.
func (l *loop) startPgWriterFrom(cluster string, first int) *pgWriter {
	dial := l.rwDialer(cluster)
	ctx, cancel := context.WithCancel(l.ctx)
	w := &pgWriter{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		var conn *pgx.Conn
		var since time.Time
		for id := first; ctx.Err() == nil; id++ {
			err := func() error {
				wctx, c := context.WithTimeout(ctx, 2*time.Second)
				defer c()
				if conn == nil {
					var err error
					if conn, err = dial(wctx); err != nil {
						return err
					}
					if _, err := conn.Exec(wctx, "CREATE TABLE IF NOT EXISTS writes (id int primary key)"); err != nil {
						return err
					}
				}
				_, err := conn.Exec(wctx, "INSERT INTO writes VALUES ($1)", id)
				return err
			}()
			w.mu.Lock()
			switch {
			case err == nil:
				w.acked = append(w.acked, id)
				if !since.IsZero() {
					w.outage = max(w.outage, time.Since(since))
					since = time.Time{}
				}
			case ctx.Err() == nil:
				w.failed++
				w.last = err
				if since.IsZero() {
					since = time.Now()
				}
			}
			w.mu.Unlock()
			if err != nil && ctx.Err() == nil {
				if conn != nil {
					conn.Close(context.Background())
					conn = nil
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
		if conn != nil {
			conn.Close(context.Background())
		}
	}()
	return w
}

// resumes runs event and waits until ten more writes are acknowledged
// after it; it returns the longest outage from event on.
func (w *pgWriter) resumes(t *testing.T, event string, do func()) time.Duration {
	t.Helper()
	before, _, _ := w.look()
	do()
	var longest time.Duration
	testbed.Eventually(t, "writes again after "+event, func() error {
		n, outage, last := w.look()
		longest = max(longest, outage)
		if n < before+10 {
			return fmt.Errorf("%d writes since %s (%d before); last error: %v", n-before, event, before, last)
		}
		return nil
	})
	_, outage, _ := w.look()
	return max(longest, outage)
}

// stop stops the writer and counts the acknowledged rows the cluster no
// longer has, read through the -rw Service.
func (w *pgWriter) stop(l *loop, cluster string) (acked, lost int) {
	w.cancel()
	<-w.done
	return w.lost(l, cluster)
}

// lost counts the rows acknowledged so far that the cluster no longer
// has, read through the -rw Service; the writer may go on.
func (w *pgWriter) lost(l *loop, cluster string) (acked, lost int) {
	w.mu.Lock()
	ids := slices.Clone(w.acked)
	w.mu.Unlock()
	return len(ids), l.missing(cluster, ids)
}

// missing counts the ids of rows of the table writes that the cluster
// does not have, read through the -rw Service.
func (l *loop) missing(cluster string, ids []int) int {
	if len(ids) == 0 {
		return 0
	}
	ctx, conn, done, err := l.rwConn(cluster, 10*time.Second)
	if err != nil {
		l.t.Fatal(err)
	}
	defer done()
	var have int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM writes WHERE id = ANY($1)", ids).Scan(&have); err != nil {
		l.t.Fatal(err)
	}
	return len(ids) - have
}

// minorUpgrade moves the cluster of n members, primary the primary,
// from minor from to minor to through its step pull requests, and checks
// what the steps say: one switchover, every member's container on the
// new image, the server behind -rw reporting the new release. It returns
// a line for the test's log: the steps and how long the upgrade took.
func (l *loop) minorUpgrade(cluster string, n int, primary, from, to string) string {
	t := l.t
	t.Helper()
	began := time.Now()
	l.editSpec(l.pgSpecAt(cluster, n, to, ""))
	steps := l.converge(cluster, nil)
	upgrades, switchovers := 0, 0
	for _, s := range steps {
		switch {
		case strings.HasPrefix(s, "upgrade-"):
			upgrades++
		case strings.HasPrefix(s, "switchover-"):
			switchovers++
		}
	}
	if upgrades != n || switchovers != 1 {
		t.Fatalf("%s -> %s: steps %v, want %d member upgrades and one switchover", from, to, steps, n)
	}
	// The image of to as rendered (on a real node by the digest the node
	// holds it under), whose tag says which PostgreSQL runs; on a real
	// node the tag of the image the node holds.
	image, err := l.images.PostgresImage(to)
	if err != nil {
		t.Fatal(err)
	}
	if tag, _, _ := strings.Cut(image, "@"); l.node != nil && tag != kubenode.ImageTag(t, "postgres-15") {
		t.Fatalf("%s is rendered as %s, the node holds %s", to, image, kubenode.ImageTag(t, "postgres-15"))
	}
	pods, err := l.cp.Client(t).CoreV1().Pods(l.ns).List(l.ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + cluster + ",app.kubernetes.io/component=database"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		for _, c := range p.Spec.Containers {
			if c.Name == "postgres" && c.Image != image {
				t.Errorf("%s runs %s, want %s", p.Name, c.Image, image)
			}
		}
	}
	next, err := l.primaryOf(cluster, n)
	if err != nil {
		t.Fatal(err)
	}
	if next == primary {
		t.Errorf("primary %s before and after the upgrade: no switchover took place", primary)
	}
	ctx, conn, done, err := l.rwConn(cluster, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	var version string
	if err := conn.QueryRow(ctx, "SHOW server_version").Scan(&version); err != nil {
		t.Fatal(err)
	}
	if !l.isRelease(version, to, 1) {
		t.Errorf("-rw reports PostgreSQL %q, want %s", version, to)
	}
	return fmt.Sprintf("minor upgrade %s -> %s in %.1fs, primary %s -> %s: steps %v", from, to, time.Since(began).Seconds(), primary, next, steps)
}

// rwExec runs statements on the cluster's primary through -rw.
func (l *loop) rwExec(cluster string, sqls ...string) {
	l.t.Helper()
	ctx, conn, done, err := l.rwConn(cluster, 10*time.Second)
	if err != nil {
		l.t.Fatal(err)
	}
	defer done()
	for _, q := range sqls {
		if _, err := conn.Exec(ctx, q); err != nil {
			l.t.Fatalf("%s: %v", q, err)
		}
	}
}

// rwArchived switches the primary's WAL segment and waits until its
// archiver has put it in the backup location.
func (l *loop) rwArchived(cluster string) {
	l.t.Helper()
	ctx, conn, done, err := l.rwConn(cluster, 2*time.Minute)
	if err != nil {
		l.t.Fatal(err)
	}
	defer done()
	var seg string
	if err := conn.QueryRow(ctx, "SELECT pg_walfile_name(pg_switch_wal())").Scan(&seg); err != nil {
		l.t.Fatal(err)
	}
	testbed.Eventually(l.t, cluster+" archives "+seg, func() error {
		var last string
		if err := conn.QueryRow(ctx, "SELECT coalesce(last_archived_wal, '') FROM pg_stat_archiver").Scan(&last); err != nil {
			return err
		}
		if last < seg {
			return fmt.Errorf("last archived %q", last)
		}
		return nil
	})
}

// rwCount is the number of orders and the server's major, read through
// the cluster's -rw Service.
func (l *loop) rwCount(cluster string) (orders, major int, err error) {
	ctx, conn, done, err := l.rwConn(cluster, 10*time.Second)
	if err != nil {
		return 0, 0, err
	}
	defer done()
	var num int
	err = conn.QueryRow(ctx, "SELECT (SELECT count(*) FROM orders), current_setting('server_version_num')::int").Scan(&orders, &num)
	return orders, num / 10000, err
}
