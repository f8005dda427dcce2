package etcd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/runtime/agent"
)

// maintain is the maintenance pass that ends a membership pass (see
// maint.go): look, decide, act, report. seen is the membership as it
// is after the membership pass; busy says why no member may be
// defragmented now ("" when one may).
func (m *Membership) maintain(ctx context.Context, cli *clientv3.Client, sts *appsv1.StatefulSet, config map[string]string, seen etcdLook, busy string) error {
	v, ok, err := m.maintView(ctx, cli, config, seen, busy)
	if err != nil || !ok {
		return err
	}
	a := decideMaint(v)
	r := m.maintAct(ctx, cli, v, a)
	next := nextMaint(v, a, r)
	werr := m.writeMaint(ctx, v.Prev, steadySizes(v.Prev, next), a.Kind != maintNone)
	m.Metrics.observeMaint(next, v.Quota, a, r)
	return errors.Join(r.Err, werr, agent.RecordEvents(ctx, m.Client, sts, m.clock(), maintEvents(v.Prev, next, a, r)))
}

// maintView reads what decideMaint needs: the rendered policy and quota,
// the last report, the members' databases and the alarms. ok is false
// when there is nothing to report into yet (no status ConfigMap).
func (m *Membership) maintView(ctx context.Context, cli *clientv3.Client, config map[string]string, seen etcdLook, busy string) (maintView, bool, error) {
	v := maintView{Now: m.clock(), Quota: contract.EtcdDefaultQuotaBytes, Busy: busy}
	v.Policy = compactionPolicy{Mode: config[contract.KeyEtcdCompactionMode], Retention: config[contract.KeyEtcdCompactionRetention]}
	if q, err := strconv.ParseInt(config[contract.KeyEtcdQuotaBackendBytes], 10, 64); err == nil && q > 0 {
		v.Quota = q
	}
	status, err := m.Client.CoreV1().ConfigMaps(m.Namespace).Get(ctx, m.statusName(), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return v, false, nil
	}
	if err != nil {
		return v, false, fmt.Errorf("read status: %w", err)
	}
	// A report that cannot be read (an older runtime's) is written anew.
	v.Prev, _ = contract.ParseEtcdMaintenanceStatus(status.Data[contract.StatusKeyEtcdMaintenance])
	names := map[uint64]string{}
	for _, s := range seen.members {
		names[s.id] = s.name
		if !s.answered {
			v.Members = append(v.Members, spaceMember{ID: s.id, Name: s.name, Learner: s.learner})
			continue
		}
		v.Members = append(v.Members, spaceMember{ID: s.id, Name: s.name, ClientURL: s.clientURLs[0], Leader: s.leads, Learner: s.learner,
			Healthy: s.healthy(), DBSize: s.dbSize, InUse: s.dbSizeInUse, Quota: s.quota, Defragmented: defragmentedAt(v.Prev, s.id)})
		v.Revision = max(v.Revision, s.revision)
	}
	v.Alarms = v.Prev.Alarms
	if !v.quorate() {
		return v, true, nil // etcd lists alarms through raft: it would time out
	}
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	if resp, err := cli.AlarmList(cctx); err == nil {
		v.Alarms, v.AlarmsListed = listedAlarms(v.Prev.Alarms, resp.Alarms, names, v.Now), true
	}
	return v, true, nil
}

// maintAct takes the action. A defragmentation is recorded in the report
// before it starts, so that no other replica starts one meanwhile.
func (m *Membership) maintAct(ctx context.Context, cli *clientv3.Client, v maintView, a maintAction) maintResult {
	log := m.logger().With("action", a.Kind.String(), "member", a.Member.Name)
	if a.Kind == maintNone {
		if a.Why != "" {
			log.Info("etcd maintenance waits", "reason", a.Why)
		}
		return maintResult{}
	}
	var r maintResult
	switch a.Kind {
	case maintCompact:
		cctx, cancel := context.WithTimeout(ctx, 2*callTimeout)
		defer cancel()
		_, err := cli.Compact(cctx, a.Revision, clientv3.WithCompactPhysical())
		if errors.Is(rpctypes.Error(err), rpctypes.ErrCompacted) {
			err = nil // compacted past it already (by another client)
		}
		r.Done, r.Err = err == nil, err
	case maintDefrag:
		r = m.defragment(ctx, v, a)
	case maintDisarm:
		cctx, cancel := context.WithTimeout(ctx, 2*callTimeout)
		defer cancel()
		_, err := cli.AlarmDisarm(cctx, &clientv3.AlarmMember{MemberID: a.Member.ID, Alarm: etcdserverpb.AlarmType_NOSPACE})
		r.Done, r.Err = err == nil, err
	}
	if r.Err != nil {
		r.Err = fmt.Errorf("etcd %s %s: %w", a.Kind, a.Member.Name, r.Err)
		log.Warn("etcd maintenance failed", "reason", a.Why, "err", r.Err.Error())
		return r
	}
	log.Info("etcd maintenance", "reason", a.Why, "revision", a.Revision)
	return r
}

