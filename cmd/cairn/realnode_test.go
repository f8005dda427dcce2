package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/publish"
	"github.com/cairn-dev/cairn/runtime/backup"
	"github.com/cairn-dev/cairn/runtime/certs"
	"github.com/cairn-dev/cairn/testbed"
	"github.com/cairn-dev/cairn/testbed/fluxbed"
	"github.com/cairn-dev/cairn/testbed/gitbed"
	"github.com/cairn-dev/cairn/testbed/kubenode"
	"github.com/jackc/pgx/v5"
)

// newNodeBed is newBed on a real node with real Flux, with nothing
// served yet (begin serves the specs): the pods cairn renders run in
// containers from the images `make image` builds (cairn's runtime among
// them, as its rendered Deployment), and Flux applies each merged commit
// with a Kustomization per cluster made from examples/flux. images are
// the archives the clusters need beside cairn's.
func newNodeBed(t *testing.T, images ...string) *loop {
	return newNodesBed(t, 1, images...)
}

// newNodeLoop is newNodesLoop on one node.
func newNodeLoop(t *testing.T, specs map[string]string, clusters []string, images ...string) *loop {
	return newNodesLoop(t, 1, specs, clusters, images...)
}

// newNodesLoop is newLoop on a cluster of n real nodes (newNodesBed).
func newNodesLoop(t *testing.T, n int, specs map[string]string, clusters []string, images ...string) *loop {
	l := newNodesBed(t, n, images...)
	l.begin(specs, clusters)
	return l
}

// newNodesBed is newNodeBed on a cluster of n real nodes.
func newNodesBed(t *testing.T, n int, images ...string) *loop {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	l := &loop{t: t, ctx: ctx, within: 8 * time.Minute, began: time.Now()}
	l.node = kubenode.StartNodes(t, n, append([]string{"cairn"}, images...)...)
	l.cp = l.node.ControlPlane
	l.ns = l.cp.Namespace(t, "gitops")
	l.flux = fluxbed.Start(t, l.cp)
	return l
}

// fluxApplied waits until the Kustomization of every cluster rendered on
// main has applied main's head and is Ready: Flux's own word that the
// merged commit runs. A cluster not rendered yet has nothing to apply.
func (l *loop) fluxApplied() {
	head := gitbed.Head(l.t, l.bare, "main").String()
	for _, c := range l.flux.Names(l.t) {
		if len(gitbed.Files(l.t, l.bare, "main", "rendered/"+c+"/")) == 0 {
			continue
		}
		l.flux.WaitApplied(l.t, c, head, 5*time.Minute)
	}
}

// nodeEtcdClient is an etcd client of the cluster's first n members on
// the real node, and their endpoints. Names resolve in the cluster's DNS,
// as in a pod; a TLS handshake with each first says what etcd's client
// would only report as a deadline.
func (l *loop) nodeEtcdClient(cluster string, n int) (*clientv3.Client, []string, error) {
	c := l.cp.Client(l.t)
	m, err := (&certs.Files{Client: c, Namespace: l.ns, Cluster: cluster}).Material(l.ctx)
	if err != nil {
		return nil, nil, err
	}
	tc, err := m.ClientConfig(contract.EtcdClientServerName(cluster, l.ns))
	if err != nil {
		return nil, nil, err
	}
	r := l.node.Resolver()
	dial := func(ctx context.Context, addr string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(strings.TrimPrefix(addr, "https://"))
		if err != nil {
			return nil, err
		}
		ips, err := r.LookupHost(ctx, host)
		if err != nil || len(ips) == 0 {
			return nil, fmt.Errorf("look up %s: %v", host, err)
		}
		var d net.Dialer
		return d.DialContext(ctx, "tcp", net.JoinHostPort(ips[0], port))
	}
	var eps []string
	for i := range n {
		host := fmt.Sprintf("%s-%d.%s.%s.svc.cluster.local", cluster, i, contract.EtcdPeerService(cluster), l.ns)
		eps = append(eps, "https://"+net.JoinHostPort(host, "2379"))
		ctx, cancel := context.WithTimeout(l.ctx, 3*time.Second)
		raw, err := dial(ctx, net.JoinHostPort(host, "2379"))
		cancel()
		if err != nil {
			return nil, nil, err
		}
		conn := tls.Client(raw, tc)
		err = conn.Handshake()
		conn.Close()
		if err != nil {
			return nil, nil, fmt.Errorf("TLS to %s: %w", host, err)
		}
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 2 * time.Second, Logger: zap.NewNop(), TLS: tc,
		DialOptions: []grpc.DialOption{grpc.WithContextDialer(dial)}})
	return cli, eps, err
}

// smallEtcd are resources that let five members and the runtime share
// the test node's two cores.
const smallEtcd = "resources: {requests: {cpu: 50m, memory: 64Mi}, limits: {memory: 512Mi}}"

