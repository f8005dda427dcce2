package postgres

import (
	"context"
	"fmt"
	"net"
	"regexp"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/runtime/agent"
)

// The PostgreSQL Events' reasons.
const (
	ReasonFailoverStarted   = "FailoverStarted"
	ReasonPrimaryFenced     = "PrimaryFenced"
	ReasonFailover          = "FailedOver"
	ReasonSwitchoverStarted = "SwitchoverStarted"
	ReasonSwitchover        = "SwitchedOver"
	ReasonSwitchoverAborted = "SwitchoverAborted"
	ReasonRecoveredInPlace  = "RecoveredInPlace"
)

// act does a decision's I/O and says whether to decide again at once.
// A failover or switchover step is written to the status before it is
// carried out.
func (p *pgPass) act(ctx context.Context, a pgAction) (bool, error) {
	st, now := &p.view.Status, p.view.Now
	switch a.Kind {
	case pgNone:
		if a.Why != "" && withoutDigits(a.Why) != withoutDigits(st.Message) {
			p.r.logger().Info("postgres runtime waits", "reason", a.Why)
		}
		return false, nil
	case pgLabel:
		for _, c := range a.Labels {
			if err := p.setLabel(ctx, c.Pod, c.Role); err != nil {
				return false, err
			}
		}
		return true, nil
	case pgSetSync:
		return p.setSync(ctx, a)
	case pgSetFailsafe:
		return p.setFailsafe(ctx, a)
	case pgBeginFailover:
		st.Failover = &pgFailover{From: a.Member, To: a.To, Reason: a.Why, StartedAt: now}
		return p.step(ctx, "failover-recorded", agent.Event{Type: corev1.EventTypeWarning, Reason: ReasonFailoverStarted, Message: "failing over: " + a.Why})
	case pgFence:
		if err := p.setLabel(ctx, a.Member, contract.RoleFenced); err != nil {
			return false, err
		}
		st.Failover.FencedAt = now
		return p.step(ctx, "fenced", agent.Event{Type: corev1.EventTypeWarning, Reason: ReasonPrimaryFenced, Message: a.Member + " is fenced: no Service sends it writes, and its instance manager stops it"})
	case pgPromote:
		return false, p.promote(ctx, a)
	case pgRetarget:
		// Standbys detached from the first old primary stay recorded: they
		// are pointed at whichever member is promoted in the end.
		// The setting recorded was the first old primary's, not its.
		st.Failover = &pgFailover{From: a.Member, Reason: a.Why, StartedAt: st.Failover.StartedAt, Detached: st.Failover.Detached}
		st.SyncSetting = ""
		return p.step(ctx, "retargeted", agent.Event{Type: corev1.EventTypeWarning, Reason: ReasonFailoverStarted, Message: "failing over: " + a.Why})
	case pgDetach:
		return p.detach(ctx, a)
	case pgRecovered:
		st.LastRecovery = &pgRecovery{Member: a.Member, CrashedAt: a.Crashed, At: now, Seconds: now.Sub(a.Crashed).Seconds()}
		return p.step(ctx, "recovered", agent.Event{Type: corev1.EventTypeNormal, Reason: ReasonRecoveredInPlace, Message: a.Why})
	}
	return p.actSwitchover(ctx, a)
}

// step writes the status, then records ev.
func (p *pgPass) step(ctx context.Context, name string, ev agent.Event) (bool, error) {
	if err := p.store.write(ctx, p.view.Status, ""); err != nil {
		return false, err
	}
	p.emit(ctx, ev)
	if p.r.hook != nil {
		p.r.hook(ctx, name)
	}
	return ctx.Err() == nil, ctx.Err()
}

func (p *pgPass) setLabel(ctx context.Context, pod, role string) error {
	po, ok := p.pods[pod]
	if !ok || po.Labels[contract.LabelRole] == role {
		return nil
	}
	// A label is set only on the pod as listed (a decision on stale data
	// gets a Conflict), but for fencing: taking the primary role away is
	// always safe, and a pod whose container just died has a new status.
	guard := po.ResourceVersion
	if role == contract.RoleFenced {
		guard = ""
	}
	rv, err := p.r.label(ctx, pod, guard, role)
	if err != nil {
		return err
	}
	po.ResourceVersion = rv
	if po.Labels == nil {
		po.Labels = map[string]string{}
	}
	po.Labels[contract.LabelRole] = role
	for i := range p.view.Members {
		if p.view.Members[i].Name == pod {
			p.view.Members[i].Label = role
		}
	}
	return nil
}

// promote makes a.To the primary: the choice is recorded, every other pod
// labelled primary is fenced, a.To is labelled primary, then promoted; the
// other replicas are pointed at it.
func (p *pgPass) promote(ctx context.Context, a pgAction) error {
	st := &p.view.Status
	if f := st.Failover; f != nil && f.To == "" {
		f.To = a.To
		if _, err := p.step(ctx, "target-recorded", agent.Event{Type: corev1.EventTypeNormal, Reason: ReasonFailoverStarted, Message: "promoting " + a.To}); err != nil {
			return err
		}
	}
	for _, m := range p.view.Members {
		if m.Name != a.To && m.Label == contract.RolePrimary {
			if err := p.setLabel(ctx, m.Name, contract.RoleFenced); err != nil {
				return err
			}
		}
	}
	if err := p.setLabel(ctx, a.To, contract.RolePrimary); err != nil {
		return err
	}
	if p.r.hook != nil {
		p.r.hook(ctx, "labelled")
	}
	ip := p.pods[a.To].Status.PodIP
	if err := p.sql(ctx, a.To, "SELECT pg_promote(true, 60) WHERE pg_is_in_recovery()",
		"ALTER SYSTEM RESET default_transaction_read_only", "SELECT pg_reload_conf()"); err != nil {
		return fmt.Errorf("promote %s: %w", a.To, err)
	}
	p.r.logger().Info("promoted", "member", a.To, "from", a.Member, "reason", a.Why)
	p.follow(ctx, a.To, ip)
	return p.finish(ctx, a)
}