// defragment defragments one member, at its own client URL, within
// defragTimeout.
func (m *Membership) defragment(ctx context.Context, v maintView, a maintAction) maintResult {
	var r maintResult
	started := v.Prev
	started.Defragmenting = &contract.EtcdDefrag{Member: a.Member.Name, Started: m.clock().UTC().Format(time.RFC3339)}
	if err := m.patchMaint(ctx, started); err != nil {
		r.Err = err
		return r
	}
	one, err := m.dial(ctx, []string{a.Member.ClientURL})
	if err != nil {
		r.Err = err
		return r
	}
	defer one.Close()
	cctx, cancel := context.WithTimeout(ctx, defragTimeout)
	defer cancel()
	if m.onDefrag != nil {
		m.onDefrag(a.Member.Name, true)
	}
	r.Started = m.clock()
	_, r.Err = one.Defragment(cctx, a.Member.ClientURL)
	r.Ended = m.clock()
	if m.onDefrag != nil {
		m.onDefrag(a.Member.Name, false)
	}
	sctx, scancel := context.WithTimeout(ctx, callTimeout)
	defer scancel()
	if s, err := one.Status(sctx, a.Member.ClientURL); err == nil {
		r.Freed = max(a.Member.DBSize-s.DbSize, 0)
	}
	r.Done = r.Err == nil
	return r
}

// writeMaint stores the report when it differs from prev, acted is set,
// or prev is a heartbeat old.
func (m *Membership) writeMaint(ctx context.Context, prev, next contract.EtcdMaintenanceStatus, acted bool) error {
	if !acted && prev.ObservedAt != "" && sameMaint(prev, next) {
		if at, err := time.Parse(time.RFC3339, prev.ObservedAt); err == nil && next.ObservedAt != "" && m.clock().Sub(at) < agent.StatusHeartbeat {
			return nil
		}
	}
	return m.patchMaint(ctx, next)
}

// patchMaint writes the report's key of the status ConfigMap, and only
// that key.
func (m *Membership) patchMaint(ctx context.Context, st contract.EtcdMaintenanceStatus) error {
	doc, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("write maintenance status: %w", err)
	}
	patch, err := json.Marshal(map[string]any{"data": map[string]string{contract.StatusKeyEtcdMaintenance: string(doc)}})
	if err != nil {
		return fmt.Errorf("write maintenance status: %w", err)
	}
	_, err = m.Client.CoreV1().ConfigMaps(m.Namespace).Patch(ctx, m.statusName(), types.MergePatchType, patch, metav1.PatchOptions{FieldManager: contract.FieldManager})
	if err != nil {
		return fmt.Errorf("write maintenance status: %w", err)
	}
	return nil
}

// defragmentedAt is when the last report says member id was last
// defragmented; zero when never.
func defragmentedAt(prev contract.EtcdMaintenanceStatus, id uint64) time.Time {
	for _, m := range prev.Members {
		if m.ID == strconv.FormatUint(id, 16) {
			at, _ := time.Parse(time.RFC3339, m.Defragmented)
			return at
		}
	}
	return time.Time{}
}

// busyWith says why no member may be defragmented after a membership
// pass that changed the membership or leadership: the next pass looks
// again first.
func busyWith(a action, changed bool) string {
	if !changed {
		return ""
	}
	return "the runtime just made a membership change (" + a.Kind.String() + ")"
}

// isAlarmError reports whether an error a member's Status call lists is
// an alarm ("memberID:... alarm:NOSPACE"): an alarm is reported as such,
// not as an unhealthy member, so that NOSPACE never reads as lost quorum.
func isAlarmError(e string) bool { return strings.Contains(e, "alarm:") }
