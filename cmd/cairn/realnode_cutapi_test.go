package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/publish"
	"github.com/cairn-dev/cairn/runtime/agent/postgres"
	"github.com/cairn-dev/cairn/testbed"
	"github.com/cairn-dev/cairn/testbed/kubenode"
)

// The primary's node is cut off from the machine only
// (kubenode.HostLink): from the API server and the cluster's DNS, while
// its replicas and the runtime, on the other nodes, still reach it, with
// synchronous replication (FIRST 1). The primary cannot confirm its role
// label, but every other member still follows it, so its failsafe keeps
// its lease (docs/runtime.md, "The failsafe"): nothing changes for four
// leases, the writer goes on through -rw, the primary keeps its label and
// the runtime does not fail over. Healed, no pull request and no drift.
// (Before the failsafe, the primary stopped when its lease ended and the
// runtime failed over: a writer's outage of 10.1 s.)
func TestRealNodePostgresCutFromAPIServer(t *testing.T) {
	const shop = "shop"
	c := startPgOnNodes(t, 3, 3, 1)
	l, primary, cut, w := c.l, c.primary, c.node, c.w
	pod, err := l.cp.Client(t).CoreV1().Pods(l.ns).Get(l.ctx, primary, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The primary holds its failsafe list before the cut.
	testbed.Eventually(t, "the primary's failsafe list recorded", func() error {
		sets, err := l.failsafeSets(shop)
		if err != nil {
			return err
		}
		if len(sets) != 1 || !strings.HasPrefix(sets[0], primary+" ") {
			return fmt.Errorf("failsafe lists %q", sets)
		}
		return nil
	})

	cutAt := time.Now()
	l.node.Cut(t, cut.Name, kubenode.HostLink)
	inside := l.sampleInside(shop, cut, pod.Status.PodIP)
	before, _, _ := w.look()
	hold := 4 * contract.PostgresLeaseTTL
	var longest time.Duration
	for time.Since(cutAt) < hold {
		if o := l.pass()[shop]; o.Action == publish.ActionOpened {
			t.Fatalf("a pull request while the primary's node is cut off from the API server: %+v", o)
		}
		_, outage, _ := w.look()
		longest = max(longest, outage)
		if roles, err := l.roles(shop); err == nil && roles[primary] != contract.RolePrimary {
			t.Fatalf("%s is labelled %q %s after its node was cut off from the API server: roles %v", primary, roles[primary], time.Since(cutAt).Round(time.Millisecond), roles)
		}
		time.Sleep(time.Second)
	}
	during, _, last := w.look()
	acks, lastAck, tries := inside.stop()
	healAt := time.Now()
	l.node.Heal(t, cut.Name)
	testbed.Eventually(t, "the cluster healthy after the heal", func() error {
		p, err := l.primaryOf(shop, 3)
		if err == nil && p != primary {
			return fmt.Errorf("the primary is %s, was %s", p, primary)
		}
		return err
	})
	acked, lostWrites := w.stop(l, shop)
	lostInside := l.lostInside(shop, inside)
	events := l.runtimeEvents(cutAt)
	t.Logf("%s cut off from the API server and the machine for %s with the primary %s: %d writes acknowledged through -rw meanwhile, the writer's longest outage %s (last error %v); inside, %d of %d writes to %s acknowledged, the last %.1fs after the cut; healed and whole %.1fs later; the runtime's Events: %s; %d writes acknowledged through -rw, %d lost, %d failed",
		cut.Name, hold, primary, during-before, longest, last, acks, tries, primary, lastAck.Sub(cutAt).Seconds(),
		time.Since(healAt).Seconds(), events, acked, lostWrites, w.failed)
	if during-before < 20 {
		t.Errorf("only %d writes acknowledged through -rw while the primary was cut off from the API server", during-before)
	}
	if tries == 0 || acks == 0 {
		t.Errorf("inside the node, %d of %d writes acknowledged: the primary stopped", acks, tries)
	}
	if strings.Contains(events, postgres.ReasonFailover) {
		t.Errorf("the runtime failed over from a primary every member followed: %s", events)
	}
	if lostWrites > 0 || lostInside > 0 {
		t.Errorf("acknowledged writes lost: %d through -rw, %d inside", lostWrites, lostInside)
	}
	if o := l.pass()[shop]; o.Action == publish.ActionOpened {
		t.Fatalf("a pull request after the cut healed: %+v", o)
	}
	l.noDrift("after the cut from the API server healed")
}

// failsafeSets are the failsafe lists the PostgreSQL runtime records for
// the cluster's primary (its status, contract.StatusKeyPostgres).
func (l *loop) failsafeSets(cluster string) ([]string, error) {
	cm, err := l.cp.Client(l.t).CoreV1().ConfigMaps(l.ns).Get(l.ctx, contract.StatusConfigMap(cluster), metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	var st struct {
		Failsafe []string `json:"failsafe"`
	}
	if err := json.Unmarshal([]byte(cm.Data[contract.StatusKeyPostgres]), &st); err != nil {
		return nil, fmt.Errorf("%s: %w", contract.StatusKeyPostgres, err)
	}
	return st.Failsafe, nil
}
