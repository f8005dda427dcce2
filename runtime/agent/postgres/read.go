package postgres

import (
	"context"
	"errors"

	corev1 "k8s.io/api/core/v1"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/runtime/agent"
)

// refreshPasses: while the cluster is steady, the runtime reads the API
// server on one pass in this many (every 10 s at the default 500 ms),
// and probes the members on every pass.
const refreshPasses = 20

// pgRead is what a pass reads of the API server: how to reach the
// members (with the rendered config, kept in Roles.rendered), the status,
// the member pods, their cordoned nodes and their clean stops. The pods are the pass's own: labels the pass sets
// are set on them too, so a later pass on the same read sees them.
type pgRead struct {
	auth  pgAuth
	store *pgStatusStore
	pods  []corev1.Pod
	// draining are the members on cordoned nodes, and stops their clean
	// stops, read once a fresh pass finds a member not answering
	// (nodes.go).
	draining  map[string]string
	stops     map[string]pgCleanStop
	stopsRead bool
	// passes counts the passes made on this read after the first.
	passes int
}

// errNotSteady: a pass on an earlier read found something to do or
// something wrong; the pass reads the API server again and decides on
// what it reads.
var errNotSteady = errors.New("not steady: read again")

// read reads the API server for a pass, and keeps what it read for the
// next passes (reusable).
func (r *Roles) read(ctx context.Context) (*pgRead, error) {
	r.last = nil
	auth, err := r.auth(ctx)
	if err != nil {
		return nil, err
	}
	store := &pgStatusStore{Client: r.Client, Namespace: r.Namespace, Name: contract.StatusConfigMap(r.Cluster)}
	if _, err := store.read(ctx); err != nil {
		return nil, err
	}
	pods, ignored, err := agent.MemberPods(ctx, r.Client, r.Namespace, contract.AppPostgres, r.Cluster)
	if err != nil {
		return nil, err
	}
	r.warnIgnored(ignored)
	r.last = &pgRead{auth: auth, store: store, pods: pods, draining: r.drainingNodes(ctx, pods)}
	return r.last, nil
}

// reusable is the last read, when this pass may be made on it: the last
// pass found the cluster steady, in this term (passes no further apart
// than staleAfter), and fewer than refreshPasses passes were made on it.
//
// Why this is safe: a pass on an earlier read acts on nothing. It probes
// every member as every pass does, decides on what it probed and the
// labels, status and rendered config as last read, and goes on only if
// the decision is that there is nothing to do, nothing is under way,
// every member answers and every replica streams (steady); then it only
// reports, its status write guarded by the resourceVersion it read or
// last wrote. Anything else (a member that stops answering, a second
// primary, a label or setting to fix, a status another writer moved)
// makes it read again and decide on what it reads, at once, within the
// same pass: failover, fencing and promotion are decided on a fresh read,
// and a member's first failed probe is counted from the pass that saw
// it. What only the API server shows while every member answers (a
// label or annotation changed by hand, a merged step's request, a new
// pod, a cordoned node) is seen within refreshPasses passes.
func (r *Roles) reusable() *pgRead {
	rd := r.last
	if rd == nil || !r.steady || r.clock().Sub(r.lastPass) > staleAfter {
		return nil
	}
	if rd.passes++; rd.passes >= refreshPasses {
		return nil
	}
	return rd
}

// steady: the first decision of a pass is that there is nothing to do,
// no failover or switchover is under way, and every member answers, the
// replicas streaming.
func steady(v pgView, first pgAction) bool {
	if first.Kind != pgNone || first.Why != "" || v.Status.Failover != nil || v.Status.Switchover != nil || len(v.Members) == 0 {
		return false
	}
	for _, m := range v.Members {
		if m.Probe.Reach != reachUp || (m.replica() && !m.Probe.Streaming) {
			return false
		}
	}
	return true
}