// smallPostgres are resources that let three members and the runtime
// share the test node's two cores.
const smallPostgres = "  resources: {requests: {cpu: 50m, memory: 64Mi}, limits: {memory: 1Gi}}\n"

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

func (l *loop) startPgWriter(cluster string) *pgWriter {
	cfg := l.rwConfig(cluster)
	ctx, cancel := context.WithCancel(l.ctx)
	w := &pgWriter{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		var conn *pgx.Conn
		var since time.Time
		for id := 1; ctx.Err() == nil; id++ {
			err := func() error {
				wctx, c := context.WithTimeout(ctx, 2*time.Second)
				defer c()
				if conn == nil {
					var err error
					if conn, err = pgx.ConnectConfig(wctx, cfg); err != nil {
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
	ctx, cancel := context.WithTimeout(l.ctx, 10*time.Second)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, l.rwConfig(cluster))
	if err != nil {
		l.t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var have int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM writes WHERE id = ANY($1)", ids).Scan(&have); err != nil {
		l.t.Fatal(err)
	}
	return len(ids) - have
}

// Walkthrough 3 on a real node: PostgreSQL members in containers of the
// postgres images make builds, cairn's runtime as its Deployment's pods,
// real Flux applying each step, 3 -> 5 members, and a client writing
// through the -rw Service from then on. A minor upgrade (from the 15
// release before the newest to the newest, two images of Debian's
// packages) rolls through the members one step at a time, the primary
// handing over to an upgraded replica by a switchover step first: no
// acknowledged write lost. The primary's container is killed once: the kubelet starts it again
// and it comes back as the primary (a crash the runtime rides out). Then
// it is killed each time it comes back, as a primary in a crash loop: the
// runtime fails over on its own, with no pull request, the -rw Service
// follows the new primary, and once the kills stop the old primary comes
// back as a replica.
func TestRealNodePostgresWalkthrough(t *testing.T) {
	const shop = "shop"
	start := time.Now()
	from, to := kubenode.ImageVersion(t, "postgres-15-previous"), kubenode.ImageVersion(t, "postgres-15")
	spec := pgSpecAt(shop, 3, from)
	spec["clusters/shop.yaml"] += smallPostgres
	l := newNodeLoop(t, spec, []string{shop}, "postgres-15-previous", "postgres-15")
	l.pgSecrets(shop)
	steps := l.converge(shop, nil)
	var primary string
	testbed.Eventually(t, "a primary and two replicas", func() (err error) { primary, err = l.primaryOf(shop, 3); return err })
	created := time.Since(start)
	w := l.startPgWriter(shop)

	// 3 -> 5 with the writer running: one replica at a time, each cloned
	// from the primary in its own container.
	spec = pgSpecAt(shop, 5, from)
	spec["clusters/shop.yaml"] += smallPostgres
	l.editSpec(spec)
	grow := l.converge(shop, nil)
	testbed.Eventually(t, "a primary and four replicas", func() (err error) { primary, err = l.primaryOf(shop, 5); return err })

	// The minor upgrade, with the writer running.
	var upgrade string
	upgradeOutage := w.resumes(t, "the minor upgrade", func() { upgrade = l.nodeMinorUpgrade(shop, 5, primary, from, to) })
	testbed.Eventually(t, "a primary and four replicas at "+to, func() (err error) { primary, err = l.primaryOf(shop, 5); return err })
	if acked, lost := w.lost(l, shop); lost != 0 || acked == 0 {
		t.Fatalf("the minor upgrade lost %d of %d acknowledged writes", lost, acked)
	}

	// One crash: the container is back before a failover is due.
	crashOutage := w.resumes(t, "one crash", func() { l.node.KillContainer(t, l.ns, primary, "postgres") })

	// A crash loop: the runtime fails over.
	killed := time.Now()
	var next string
	kills := 0
	testbed.Eventually(t, "a new primary behind -rw", func() error {
		if next == "" && l.node.KillContainer(t, l.ns, primary, "postgres") {
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
	time.Sleep(2 * time.Second)
	acked, lost := w.stop(l, shop)
	if o := l.pass()[shop]; o.Status != plan.StatusConverged || len(l.openOf(shop)) != 0 {
		t.Fatalf("after the failover: %+v", o)
	}
	l.noDrift("after the failover")
	if acked == 0 {
		t.Fatal("no write was acknowledged")
	}
	t.Logf("steps %v, 3 -> 5 %v; %s, longest write outage %s; created in %.1fs; one crash: longest write outage %s; crash loop (%d kills): failover from %s to %s %.1fs from the first kill to the new primary labelled, longest write outage %s; %d writes acknowledged through -rw, %d lost, %d failed; from each merge to the next pull request: %s",
		steps, grow, upgrade, upgradeOutage, created.Seconds(), crashOutage, kills, primary, next, took.Seconds(), failoverOutage, acked, lost, w.failed, strings.Join(l.timings, ", "))
}

// nodeMinorUpgrade moves the cluster of n members, primary the primary,
// from minor from to minor to through its step pull requests, and checks
// what the steps say: one switchover, every member's container on the
// new image, the server behind -rw reporting the new release. It returns
// a line for the test's log: the steps and how long the upgrade took.
func (l *loop) nodeMinorUpgrade(cluster string, n int, primary, from, to string) string {
	t := l.t
	t.Helper()
	began := time.Now()
	spec := pgSpecAt(cluster, n, to)
	spec["clusters/"+cluster+".yaml"] += smallPostgres
	l.editSpec(spec)
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
	image := kubenode.ImageTag(t, "postgres-15")
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
	ctx, cancel := context.WithTimeout(l.ctx, 10*time.Second)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, l.rwConfig(cluster))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var version string
	if err := conn.QueryRow(ctx, "SHOW server_version").Scan(&version); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(version, to+" ") && version != to {
		t.Errorf("-rw reports PostgreSQL %q, want %s", version, to)
	}
	return fmt.Sprintf("minor upgrade %s -> %s in %.1fs, primary %s -> %s: steps %v", from, to, time.Since(began).Seconds(), primary, next, steps)
}

// rwExec runs statements on the cluster's primary through -rw.
func (l *loop) rwExec(cluster string, sqls ...string) {
	l.t.Helper()
	ctx, cancel := context.WithTimeout(l.ctx, 10*time.Second)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, l.rwConfig(cluster))
	if err != nil {
		l.t.Fatal(err)
	}
	defer conn.Close(context.Background())
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
	ctx, cancel := context.WithTimeout(l.ctx, 2*time.Minute)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, l.rwConfig(cluster))
	if err != nil {
		l.t.Fatal(err)
	}
	defer conn.Close(context.Background())
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

// Walkthrough 4 on a real node: the members' scheduled base backups and
// archived WAL go to the S3-protocol server from the pods (its address,
// keys and CA from the <cluster>-backup Secret), and a new cluster whose
// spec says restoreFrom with a target time starts in its containers with
// exactly the rows committed before the target.
func TestRealNodePostgresBackupThenRestore(t *testing.T) {
	const src, dst = "orders", "orders-copy"
	pg15 := kubenode.ImageVersion(t, "postgres-15")
	spec := pgSpecAt(src, 2, pg15)
	spec["clusters/"+src+".yaml"] += smallPostgres + "  backup:\n    schedule: \"*/20 * * * * *\"\n    storageLocation: \"s3://cairn/backups\"\n"
	l := newNodeLoop(t, spec, []string{src, dst}, "postgres-15")
	s3 := testbed.S3ServerAt(t, "cairn", net.ParseIP(l.node.HostIP))
	l.backupSecrets(s3, src, dst)
	l.converge(src, nil)
	testbed.Eventually(t, "a primary and a replica", func() error { _, err := l.primaryOf(src, 2); return err })
	insert := func(from, to int) {
		var qs []string
		for i := from; i < to; i++ {
			qs = append(qs, fmt.Sprintf("INSERT INTO orders VALUES (%d)", i))
		}
		l.rwExec(src, qs...)
	}
	l.rwExec(src, "CREATE TABLE orders (id int primary key)")
	insert(0, 40)
	since := time.Now()
	id := l.backupAfter(src, since)
	insert(40, 50)
	time.Sleep(20 * time.Millisecond)
	target := time.Now().UTC().Format(time.RFC3339Nano)
	time.Sleep(20 * time.Millisecond)
	insert(50, 60)
	l.rwArchived(src)

	copySpec := pgSpecAt(dst, 2, pg15)
	copySpec["clusters/"+dst+".yaml"] += smallPostgres + "  restoreFrom:\n    storageLocation: \"s3://cairn/backups\"\n    cluster: " + src + "\n    targetTime: \"" + target + "\"\n"
	l.editSpec(copySpec)
	l.converge(dst, nil)
	testbed.Eventually(t, "the copy's primary and replica", func() error { _, err := l.primaryOf(dst, 2); return err })
	ctx, cancel := context.WithTimeout(l.ctx, 10*time.Second)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, l.rwConfig(dst))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM orders").Scan(&n); err != nil || n != 50 {
		t.Fatalf("the copy restored to %s holds %d orders (%v), want the 50 committed before it", target, n, err)
	}
	l.noDrift("at the end")
	t.Logf("backup %s to the S3-protocol server from the pods; the copy restored to %s holds the 50 orders committed before it, of 60", id, target)
}

// backupSecrets makes the <cluster>-backup Secret of each cluster with
// the S3 endpoint's settings, and the clusters' password Secrets.
func (l *loop) backupSecrets(s3 testbed.S3Endpoint, clusters ...string) {
	l.t.Helper()
	for _, c := range clusters {
		l.pgSecrets(c)
		l.s3Secret(s3, c)
	}
}

// rwCount is the number of orders and the server's major, read through
// the cluster's -rw Service.
func (l *loop) rwCount(cluster string) (orders, major int, err error) {
	ctx, cancel := context.WithTimeout(l.ctx, 10*time.Second)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, l.rwConfig(cluster))
	if err != nil {
		return 0, 0, err
	}
	defer conn.Close(context.Background())
	var num int
	err = conn.QueryRow(ctx, "SELECT (SELECT count(*) FROM orders), current_setting('server_version_num')::int").Scan(&orders, &num)
	return orders, num / 10000, err
}

// The major upgrade on a real node: a PostgreSQL 13 cluster of three
// in containers of the postgres-13 image, with backups to the
// S3-protocol server, moved to 15 through its step pull requests: the
// backup, the pre-flight check Job (the pg_upgrade image, restoring that
// backup from S3 in its own pod), the offline pg_upgrade in the primary's
// pg-upgrade init container, the replicas cloned again, every row kept;
// then the pinned pre-upgrade backup restored into a new cluster at 13.
func TestRealNodePostgresMajorUpgrade13To15(t *testing.T) {
	const db, back = "major", "major-back"
	const loc = "s3://cairn/backups"
	withS3 := func(s map[string]string, name string) map[string]string {
		s["clusters/"+name+".yaml"] += smallPostgres + "  backup:\n    schedule: \"0 3 * * *\"\n    storageLocation: \"" + loc + "\"\n"
		return s
	}
	pg13, pg15 := kubenode.ImageVersion(t, "postgres-13"), kubenode.ImageVersion(t, "postgres-15")
	l := newNodeLoop(t, withS3(pgSpecAt(db, 3, pg13), db), []string{db, back},
		"postgres-13", "postgres-15", "postgres-upgrade-13-to-15")
	s3 := testbed.S3ServerAt(t, "cairn", net.ParseIP(l.node.HostIP))
	l.backupSecrets(s3, db, back)
	l.converge(db, nil)
	testbed.Eventually(t, "a primary and two replicas at 13", func() error { _, err := l.primaryOf(db, 3); return err })
	var qs []string
	for i := range 50 {
		qs = append(qs, fmt.Sprintf("INSERT INTO orders VALUES (%d)", i))
	}
	l.rwExec(db, append([]string{"CREATE TABLE orders (id int primary key)"}, qs...)...)
	if _, major, err := l.rwCount(db); err != nil || major != 13 {
		t.Fatalf("before the upgrade: PostgreSQL %d, %v", major, err)
	}

	start := time.Now()
	l.editSpec(withS3(pgSpecAt(db, 3, pg15), db))
	steps := l.converge(db, nil)
	took := time.Since(start)
	joined := strings.Join(steps, " ")
	for _, want := range []string{"backup", "upgrade-check", "major"} {
		if !strings.Contains(joined, want) {
			t.Errorf("the upgrade's steps %v have no %q step", steps, want)
		}
	}
	testbed.Eventually(t, "a primary and two replicas at 15", func() error { _, err := l.primaryOf(db, 3); return err })
	if n, major, err := l.rwCount(db); err != nil || n != 50 || major != 15 {
		t.Fatalf("after the upgrade: %d orders at PostgreSQL %d (%v), want 50 at 15", n, major, err)
	}
	l.noDrift("after the upgrade")

	// The rollback: the pinned pre-upgrade backup restores at 13.
	all, err := backup.List(l.ctx, s3Store(t, s3, loc), db)
	if err != nil {
		t.Fatal(err)
	}
	pinned := backup.Pinned(all)
	if len(pinned) != 1 || !strings.HasPrefix(pinned[0].Version, "13.") {
		t.Fatalf("pinned backups %+v, want the one pre-upgrade backup of 13", pinned)
	}
	copySpec := pgSpecAt(back, 2, pg13)
	copySpec["clusters/"+back+".yaml"] += smallPostgres + fmt.Sprintf("  restoreFrom:\n    storageLocation: %q\n    cluster: %s\n    backup: %s\n", loc, db, pinned[0].ID)
	l.editSpec(copySpec)
	l.converge(back, nil)
	testbed.Eventually(t, "the rolled back cluster's primary and replica", func() error { _, err := l.primaryOf(back, 2); return err })
	if n, major, err := l.rwCount(back); err != nil || n != 50 || major != 13 {
		t.Fatalf("the rolled back cluster: %d orders at PostgreSQL %d (%v), want 50 at 13", n, major, err)
	}
	t.Logf("13 -> 15 steps %v in %.1fs; from each merge to the next pull request: %s", steps, took.Seconds(), strings.Join(l.timings, ", "))
}
