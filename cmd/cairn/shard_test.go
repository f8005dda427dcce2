package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fluxcd/pkg/gittestserver"
	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"

	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/publish"
	"github.com/cairn-dev/cairn/publish/gitrepo"
	"github.com/cairn-dev/cairn/reconcile"
	"github.com/cairn-dev/cairn/reconcile/shard"
	"github.com/cairn-dev/cairn/renderer"
	"github.com/cairn-dev/cairn/testbed"
	"github.com/cairn-dev/cairn/testbed/gitbed"
)

// shardFleet is replicas of cairn reconcile over one GitOps repo on a
// real git server, each with its own clone, its own loop (the kinds'
// planner and renderer, the local provider) and its own shard member,
// their Leases on a real kube-apiserver. Every pull request write a
// replica makes is checked against the others' Owns at that instant.
type shardFleet struct {
	t           *testing.T
	ns, url     string
	bare        string
	cp          *testbed.ControlPlane
	shards      int
	refs        map[string]plan.ClusterRef // by cluster name
	mu          sync.Mutex
	replicas    map[string]*shardReplica
	opened      map[string][]string // by branch: the replicas that opened its pull request
	published   map[string]map[string]time.Time
	writes      int
	violations  []string
	passErrors  []string
	shardedLogs *slog.Logger
}

type shardReplica struct {
	id     string
	member *shard.Member
	// hook is where its webhook's events go (runMember).
	hook       chan struct{}
	stopLoop   context.CancelFunc
	stopMember func(cause error)
	loopDone   chan struct{}
	killed     bool
}

const shardTestLease = 3 * time.Second

// shardSpecs are etcd clusters kv-0, kv-1, ... until every shard holds
// one and there are at least min of them: no replica is left without
// clusters, so each has something to publish.
func shardSpecs(shards, least, size int) (map[string]string, map[string]plan.ClusterRef) {
	files, refs := map[string]string{}, map[string]plan.ClusterRef{}
	covered := map[int]bool{}
	for i := 0; len(covered) < shards || len(refs) < least; i++ {
		name := fmt.Sprintf("kv-%d", i)
		ref := plan.ClusterRef{APIVersion: "etcd.database.coreos.com/v1beta2", Kind: "EtcdCluster", Name: name}
		covered[shard.ShardOf(ref, shards)] = true
		refs[name] = ref
		maps.Copy(files, etcdSpec(name, size))
	}
	return files, refs
}

