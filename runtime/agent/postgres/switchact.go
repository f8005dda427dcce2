package postgres

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/runtime/agent"
)

// actSwitchover does a switchover step's I/O, the status written first.
func (p *pgPass) actSwitchover(ctx context.Context, a pgAction) (bool, error) {
	st, now := &p.view.Status, p.view.Now
	switch a.Kind {
	case pgBeginSwitchover:
		pr, _ := findMember(p.view.Members, a.Member)
		st.Switchover = &pgSwitchover{ID: p.view.Switchover.ID, From: a.Member, To: a.To, StartedAt: now, LSN: pr.Probe.Received}
		if a.Node != "" {
			st.Switchover.ID, st.Switchover.Drain = "", a.Node
		}
		if _, err := p.step(ctx, "switchover-recorded", agent.Event{Type: corev1.EventTypeNormal, Reason: ReasonSwitchoverStarted,
			Message: fmt.Sprintf("switching over from %s to %s (%s): %s is read-only until %s has replayed its WAL", a.Member, a.To, st.Switchover.what(), a.Member, a.To)}); err != nil {
			return false, err
		}
		err := p.sql(ctx, a.Member, "ALTER SYSTEM SET default_transaction_read_only = on", "SELECT pg_reload_conf()",
			"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND backend_type = 'client backend'")
		if err != nil {
			return false, fmt.Errorf("make %s read-only: %w", a.Member, err)
		}
		return false, nil
	case pgSwitchWait:
		st.Switchover.LSN = a.LSN
		_, err := p.step(ctx, "switchover-wait", agent.Event{})
		return false, err
	case pgSwitchFence:
		if err := p.setLabel(ctx, a.Member, contract.RoleFenced); err != nil {
			return false, err
		}
		st.Switchover.FencedAt = now
		_, err := p.step(ctx, "switchover-fenced", agent.Event{Type: corev1.EventTypeNormal, Reason: ReasonPrimaryFenced, Message: a.Member + " is fenced for the switchover: its instance manager stops it"})
		return false, err
	case pgSwitchAbort:
		if a.GiveBack {
			if err := p.sql(ctx, a.Member, "ALTER SYSTEM RESET default_transaction_read_only", "SELECT pg_reload_conf()"); err != nil {
				return false, fmt.Errorf("give %s its writes back: %w", a.Member, err)
			}
		}
		st.Switchover, st.SwitchoverRetryAt = nil, now.Add(p.view.Settings.CatchUp)
		_, err := p.step(ctx, "switchover-aborted", agent.Event{Type: corev1.EventTypeWarning, Reason: ReasonSwitchoverAborted, Message: a.Why + "; trying again later"})
		return false, err
	case pgSwitchDone:
		st.SwitchoverDone = p.view.Switchover.ID
		_, err := p.step(ctx, "switchover-done", agent.Event{})
		return false, err
	}
	return false, fmt.Errorf("unknown action %s", a.Kind)
}

// emit records ev on the StatefulSet (a bare reference when it cannot be
// read) through the runtime's one Event writer, at once: a leader may die
// before its pass ends. An Event not recorded is logged, never a reason
// to stop a failover.
func (p *pgPass) emit(ctx context.Context, ev agent.Event) {
	if ev.Reason == "" {
		return
	}
	if err := agent.RecordClusterEvent(ctx, p.r.Client, p.r.Namespace, p.r.Cluster, p.r.clock(), ev); err != nil {
		p.r.logger().Warn("event not recorded", "reason", ev.Reason, "err", err.Error())
	}
}
