package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/planner/spec"
	"github.com/cairn-dev/cairn/testbed"
)

// The chain a 3.4 cluster moving to 3.7 passes through: each intermediate
// line at its newest patch (spec.EtcdUpgradePath).
var chainHops = []string{"3.5.35", "3.6.16", "3.7.3"}

// Issue 22, item 1: a 3.4.23 cluster (Debian's etcd-server) whose spec is
// moved to 3.7.3 in one edit goes 3.4 -> 3.5 -> 3.6 -> 3.7 on real
// members, one member and one minor at a time, each hop starting with a
// snapshot, from members at or above the hop's floor, and ending with etcd
// raising its cluster version; a client writing throughout loses no
// acknowledged write.
func TestEtcdUpgradeChain(t *testing.T) {
	const kv = "chain"
	needEtcd(t, "etcd-3.4", "etcd-3.5", "etcd-3.6")
	policy := []string{"backup:", `  schedule: "0 3 * * *"`, `  storageLocation: "file://` + t.TempDir() + `"`}
	l := newLoop(t, etcdSpecAt(kv, 3, "3.4.23", policy...))
	l.createEtcd(kv, 3)
	l.wantMembersAt(kv, "3.4.23")
	if cv := l.clusterVersion(kv, 0); cv != "3.4" {
		t.Fatalf("a new 3.4.23 cluster reports cluster version %q", cv)
	}

	w := startWriter(l.ctx, l.client(kv, 3))
	l.editSpec(etcdSpecAt(kv, 3, "3.7.3", policy...))
	l.within = 12 * time.Minute
	steps := l.converge(kv, func(step string) { l.checkHop(kv, step) })
	testbed.Eventually(t, "3 healthy voters at 3.7", l.voters(kv, 3))
	acked, failed, outage := w.stop()

	var want []string
	for _, to := range chainHops {
		want = append(want, "backup-before-"+to)
		for ord := 2; ord >= 0; ord-- {
			want = append(want, fmt.Sprintf("upgrade-%d-to-%s", ord, to))
		}
	}
	if strings.Join(steps, ",") != strings.Join(want, ",") {
		t.Fatalf("steps\n %v\nwant\n %v", steps, want)
	}
	l.wantMembersAt(kv, "3.7.3")
	if cv := l.clusterVersion(kv, 0); cv != "3.7" {
		t.Fatalf("cluster version %q at the end, want 3.7", cv)
	}
	cli := l.client(kv, 3)
	for _, k := range acked {
		got, err := cli.Get(l.ctx, k)
		if err != nil || len(got.Kvs) != 1 {
			t.Fatalf("acknowledged write %s is gone: %v", k, err)
		}
	}
	l.noDrift("after the chain")
	t.Logf("chain steps %v", steps)
	t.Logf("%d writes acknowledged, %d failed, longest outage %s", len(acked), failed, outage)
	t.Logf("merge (or spec push) to next pull request: %s", strings.Join(l.timings, ", "))
}

// needEtcd stops the test when an etcd binary of an older minor is not in
// .cache/bin (make testbin builds and fetches them): a skip with -short,
// a failure otherwise.
func needEtcd(t *testing.T, bins ...string) {
	t.Helper()
	testbed.Require(t, testbed.TierIntegration, "etcd members")
	for _, b := range bins {
		testbed.Bin(t, b)
	}
}

// checkHop runs after each step of the chain is merged and synced. Every
// step but a hop's last member leaves a member on the version before the
// hop, so etcd's cluster version is that version's minor, whatever the
// timing; a hop's snapshot step opens only once the previous hop finished,
// so then every member runs the previous version, at or above its line's
// floor for the hop.
func (l *loop) checkHop(cluster, step string) {
	t := l.t
	to, ok := strings.CutPrefix(step, "backup-before-")
	if !ok {
		var ord int
		if _, err := fmt.Sscanf(step, "upgrade-%d-to-", &ord); err != nil || ord == 0 {
			return // a hop's last member: member 0 is restarting
		}
		to = step[strings.LastIndex(step, "-")+1:]
	}
	from := "3.4.23"
	for i, h := range chainHops {
		if h == to && i > 0 {
			from = chainHops[i-1]
		}
	}
	fv, _ := spec.ParseRelease(from, 3)
	prevMinor := fmt.Sprintf("%d.%d", fv.Major, fv.Minor)
	if cv := l.clusterVersion(cluster, 0); cv != prevMinor {
		t.Fatalf("after merging %s: cluster version %q, want %s", step, cv, prevMinor)
	}
	if !ok {
		return
	}
	l.wantMembersAt(cluster, from)
	if f, has := spec.EtcdUpgradeFloor(fv); has && fv.Compare(f.Floor) < 0 {
		t.Fatalf("%s: the members run %s, below the floor %s for the next minor", step, from, f.Floor)
	}
	t.Logf("hop to %s starts from %s at cluster version %s", to, from, prevMinor)
}

// wantMembersAt fails the test unless every member of a 3-member cluster
// reports version v.
func (l *loop) wantMembersAt(cluster, v string) {
	t := l.t
	cli := l.client(cluster, 3)
	for i := range 3 {
		ctx, cancel := context.WithTimeout(l.ctx, 3*time.Second)
		st, err := cli.Status(ctx, l.bed.ClientURL(cluster, i))
		cancel()
		if err != nil || st.Version != v {
			t.Fatalf("member %d: want %s, status %+v %v", i, v, st, err)
		}
	}
}

// clusterVersion is the major.minor of etcd's cluster version as member
// ord's /version endpoint reports it ("etcdcluster": "3.5.0"), or "" when
// it does not answer.
func (l *loop) clusterVersion(cluster string, ord int) string {
	ctx, cancel := context.WithTimeout(l.ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, l.bed.ClientURL(cluster, ord)+"/version", nil)
	if err != nil {
		return ""
	}
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: l.etcdTLS(cluster)}}
	defer hc.CloseIdleConnections()
	resp, err := hc.Do(req)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	var v struct {
		Cluster string `json:"etcdcluster"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		return ""
	}
	parts := strings.SplitN(v.Cluster, ".", 3)
	if len(parts) < 2 {
		return v.Cluster
	}
	return parts[0] + "." + parts[1]
}
