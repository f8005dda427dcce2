package main

import (
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/runtime/backup"
	"github.com/cairn-dev/cairn/testbed"
	"github.com/cairn-dev/cairn/testbed/kubenode"
)

// What differs between the two beds a scenario runs on: in process
// (newBed: the node stand-in, real members behind the pods, the sync
// stand-in) and on a real node (newNodeBed: kubelet, containerd, the
// images `make image` builds, real Flux). Each method below says what it
// does on each; the scenarios (scenario_*_test.go) call them and never
// look at the bed themselves, but for the checks that hold on one bed
// only, each said where it stands.

// version is the release a scenario asks for: on a real node the one
// the node's image holds (kubenode.ImageVersion); in process inProcess,
// which the bed runs with its one build of that line (etcd's minor,
// PostgreSQL's major), whatever the patch.
func (l *loop) version(image, inProcess string) string {
	if l.node != nil {
		return kubenode.ImageVersion(l.t, image)
	}
	return inProcess
}

// isRelease reports whether a server that reports got ("3.7.3", "15.20
// (Debian 15.20-1)") runs version: exactly on a real node, whose image
// holds the release the spec names; in process, where the bed runs its
// one build of the line, the first line parts of the version (etcd's
// minor: 2, PostgreSQL's major: 1).
func (l *loop) isRelease(got, version string, line int) bool {
	f := strings.Fields(got)
	if len(f) == 0 {
		return false
	}
	if l.node != nil {
		return f[0] == version
	}
	head := func(v string) []string { p := strings.Split(v, "."); return p[:min(line, len(p))] }
	return slices.Equal(head(f[0]), head(version))
}

// etcdSpecAt is etcdSpecAt with, on a real node, the resources that let
// five members and the runtime share its two cores (smallEtcd).
func (l *loop) etcdSpecAt(name string, size int, version string, extra ...string) map[string]string {
	if l.node != nil {
		extra = append([]string{smallEtcd}, extra...)
	}
	return etcdSpecAt(name, size, version, extra...)
}

// pgSpecAt is pgSpecAt with extra lines under spec and, on a real node
// before them, the resources that let the members and the runtime share
// its two cores (smallPostgres).
func (l *loop) pgSpecAt(name string, instances int, version, extra string) map[string]string {
	s := pgSpecAt(name, instances, version)
	file := "clusters/" + name + ".yaml"
	if l.node != nil {
		s[file] += smallPostgres
	}
	s[file] += extra
	return s
}

// backupLocation is where the clusters' backups go, and the test's own
// store of it: in process a folder of the test's, which the members and
// the runtime share with it; on a real node the S3-protocol server at
// the node's host address (pods reach no folder of the test's), its
// address, keys and CA in each cluster's <cluster>-backup Secret.
func (l *loop) backupLocation(clusters ...string) (string, backup.Store) {
	if l.node == nil {
		dir := l.t.TempDir()
		return "file://" + dir, &backup.FileStore{Root: dir}
	}
	s3 := testbed.S3ServerAt(l.t, "cairn", net.ParseIP(l.node.HostIP))
	for _, c := range clusters {
		l.s3Secret(s3, c)
	}
	return s3.Location, s3Store(l.t, s3, s3.Location)
}

// backupSchedule is a schedule of frequent backups: every 2 s in process;
// every 20 s on a real node, where a base backup from a pod on two
// shared cores takes longer than that.
func (l *loop) backupSchedule() string {
	if l.node != nil {
		return "*/20 * * * * *"
	}
	return "*/2 * * * * *"
}

// crash kills the server of PostgreSQL member pod once, as a crash
// would, and lets it start again: on a real node its container is
// killed and the kubelet starts it again; in process the bed kills its
// postmaster and lets the node stand-in start it again at once.
func (l *loop) crash(pod string) {
	if l.node != nil {
		l.node.KillContainer(l.t, l.ns, pod, "postgres")
		return
	}
	if err := l.pg.KillPostmaster(pod); err != nil {
		l.t.Fatal(err)
	}
	l.pg.Release(pod)
}

