package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/testbed"
)

// Issue 22, item 4: a cluster upgraded from 3.6.16 to 3.7.3 is moved back
// to 3.6.16 through etcd's downgrade protocol on real members: a
// snapshot, a step whose merge makes the runtime enable the downgrade
// (etcd lowers its cluster version to 3.6 at once), then one member at a
// time, the highest ordinal first; etcd ends the downgrade once every
// member runs 3.6. A client writing throughout loses no acknowledged
// write.
func TestEtcdDowngradeFrom37To36(t *testing.T) {
	const kv = "down"
	needEtcd(t, "etcd-3.6")
	policy := []string{"backup:", `  schedule: "0 3 * * *"`, `  storageLocation: "file://` + t.TempDir() + `"`}
	l := newLoop(t, etcdSpecAt(kv, 3, "3.6.16", policy...))
	l.createEtcd(kv, 3)
	w := startWriter(l.ctx, l.client(kv, 3))

	l.editSpec(etcdSpecAt(kv, 3, "3.7.3", policy...))
	up := l.converge(kv, nil)
	testbed.Eventually(t, "3 healthy voters at 3.7", l.voters(kv, 3))
	l.wantMembersAt(kv, "3.7.3")
	if cv := l.clusterVersion(kv, 0); cv != "3.7" {
		t.Fatalf("cluster version %q after the upgrade, want 3.7", cv)
	}

	l.editSpec(etcdSpecAt(kv, 3, "3.6.16", policy...))
	down := l.converge(kv, func(step string) {
		if !strings.HasPrefix(step, "downgrade-") || strings.HasPrefix(step, "downgrade-0-") {
			return
		}
		// Once the downgrade is enabled etcd runs at 3.6, whatever its
		// members run.
		if cv := l.clusterVersion(kv, 0); cv != "3.6" {
			t.Fatalf("after merging %s: cluster version %q, want 3.6", step, cv)
		}
	})
	testbed.Eventually(t, "3 healthy voters at 3.6 again", l.voters(kv, 3))
	acked, failed, outage := w.stop()

	want := "backup-before-downgrade-to-3.6.16,etcd-downgrade-to-3.6,downgrade-2-to-3.6.16,downgrade-1-to-3.6.16,downgrade-0-to-3.6.16"
	if strings.Join(down, ",") != want {
		t.Fatalf("downgrade steps %v, want %s", down, want)
	}
	l.wantMembersAt(kv, "3.6.16")
	testbed.Eventually(t, "cluster version 3.6 and the downgrade ended", func() error {
		if cv := l.clusterVersion(kv, 0); cv != "3.6" {
			return fmt.Errorf("cluster version %q", cv)
		}
		ctx, cancel := context.WithTimeout(l.ctx, 3*time.Second)
		defer cancel()
		st, err := l.client(kv, 3).Status(ctx, l.bed.ClientURL(kv, 0))
		if err != nil {
			return err
		}
		if d := st.DowngradeInfo; d != nil && d.Enabled {
			return fmt.Errorf("etcd still reports the downgrade to %s enabled", d.TargetVersion)
		}
		return nil
	})
	cli := l.client(kv, 3)
	for _, k := range acked {
		got, err := cli.Get(l.ctx, k)
		if err != nil || len(got.Kvs) != 1 {
			t.Fatalf("acknowledged write %s is gone: %v", k, err)
		}
	}
	l.noDrift("after the downgrade")
	t.Logf("upgrade steps %v; downgrade steps %v", up, down)
	t.Logf("%d writes acknowledged, %d failed, longest outage %s", len(acked), failed, outage)
	t.Logf("merge (or spec push) to next pull request: %s", strings.Join(l.timings, ", "))
}