func newShardFleet(t *testing.T, shards int) *shardFleet {
	cp := testbed.Shared(t, testbed.Options{})
	f := &shardFleet{t: t, cp: cp, ns: cp.Namespace(t, "cairn"), shards: shards, replicas: map[string]*shardReplica{},
		opened: map[string][]string{}, published: map[string]map[string]time.Time{}, shardedLogs: testbed.Logger(t, slog.LevelWarn)}
	srv, err := gittestserver.NewTempGitServer()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(srv.Root()) })
	if err := srv.StartHTTP(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.StopHTTP)
	files, refs := shardSpecs(shards, 12, 3)
	f.refs = refs
	fixture := t.TempDir()
	for p, c := range files {
		_ = os.MkdirAll(filepath.Join(fixture, filepath.Dir(p)), 0o755)
		if err := os.WriteFile(filepath.Join(fixture, p), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := srv.InitRepo(fixture, "main", "org/gitops.git"); err != nil {
		t.Fatal(err)
	}
	f.bare, f.url = filepath.Join(srv.Root(), "org", "gitops.git"), srv.HTTPAddress()+"/org/gitops.git"
	return f
}

// guardedPRs is the local provider of one replica; each write first
// checks that no other replica owns the cluster at that instant.
type guardedPRs struct {
	*publish.Local
	f  *shardFleet
	id string
}

func (g *guardedPRs) Open(ctx context.Context, pr publish.PullRequest) (*publish.PullRequest, error) {
	g.f.writing(g.id, pr.Branch)
	return g.Local.Open(ctx, pr)
}

func (g *guardedPRs) Update(ctx context.Context, pr publish.PullRequest) error {
	g.f.writing(g.id, pr.Branch)
	return g.Local.Update(ctx, pr)
}

func (g *guardedPRs) Close(ctx context.Context, pr publish.PullRequest, reason string) error {
	g.f.writing(g.id, pr.Branch)
	return g.Local.Close(ctx, pr, reason)
}

func (f *shardFleet) writing(id, branch string) {
	name := strings.Split(branch, "/")[1]
	ref := f.refs[name]
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writes++
	for other, r := range f.replicas {
		if other != id && r.member.Owns(ref) {
			f.violations = append(f.violations, fmt.Sprintf("%s wrote %s while %s owned %s", id, branch, other, name))
		}
	}
}

// start runs a replica: its shard member and its loop, wired as cairn
// reconcile wires them (runMember). The loop's timer is an hour: every
// pass the test waits for comes from a trigger — shards taken, or a
// webhook that reached one replica.
func (f *shardFleet) start(id string) *shardReplica {
	t := f.t
	member, err := shard.New(shard.Config{Client: f.cp.Client(t), Namespace: f.ns, ID: id, Shards: f.shards, LeaseDuration: shardTestLease, Log: f.shardedLogs})
	if err != nil {
		t.Fatal(err)
	}
	repo, err := gitrepo.Clone(context.Background(), gitrepo.Remote{URL: f.url, Base: "main"}, filepath.Join(t.TempDir(), "work"))
	if err != nil {
		t.Fatal(err)
	}
	rend, err := newRenderer(renderer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	prs := &guardedPRs{Local: &publish.Local{Repo: repo, Base: "main", Name: "cairn", Email: cairnEmail}, f: f, id: id}
	cfg := loopConfig(repo, prs, rend, liveSource{}, specsFlag{dir: "clusters"}, f.shardedLogs)
	cfg.Hold, cfg.AutoMerge, cfg.Owns = true, true, member.Owns
	loop := reconcile.New(cfg)

	r := &shardReplica{id: id, member: member, loopDone: make(chan struct{})}
	lctx, stopLoop := context.WithCancel(context.Background())
	trigger := make(chan struct{}, 1)
	r.hook, r.stopMember = runMember(lctx, member, shardTestLease, trigger, f.shardedLogs)
	r.stopLoop = stopLoop
	go func() {
		defer close(r.loopDone)
		_ = loop.Run(lctx, time.Hour, trigger, func(outs []publish.Outcome) { f.report(id, outs) })
	}()
	// The loop stops first, then the member releases: cairn reconcile's
	// order.
	t.Cleanup(func() { stopLoop(); <-r.loopDone; r.stopMember(nil) })
	f.mu.Lock()
	f.replicas[id] = r
	f.mu.Unlock()
	return r
}

// webhook is a GitHub push event reaching replica r.
func webhook(r *shardReplica) {
	select {
	case r.hook <- struct{}{}:
	default:
	}
}

// kill stops a replica as a crash would: its pass abandoned, its Leases
// left held to expire.
func (f *shardFleet) kill(r *shardReplica) {
	r.stopLoop()
	<-r.loopDone
	r.stopMember(shard.ErrKilled)
	f.mu.Lock()
	r.killed = true
	f.mu.Unlock()
}

func (f *shardFleet) report(id string, outs []publish.Outcome) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, o := range outs {
		_, name, _ := strings.Cut(o.Cluster, "/")
		switch o.Action {
		case publish.ActionElsewhere:
			continue
		case publish.ActionFailed:
			f.passErrors = append(f.passErrors, id+": "+o.Cluster+": "+o.Note)
		case publish.ActionOpened:
			f.opened[o.Branch] = append(f.opened[o.Branch], id)
		}
		if f.published[name] == nil {
			f.published[name] = map[string]time.Time{}
		}
		f.published[name][id] = time.Now()
	}
}

// owners are, by cluster, the running replicas that own it now.
func (f *shardFleet) owners() map[string][]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string][]string{}
	for name, ref := range f.refs {
		for id, r := range f.replicas {
			if !r.killed && r.member.Owns(ref) {
				out[name] = append(out[name], id)
			}
		}
		slices.Sort(out[name])
	}
	return out
}

