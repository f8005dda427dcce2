package etcd

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/runtime/instance"
	"github.com/cairn-dev/cairn/runtime/instance/internal/instancetest"
)

// etcdBed runs members "e-<n>" on 127.0.0.<n+1>, each with its own ports.
type etcdBed struct {
	t          *testing.T
	bin        string
	dir        string
	peer, cli  map[string]int
	procs      map[string]*proc
	bootstrapN int
}

func newEtcdBed(t *testing.T, members int) *etcdBed {
	b := &etcdBed{t: t, bin: binary(t, "CAIRN_ETCD", "etcd"), dir: t.TempDir(),
		peer: map[string]int{}, cli: map[string]int{}, procs: map[string]*proc{}, bootstrapN: members}
	for i := range 5 {
		name := "e-" + itoa(i)
		b.peer[name], b.cli[name] = instancetest.FreePort(t, instancetest.HostOf(i)), instancetest.FreePort(t, instancetest.HostOf(i))
	}
	return b
}

func itoa(i int) string { return string(rune('0' + i)) }

func (b *etcdBed) host(m string) string {
	o, _ := contract.PodOrdinal(m)
	return instancetest.HostOf(o)
}

func (b *etcdBed) manager(name, bootstrap string) *Manager {
	var eps []string
	for m := range b.procs {
		eps = append(eps, url(b.host(m), b.cli[m]))
	}
	slices.Sort(eps)
	return &Manager{
		Name: name, DataDir: filepath.Join(b.dir, name),
		Config:        Config{Config: instance.Config{Bootstrap: bootstrap}, InitialMembers: b.bootstrapN, Token: "test-token"},
		PeerURL:       func(m string) string { return url(b.host(m), b.peer[m]) },
		ClientURL:     func(m string) string { return url(b.host(m), b.cli[m]) },
		ListenPeerURL: url(b.host(name), b.peer[name]), ListenClientURL: url(b.host(name), b.cli[name]),
		Endpoints: eps, DialTimeout: 2 * time.Second, Log: instancetest.Logger(b.t),
	}
}

func (b *etcdBed) start(name string, args []string) {
	b.procs[name] = start(b.t, nil, b.bin, args...)
}

func (b *etcdBed) client() *clientv3.Client {
	var eps []string
	for m := range b.procs {
		eps = append(eps, url(b.host(m), b.cli[m]))
	}
	c, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		b.t.Fatal(err)
	}
	b.t.Cleanup(func() { c.Close() })
	return c
}

func (b *etcdBed) members(ctx context.Context) (map[string]bool, error) {
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	resp, err := b.client().MemberList(cctx)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{} // name -> learner
	for _, m := range resp.Members {
		out[m.Name] = m.IsLearner
	}
	return out, nil
}

func TestEtcdBootstrapJoinAsLearnerAndRejoin(t *testing.T) {
	ctx := context.Background()
	b := newEtcdBed(t, 2)

	// A create step: two members bootstrap together.
	for _, m := range []string{"e-0", "e-1"} {
		args, err := b.manager(m, "new").Args(ctx)
		if err != nil {
			t.Fatalf("%s: %v", m, err)
		}
		if !slices.Contains(args, "new") || !strings.Contains(strings.Join(args, " "), "e-0=") {
			t.Fatalf("%s bootstraps with %v", m, args)
		}
		b.start(m, args)
	}
	instancetest.Eventually(t, 30*time.Second, "two-member cluster", func(ctx context.Context) error {
		_, err := b.client().Put(ctx, "k", "v")
		return err
	})

	// A third member with no data joins the running cluster as a learner,
	// even with bootstrap=new still in its config.
	m2 := b.manager("e-2", "new")
	m2.Config.InitialMembers = 3
	var args []string
	// etcd refuses membership changes until the cluster has been healthy
	// for a few seconds; the instance manager retries, as here.
	instancetest.Eventually(t, 30*time.Second, "e-2 added", func(ctx context.Context) (err error) {
		args, err = m2.Args(ctx)
		return err
	})
	if !slices.Contains(args, "existing") || slices.Contains(args, "--initial-cluster-token") {
		t.Fatalf("e-2 must join, not bootstrap: %v", args)
	}
	ms, err := b.members(ctx)
	if err != nil || !ms[""] {
		t.Fatalf("e-2 was not added as a learner: %v %v", ms, err)
	}
	b.start("e-2", args)
	instancetest.Eventually(t, 30*time.Second, "e-2 started as a learner", func(ctx context.Context) error {
		ms, err := b.members(ctx)
		if err != nil {
			return err
		}
		if learner, ok := ms["e-2"]; !ok || !learner {
			return errors.New("e-2 not yet a started learner")
		}
		return nil
	})

	// Restarted with its data, a member starts from it.
	b.procs["e-1"].kill(15)
	args, err = b.manager("e-1", "existing").Args(ctx)
	if err != nil || slices.Contains(args, "--initial-cluster") {
		t.Fatalf("restart from data: %v %v", args, err)
	}
	b.start("e-1", args)

	// A member that lost its data while still in the membership is left
	// to the runtime.
	b.procs["e-2"].kill(15)
	if err := os.RemoveAll(filepath.Join(b.dir, "e-2")); err != nil {
		t.Fatal(err)
	}
	delete(b.procs, "e-2")
	if _, err := b.manager("e-2", "existing").Args(ctx); !errors.Is(err, ErrDataLost) {
		t.Fatalf("lost data: got %v, want ErrDataLost", err)
	}
}

