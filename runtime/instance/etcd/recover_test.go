package etcd

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/runtime/instance"
	"github.com/cairn-dev/cairn/runtime/instance/internal/instancetest"
)

// A recovery merged while quorum came back is moot: a member restarting
// with it in its config (the seed, or any other) finds the cluster
// answering with quorum and listing it, and starts from its data as
// before; nothing is moved aside, no --force-new-cluster, no marker.
func TestEtcdRecoveryIsMootWhileTheClusterHasQuorum(t *testing.T) {
	ctx := context.Background()
	b := newEtcdBed(t, 3)
	b.bootstrap(ctx, "e-0", "e-1", "e-2")
	recovery := &Recover{ID: "etcd-recover-x", Mode: contract.EtcdRecoverFromMember, Seed: "e-0"}
	for _, m := range []string{"e-0", "e-2"} {
		b.procs[m].kill(15)
		delete(b.procs, m)
		mgr := b.manager(m, "existing")
		mgr.Config.Recover = recovery
		var args []string
		instancetest.Eventually(t, 30*time.Second, m+" may start", func(ctx context.Context) (err error) {
			args, err = mgr.Args(ctx)
			return err
		})
		if slices.Contains(args, "--force-new-cluster") || slices.Contains(args, "--initial-cluster") {
			t.Fatalf("%s starts with %v, want from its data as before", m, args)
		}
		if _, err := os.Stat(mgr.markerPath()); !os.IsNotExist(err) {
			t.Fatalf("%s marked a moot recovery: %v", m, err)
		}
		if stale, _ := filepath.Glob(filepath.Join(b.dir, m+".stale-*")); len(stale) > 0 {
			t.Fatalf("%s moved its data aside: %v", m, stale)
		}
		b.start(m, args)
	}
}

// The members of a recovery wait for the seed, which alone may start a
// cluster; a seed to keep its data must have some.
func TestEtcdRecoveryWaitsForTheSeed(t *testing.T) {
	ctx := context.Background()
	b := newEtcdBed(t, 3)
	other := b.manager("e-1", "existing")
	other.Config.Recover = &Recover{ID: "r", Mode: contract.EtcdRecoverFromMember, Seed: "e-0"}
	if _, err := other.Args(ctx); err == nil || !strings.Contains(err.Error(), "waiting for e-0") {
		t.Fatalf("e-1: %v, want a wait for e-0", err)
	}
	seed := b.manager("e-0", "existing")
	seed.Config.Recover = other.Config.Recover
	if _, err := seed.Args(ctx); err == nil || !strings.Contains(err.Error(), "is empty") {
		t.Fatalf("e-0 without data: %v", err)
	}
}

func TestReadRecoverConfig(t *testing.T) {
	for _, c := range []struct {
		name string
		keys map[string]string
		want *Recover
		err  string
	}{
		{"none", map[string]string{}, nil, ""},
		{"from a member", map[string]string{contract.KeyRecoverID: "r", contract.KeyRecoverMode: "member", contract.KeyRecoverSeed: "e-2"},
			&Recover{ID: "r", Mode: "member", Seed: "e-2"}, ""},
		{"from a snapshot", map[string]string{contract.KeyRecoverID: "r", contract.KeyRecoverMode: "snapshot", contract.KeyRecoverSeed: "e-0",
			contract.KeyRecoverToken: "e-r", contract.KeyRecoverStorageLocation: "file:///b", contract.KeyRecoverCluster: "e", contract.KeyRecoverBackup: "b1"},
			&Recover{ID: "r", Mode: "snapshot", Seed: "e-0", Token: "e-r", Snapshot: &instance.Restore{Location: "file:///b", Cluster: "e", Backup: "b1"}}, ""},
		{"no seed", map[string]string{contract.KeyRecoverID: "r", contract.KeyRecoverMode: "member"}, nil, "recover.seed: missing"},
		{"a snapshot without its backup", map[string]string{contract.KeyRecoverID: "r", contract.KeyRecoverMode: "snapshot", contract.KeyRecoverSeed: "e-0",
			contract.KeyRecoverToken: "e-r", contract.KeyRecoverStorageLocation: "file:///b", contract.KeyRecoverCluster: "e"}, nil, "recover.backup: missing"},
		{"an unknown mode", map[string]string{contract.KeyRecoverID: "r", contract.KeyRecoverMode: "guess", contract.KeyRecoverSeed: "e-0"}, nil, `got "guess"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			for k, v := range c.keys {
				if err := os.WriteFile(filepath.Join(dir, k), []byte(v+"\n"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			cfg, err := ReadConfig(dir)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, want := cfg.Recover, c.want
			if (got == nil) != (want == nil) || got != nil && (got.ID != want.ID || got.Mode != want.Mode || got.Seed != want.Seed || got.Token != want.Token ||
				(got.Snapshot == nil) != (want.Snapshot == nil) || got.Snapshot != nil && *got.Snapshot != *want.Snapshot) {
				t.Fatalf("got %+v, want %+v", got, want)
			}
		})
	}
}