// ownedOnce: every cluster is owned by exactly one running replica.
func (f *shardFleet) ownedOnce() error {
	owners := f.owners()
	for name := range f.refs {
		if ids := owners[name]; len(ids) != 1 {
			return fmt.Errorf("%s is owned by %v", name, ids)
		}
	}
	return nil
}

// settled: the replicas ids, and only they, are live, and their shares
// of the shards differ by at most one.
func (f *shardFleet) settled(ids ...string) error {
	lo, hi, sum := f.shards, 0, 0
	for _, id := range ids {
		m := f.replicas[id].member
		if n := m.Replicas(); n != len(ids) {
			return fmt.Errorf("%s counts %d replicas", id, n)
		}
		n := len(m.Owned())
		lo, hi, sum = min(lo, n), max(hi, n), sum+n
	}
	if sum != f.shards || hi-lo > 1 {
		return fmt.Errorf("shares from %d to %d, %d of %d shards", lo, hi, sum, f.shards)
	}
	return nil
}

// records are the local provider's pull request records in the repo on
// the server (refs/cairn/pr/<branch>), by branch. The server writes as
// they are read: an error is worth another look.
func (f *shardFleet) records(repo *git.Repository) (map[string]publish.PullRequest, error) {
	refs, err := repo.References()
	if err != nil {
		return nil, err
	}
	out := map[string]publish.PullRequest{}
	err = refs.ForEach(func(ref *plumbing.Reference) error {
		branch, ok := strings.CutPrefix(ref.Name().String(), gitrepo.RecordPrefix+"pr/")
		if !ok {
			return nil
		}
		blob, err := repo.BlobObject(ref.Hash())
		if err != nil {
			return nil // written as the test reads
		}
		rd, _ := blob.Reader()
		var pr publish.PullRequest
		if json.NewDecoder(rd).Decode(&pr) == nil {
			out[branch] = pr
		}
		rd.Close()
		return nil
	})
	return out, err
}

// stepsShow: every cluster has one open pull request, for its create
// step with size members, recorded at its branch's head.
func (f *shardFleet) stepsShow(size int) error {
	repo, err := git.PlainOpen(f.bare)
	if err != nil {
		return err
	}
	records, err := f.records(repo)
	if err != nil {
		return err
	}
	for name := range f.refs {
		branch := publish.Branch(name, "create")
		pr, ok := records[branch]
		if !ok || pr.State != publish.Open {
			return fmt.Errorf("%s: no open pull request (%+v)", branch, pr.State)
		}
		head, err := repo.Reference(plumbing.NewBranchReferenceName(branch), true)
		if err != nil {
			return fmt.Errorf("%s: %w", branch, err)
		}
		if pr.Head != head.Hash().String() || !strings.Contains(pr.Title, fmt.Sprintf("with %d members", size)) {
			return fmt.Errorf("%s: pull request %q at %s, branch at %s", branch, pr.Title, pr.Head, head.Hash())
		}
	}
	for branch, pr := range records {
		if pr.State == publish.Open && !strings.HasSuffix(branch, "/create") {
			return fmt.Errorf("an open pull request of another step: %s", branch)
		}
	}
	return nil
}