// bootstrap starts members as a create step does and waits until each
// serves.
func (b *etcdBed) bootstrap(ctx context.Context, members ...string) {
	for _, m := range members {
		args, err := b.manager(m, "new").Args(ctx)
		if err != nil {
			b.t.Fatal(err)
		}
		b.start(m, args)
	}
	instancetest.Eventually(b.t, 30*time.Second, "the new cluster", func(ctx context.Context) error {
		_, err := b.client().Put(ctx, "k", "v")
		return err
	})
	for _, m := range members {
		instancetest.Eventually(b.t, 30*time.Second, m+" serving", func(ctx context.Context) error {
			_, err := b.client().Status(ctx, url(b.host(m), b.cli[m]))
			return err
		})
	}
}

func TestEtcdRemovedMemberKeepsItsDataAsideAndRejoins(t *testing.T) {
	ctx := context.Background()
	b := newEtcdBed(t, 3)
	b.bootstrap(ctx, "e-0", "e-1", "e-2")
	// e-2 is stopped and removed (a scale-in), keeping its volume.
	b.procs["e-2"].kill(15)
	delete(b.procs, "e-2")
	cli := b.client()
	resp, err := cli.MemberList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range resp.Members {
		if m.Name == "e-2" {
			if _, err := cli.MemberRemove(ctx, m.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Scaled out again, it finds stale data: moved aside, then a new join.
	var args []string
	instancetest.Eventually(t, 30*time.Second, "e-2 rejoins", func(ctx context.Context) (err error) {
		args, err = b.manager("e-2", "existing").Args(ctx)
		return err
	})
	if !slices.Contains(args, "existing") {
		t.Fatalf("rejoin: %v", args)
	}
	matches, _ := filepath.Glob(filepath.Join(b.dir, "e-2.stale-*", "member"))
	if len(matches) != 1 {
		t.Fatalf("stale data not kept aside: %v", matches)
	}
	b.start("e-2", args)
	instancetest.Eventually(t, 30*time.Second, "e-2 back as a learner", func(ctx context.Context) error {
		if ms, err := b.members(ctx); err != nil || !ms["e-2"] {
			return errors.New("not yet")
		}
		return nil
	})
}

func TestEtcdNeverBootstrapsOutsideACreateStep(t *testing.T) {
	b := newEtcdBed(t, 3)
	for _, tc := range []struct {
		member, bootstrap string
	}{{"e-0", "existing"}, {"e-3", "new"}} {
		_, err := b.manager(tc.member, tc.bootstrap).Args(context.Background())
		if !errors.Is(err, ErrNoCluster) {
			t.Errorf("%s with bootstrap=%s: got %v, want ErrNoCluster", tc.member, tc.bootstrap, err)
		}
	}
}

func TestEtcdMemberBeingRemovedWaits(t *testing.T) {
	b := newEtcdBed(t, 3)
	m := b.manager("e-2", "existing")
	m.Config.RemoveMember = "e-2"
	if _, err := m.Args(context.Background()); !errors.Is(err, ErrRemoving) {
		t.Fatalf("got %v, want ErrRemoving", err)
	}
}