// finish records a done failover or switchover.
func (p *pgPass) finish(ctx context.Context, a pgAction) error {
	st, now := &p.view.Status, p.view.Now
	var ev agent.Event
	if f := st.Failover; f != nil {
		took := p.r.clock().Sub(f.StartedAt).Seconds()
		st.LastFailover = &pgDone{From: f.From, To: a.To, At: p.r.clock(), Seconds: took, Reason: f.Reason}
		st.Failovers++
		st.Failover = nil
		p.r.Metrics.failedOver(took)
		ev = agent.Event{Type: corev1.EventTypeWarning, Reason: ReasonFailover, Message: fmt.Sprintf("failed over from %s to %s: %s", a.Member, a.To, a.Why)}
	} else if s := st.Switchover; s != nil {
		st.LastSwitchover = &pgDone{ID: s.ID, From: s.From, To: a.To, At: now, Seconds: p.r.clock().Sub(s.StartedAt).Seconds()}
		if s.Drain != "" {
			// A drain's switchover carries out no merged step's request.
			st.LastSwitchover.Reason = "node " + s.Drain + " is draining"
		} else {
			st.SwitchoverDone = s.ID
		}
		st.Switchover = nil
		ev = agent.Event{Type: corev1.EventTypeNormal, Reason: ReasonSwitchover, Message: fmt.Sprintf("switched over from %s to %s (%s)", a.Member, a.To, s.what())}
	}
	// The new primary's synchronous standbys and settings are recorded
	// once it reports them.
	st.Primary, st.Synchronous, st.SyncSetting = a.To, nil, ""
	// The new primary honours no failsafe value until one naming it on
	// its new timeline is written.
	st.FailsafeSets = nil
	_, err := p.step(ctx, "promoted", ev)
	return err
}

// conninfoAddr finds the address a primary_conninfo reaches: hostaddr
// when it has one (with TLS, host is then the name verified), else host.
var conninfoAddr = regexp.MustCompile(`(?:^|\s)(hostaddr|host)=(\S+)`)

// upstreamAddr is the address key and value of a replica's
// primary_conninfo: hostaddr when set, else host.
func upstreamAddr(conninfo string) (key, value string, ok bool) {
	for _, m := range conninfoAddr.FindAllStringSubmatch(conninfo, -1) {
		if m[1] == "hostaddr" {
			return m[1], m[2], true
		}
		key, value, ok = m[1], m[2], true
	}
	return key, value, ok
}

// follow points the answering replicas that stream from a pod address
// at the new primary. Those that follow the -rw Service (in pods) follow
// it as the label moves; recovery_target_timeline is latest. A standby
// the synchronous fence detached gets its primary_conninfo back, pointed
// at the new primary.
func (p *pgPass) follow(ctx context.Context, to, ip string) {
	for _, m := range p.view.Members {
		if m.Name == to || !m.replica() {
			continue
		}
		upstream := m.Probe.Upstream
		if was, detached := detachedUpstream(p.view.Status, m.Name); detached && upstream == "" {
			upstream = was
		}
		key, addr, ok := upstreamAddr(upstream)
		if !ok {
			continue
		}
		conninfo := upstream
		if net.ParseIP(addr) != nil {
			conninfo = strings.Replace(upstream, key+"="+addr, key+"="+ip, 1)
		}
		if conninfo == m.Probe.Upstream {
			continue
		}
		err := p.sql(ctx, m.Name, "ALTER SYSTEM SET primary_conninfo = "+quoteLiteral(conninfo), "SELECT pg_reload_conf()")
		if err != nil {
			p.r.logger().Warn("replica not pointed at the new primary", "member", m.Name, "err", err.Error())
		}
	}
}

// sql runs statements on a member, one connection, as the superuser.
func (p *pgPass) sql(ctx context.Context, member string, stmts ...string) error {
	cctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	pod := p.pods[member]
	if pod == nil {
		return fmt.Errorf("member %s is not listed", member)
	}
	conn, err := p.connect(cctx, member, pod.Status.PodIP)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	for _, s := range stmts {
		if _, err := conn.Exec(cctx, s); err != nil {
			return err
		}
	}
	return nil
}

// withoutDigits lets a wait be logged once, not on every pass as its
// durations count.
func withoutDigits(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' {
			return -1
		}
		return r
	}, s)
}

func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// setSync keeps synchronous_standby_names on the primary. The recorded
// setting is cleared first: while it changes, the synchronous fence does
// not know which standbys the primary waits for (the next pass records
// the new one).
func (p *pgPass) setSync(ctx context.Context, a pgAction) (bool, error) {
	p.syncChanged = true
	if st := &p.view.Status; st.SyncSetting != "" {
		st.SyncSetting = ""
		if err := p.store.write(ctx, *st, ""); err != nil {
			return false, err
		}
	}
	if err := p.sql(ctx, a.Member, "ALTER SYSTEM SET synchronous_standby_names = "+quoteLiteral(a.Sync), "SELECT pg_reload_conf()"); err != nil {
		return false, fmt.Errorf("set synchronous_standby_names on %s: %w", a.Member, err)
	}
	p.r.logger().Info("synchronous standbys set", "member", a.Member, "synchronous_standby_names", a.Sync)
	for i := range p.view.Members {
		if p.view.Members[i].Name == a.Member {
			p.view.Members[i].Probe.SyncSetting = a.Sync
		}
	}
	return true, nil
}