// Three replicas of cairn reconcile share the clusters: each cluster is
// published by exactly one; one killed leaves its Leases to expire, and
// its clusters move to the others, who publish the change a person made
// meanwhile; no pull request is opened twice, no step lost, and no
// replica ever writes a pull request of a cluster another owns.
func TestShardedReplicasPublishEachClusterOnce(t *testing.T) {
	f := newShardFleet(t, 8)
	for _, id := range []string{"a", "b", "c"} {
		f.start(id)
	}
	testbed.Eventually(t, "every cluster owned once, the shares settled", func() error {
		if err := f.ownedOnce(); err != nil {
			return err
		}
		return f.settled("a", "b", "c")
	})
	testbed.Eventually(t, "every cluster's create step opened", func() error { return f.stepsShow(3) })

	// Published by exactly one replica, its owner, once the shares have
	// settled: two passes of every replica later.
	f.mu.Lock()
	f.published = map[string]map[string]time.Time{}
	f.mu.Unlock()
	owners := f.owners()
	webhook(f.replicas["a"])
	testbed.Eventually(t, "every cluster published by its owner, after a webhook reached one replica", func() error {
		f.mu.Lock()
		defer f.mu.Unlock()
		for name := range f.refs {
			if len(f.published[name]) == 0 {
				return fmt.Errorf("%s not published since the shares settled", name)
			}
		}
		return nil
	})
	if now := f.owners(); !maps.EqualFunc(now, owners, slices.Equal) {
		t.Fatalf("the owners moved while the shares were settled: %v, then %v", owners, now)
	}
	f.mu.Lock()
	for name, by := range f.published {
		if ids := slices.Sorted(maps.Keys(by)); !slices.Equal(ids, owners[name]) {
			t.Errorf("%s published by %v, owned by %v", name, ids, owners[name])
		}
	}
	f.mu.Unlock()

	// Kill the replica with the most clusters; a person changes every
	// spec at once.
	count := map[string][]string{}
	for name, ids := range f.owners() {
		count[ids[0]] = append(count[ids[0]], name)
	}
	victim := slices.MaxFunc([]string{"a", "b", "c"}, func(x, y string) int { return len(count[x]) - len(count[y]) })
	moved := count[victim]
	f.kill(f.replicas[victim])
	killed := time.Now()
	files, _ := shardSpecs(f.shards, 12, 5)
	gitbed.Commit(t, f.bare, files)
	for _, id := range []string{"a", "b", "c"} {
		if id != victim {
			webhook(f.replicas[id])
			break
		}
	}

	testbed.Eventually(t, "the killed replica's clusters owned by the others", f.ownedOnce)
	took := time.Since(killed)
	testbed.Eventually(t, "every cluster's step shows the change", func() error { return f.stepsShow(5) })
	t.Logf("%s's clusters %v moved %s after the kill (leases of %s); all steps updated %s after it",
		victim, moved, took.Round(10*time.Millisecond), shardTestLease, time.Since(killed).Round(10*time.Millisecond))
	if took < shardTestLease/2 {
		t.Errorf("the killed replica's clusters moved %s after the kill, before its Leases could expire", took)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, name := range moved {
		for id, at := range f.published[name] {
			if id == victim && at.After(killed) {
				t.Errorf("%s published by %s after it was killed", name, victim)
			}
		}
		if len(f.published[name]) < 2 {
			t.Errorf("%s, %s's, published since by %v only", name, victim, slices.Sorted(maps.Keys(f.published[name])))
		}
	}
	for branch, ids := range f.opened {
		if len(ids) != 1 {
			t.Errorf("%s's pull request opened %d times, by %v", branch, len(ids), ids)
		}
	}
	if len(f.opened) != len(f.refs) {
		t.Errorf("%d pull requests opened, want one per cluster (%d)", len(f.opened), len(f.refs))
	}
	if f.writes == 0 {
		t.Error("no pull request write was checked")
	}
	t.Logf("%d pull request writes checked against the other replicas' ownership", f.writes)
	for _, v := range f.violations {
		t.Error(v)
	}
	for _, e := range f.passErrors {
		t.Error(e)
	}
}