// holdDown takes the server of PostgreSQL member pod down and keeps it
// down while keep is called, until release. keep reports whether it
// killed the server. On a real node each keep kills the container if the
// kubelet started it again (a crash loop), and release does nothing: it
// comes back once keep is no longer called. In process the first keep
// kills the postmaster and the bed holds the pod down, as a node that
// hangs, until release lets the node stand-in start it again.
func (l *loop) holdDown(pod string) (keep func() bool, release func()) {
	if l.node != nil {
		return func() bool { return l.node.KillContainer(l.t, l.ns, pod, "postgres") }, func() {}
	}
	killed := false
	keep = func() bool {
		if killed {
			return false
		}
		if err := l.pg.KillPostmaster(pod); err != nil {
			l.t.Fatal(err)
		}
		killed = true
		return true
	}
	return keep, func() { l.pg.Release(pod) }
}

// s3Secret is the cluster's <cluster>-backup Secret: the S3 server's
// address, keys and CA, which the runtime's backups read.
func (l *loop) s3Secret(s3 testbed.S3Endpoint, cluster string) {
	l.t.Helper()
	data := map[string][]byte{}
	for k, v := range s3.Env {
		data[k] = []byte(v)
	}
	if _, err := l.cp.Client(l.t).CoreV1().Secrets(l.ns).Create(l.ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: cluster + "-backup"}, Data: data}, metav1.CreateOptions{}); err != nil {
		l.t.Fatal(err)
	}
}

// s3Store opens the bucket location loc of the S3 server as the test's
// own client.
func s3Store(t *testing.T, s3 testbed.S3Endpoint, loc string) backup.Store {
	t.Helper()
	cfg, err := backup.S3ConfigFromEnv(func(k string) string { return s3.Env[k] })
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := backup.ParseLocation(loc)
	if err != nil {
		t.Fatal(err)
	}
	store, err := backup.NewS3Store(parsed, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return store
}

// eventually waits for fn as testbed.Eventually does, for a minute in
// process and, on real nodes, as long as a step may take (l.within): a
// loaded node starts and stops pods, and so changes membership, slower.
func (l *loop) eventually(what string, fn func() error) {
	l.t.Helper()
	testbed.EventuallyWithin(l.t, max(time.Minute, l.within), what, fn)
}

// runsByDigest checks, on a real node, that every container of the
// cluster's pods (its members' and its runtime's, init containers too)
// names its image by tag and by the digest the nodes hold it under
// (kubenode.ImageDigests), and that each pod runs them: its node found
// every image by digest (nothing is ever pulled), and the kubelet reports
// that digest's image run. In process the pods run nothing, and it
// checks nothing.
func (l *loop) runsByDigest(cluster string) {
	t := l.t
	if l.node == nil {
		return
	}
	pods, err := l.cp.Client(t).CoreV1().Pods(l.ns).List(l.ctx, metav1.ListOptions{LabelSelector: contract.LabelInstance + "=" + cluster})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) == 0 {
		t.Fatalf("%s has no pods", cluster)
	}
	for _, p := range pods.Items {
		digests := map[string]string{}
		for _, c := range append(slices.Clone(p.Spec.InitContainers), p.Spec.Containers...) {
			tag, digest, _ := strings.Cut(c.Image, "@")
			if want, ok := l.images.ImageDigests[tag]; !ok || digest != want {
				t.Errorf("pod %s, container %s: image %s, want %s@%s (the digest the nodes hold %s under)", p.Name, c.Name, c.Image, tag, want, tag)
			}
			digests[c.Name] = digest
		}
		if p.Status.Phase != corev1.PodRunning {
			t.Errorf("pod %s is %s", p.Name, p.Status.Phase)
		}
		// What the kubelet ran: the image of that digest.
		for _, cs := range append(slices.Clone(p.Status.InitContainerStatuses), p.Status.ContainerStatuses...) {
			if digest := digests[cs.Name]; digest == "" || !strings.HasSuffix(cs.ImageID, "@"+digest) {
				t.Errorf("pod %s, container %s: ran the image %s, not %s, which its spec names", p.Name, cs.Name, cs.ImageID, digest)
			}
		}
	}
}
