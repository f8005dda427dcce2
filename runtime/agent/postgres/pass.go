package postgres

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/runtime/agent"
)

// FailoverSettings are the PostgreSQL runtime's timings; zero fields take
// the defaults.
type FailoverSettings struct {
	// After: a primary that is down (refuses connections, its pod or
	// container gone) is failed over from after this long. Default 2s.
	After time.Duration
	// AfterTimeouts: a primary that only does not answer in time
	// (overloaded is not dead) gets this long. Default 10s.
	AfterTimeouts time.Duration
	// LeaseTTL: a primary that cannot confirm its label through the API
	// server, nor count every other member following it, for this long
	// stops itself (its instance manager's --lease-ttl). Default
	// contract.PostgresLeaseTTL (10s).
	LeaseTTL time.Duration
	// Margin is added to LeaseTTL before promoting in place of a fenced
	// primary that does not answer. Default 3s.
	Margin time.Duration
	// Recovery: a primary whose server is in crash recovery in place (its
	// instance manager restarted it after a crash; its postmaster answers
	// that it is starting) is failed over from after this long, counted
	// like After from when it was first seen down, with asynchronous
	// replication. Default 10s, never less than After. With synchronous
	// replication a failover loses no acknowledged commit either, and is
	// the faster once a recovery has outlasted After, so After applies.
	// A server in a crash loop (down again within CrashLoop of a
	// recovery in place) is not waited for.
	Recovery time.Duration
	// CrashLoop: a primary down again less than this after it recovered
	// in place is in a crash loop, failed over from after After.
	// Default contract.PostgresCrashLoopWindow, the members' own.
	CrashLoop time.Duration
	// CatchUp is how long a switchover target gets to replay the
	// read-only primary's WAL before the primary gets its writes back.
	// Default 30s.
	CatchUp time.Duration
}

func (s FailoverSettings) withDefaults() FailoverSettings {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&s.After, 2*time.Second)
	def(&s.AfterTimeouts, 10*time.Second)
	def(&s.LeaseTTL, contract.PostgresLeaseTTL)
	def(&s.Margin, 3*time.Second)
	def(&s.CatchUp, 30*time.Second)
	def(&s.Recovery, defaultRecovery)
	def(&s.CrashLoop, contract.PostgresCrashLoopWindow)
	s.Recovery = max(s.Recovery, s.After)
	return s
}

// defaultRecovery is FailoverSettings.Recovery's default. Crash recovery
// replays the WAL written since the last checkpoint: at PostgreSQL's
// defaults (checkpoint_timeout 5min, max_wal_size 1GB) a busy primary's
// is a few seconds; the benchmark's recovers in place in about a second
// (docs/runtime.md). Ten seconds is the bound the runtime already gives a
// primary that is alive but does not answer (AfterTimeouts) and the
// lease a cut-off primary holds: a recovery longer than that replays more
// WAL than the defaults let pile up, and a failover is the better bet.
const defaultRecovery = 10 * time.Second

// staleAfter: passes further apart than this do not add up to how long a
// member has been unhealthy.
const staleAfter = 5 * time.Second

// pgPass is one pass's state: what it saw and what it changed so far.
type pgPass struct {
	r     *Roles
	store *pgStatusStore
	auth  pgAuth
	pods  map[string]*corev1.Pod
	view  pgView
	// config is the members' config to report; nil when not checked.
	config *contract.PostgresConfigStatus
	// syncChanged: this pass changed the primary's
	// synchronous_standby_names; the next pass's probe records it.
	syncChanged bool
	// failsafeChanged: this pass wrote the primary's failsafe value; the
	// next records what it reports.
	failsafeChanged bool
}

func podsByName(pods []corev1.Pod) map[string]*corev1.Pod {
	out := make(map[string]*corev1.Pod, len(pods))
	for i := range pods {
		out[pods[i].Name] = &pods[i]
	}
	return out
}

func (r *Roles) clock() time.Time {
	if r.now != nil {
		return r.now()
	}
	return time.Now()
}

// view builds decidePostgres's input, and keeps since when each member
// has not answered: since the probe that got no answer was sent (asked),
// not since it gave up.
func (r *Roles) view(pods []corev1.Pod, probes map[string]pgProbe, asked time.Time, st pgStatus, req pgRequest, sync int) pgView {
	now := r.clock()
	// A replica that has just (again) become the leader counts afresh:
	// what it saw before another led is stale.
	if r.unhealthy == nil || now.Sub(r.lastPass) > staleAfter {
		r.unhealthy = map[string]time.Time{}
	}
	r.lastPass = now
	if asked.IsZero() || asked.After(now) {
		asked = now
	}
	v := pgView{Status: st, Now: now, Settings: r.Settings.withDefaults(), Sync: sync, Switchover: req, Unhealthy: r.unhealthy}
	seen := map[string]bool{}
	for _, p := range pods {
		m := pgMember{Name: p.Name, Label: p.Labels[contract.LabelRole], Probe: probes[p.Name],
			NoPromote: p.Labels[contract.LabelNoPromote] == "true" || p.Annotations[contract.LabelNoPromote] == "true"}
		v.Members = append(v.Members, m)
		seen[p.Name] = true
		if m.Probe.Reach == reachUp {
			delete(r.unhealthy, p.Name)
		} else if _, ok := r.unhealthy[p.Name]; !ok {
			r.unhealthy[p.Name] = asked
		}
	}
	// Pods not listed at all are unhealthy too: the last primary, a
	// failover's target.
	for _, name := range []string{st.Primary, failoverTarget(st)} {
		if _, ok := r.unhealthy[name]; name != "" && !seen[name] && !ok {
			r.unhealthy[name] = now
		}
	}
	slices.SortFunc(v.Members, func(a, b pgMember) int { return cmp.Compare(a.Name, b.Name) })
	return v
}

func failoverTarget(st pgStatus) string {
	if st.Failover == nil {
		return ""
	}
	return st.Failover.To
}

// pgRendered is what the runtime reads of the rendered ConfigMap
// <cluster>-cairn: a merged step's switchover request, the number of
// synchronous standbys, the PostgreSQL config revision and TLS mode.
type pgRendered struct {
	req       pgRequest
	sync      int
	configRev string
	tls       string
	// certManager: a cert-manager issuer issues the certificates
	// (contract.KeyTLSIssuerName); the runtime only reads them.
	certManager bool
}

// request reads the rendered config.
func (r *Roles) request(ctx context.Context) (pgRendered, error) {
	cm, err := r.Client.CoreV1().ConfigMaps(r.Namespace).Get(ctx, contract.ConfigMap(r.Cluster), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return pgRendered{tls: contract.TLSOff}, nil
	}
	if err != nil {
		return pgRendered{}, fmt.Errorf("read the rendered config: %w", err)
	}
	out := pgRendered{req: pgRequest{ID: cm.Data[contract.KeyRequestSwitchoverID], To: cm.Data[contract.KeyRequestSwitchoverTo]},
		configRev: cm.Data[contract.KeyConfigRevision]}
	if v := cm.Data[contract.KeySynchronousStandbys]; v != "" {
		if out.sync, err = strconv.Atoi(v); err != nil {
			return pgRendered{}, fmt.Errorf("rendered config %s: %w", contract.KeySynchronousStandbys, err)
		}
	}
	mode, ok := contract.TLSMode(cm.Data[contract.KeyTLS])
	if !ok {
		return pgRendered{}, fmt.Errorf("rendered config %s: %q is no TLS mode cairn knows", contract.KeyTLS, cm.Data[contract.KeyTLS])
	}
	out.tls, out.certManager = mode, cm.Data[contract.KeyTLSIssuerName] != ""
	return out, nil
}

// report records the pass: the status (written when it changed or is a
// heartbeat old) and the metrics.
func (p *pgPass) report(ctx context.Context, prev pgStatus) error {
	st := p.view.Status
	var primaries []pgMember
	for _, m := range p.view.Members {
		if m.primary() {
			primaries = append(primaries, m)
		}
	}
	st.Members = memberStatuses(p.view.Members, primaries)
	if len(primaries) == 1 && primaries[0].Label == contract.RolePrimary {
		st.Primary = primaries[0].Name
		// A primary that waits for synchronous standbys but reports none
		// (they reconnect, or it is being killed and its WAL senders went
		// first) acknowledges no commit: the standbys recorded last still
		// hold every acknowledged one, and stay recorded.
		if got := primaries[0].Probe.SyncStandbys; len(got) > 0 || p.view.Sync == 0 {
			st.Synchronous = slices.Clone(got)
		}
		if !p.syncChanged {
			st.SyncSetting = primaries[0].Probe.SyncSetting
		}
		if !p.failsafeChanged {
			st.FailsafeSets = recordFailsafe(st.FailsafeSets, primaries[0].Name, primaries[0].Probe.Failsafe)
		}
	}
	p.r.Metrics.observe(p.view.Members, primaries)
	if len(primaries) == 1 {
		p.reportWALRemoved(ctx, prev, &st, primaries[0])
		p.archiveEvents(ctx, prev.ArchiveFailing, primaries[0])
		st.ArchiveFailing = ""
		if a := primaries[0].Probe.Archive; a.failing() {
			st.ArchiveFailing = a.LastFailed
		}
	}
	p.view.Status = st
	var config string
	if c := p.config; c != nil && !sameConfigStatus(*c, p.store.config) {
		var err error
		if config, err = encodeConfigStatus(*c); err != nil {
			return err
		}
	}
	if !samePgStatus(prev, st) || p.view.Now.Sub(prev.ObservedAt) >= agent.StatusHeartbeat || config != "" {
		st.ObservedAt = p.view.Now
		return p.store.write(ctx, st, config)
	}
	return nil
}

// The Events of WAL archiving, on the StatefulSet.
const (
	ReasonWALArchiveFailing   = "WALArchiveFailing"
	ReasonWALArchiveRecovered = "WALArchiveRecovered"
)

// archiveEvents records the primary's WAL archive starting to fail, on
// another segment, or working again, once each: a Warning
// WALArchiveFailing, a Normal WALArchiveRecovered.
func (p *pgPass) archiveEvents(ctx context.Context, was string, primary pgMember) {
	a := primary.Probe.Archive
	var ev agent.Event
	switch {
	case a.failing() && a.LastFailed != was:
		last := "none yet"
		if a.LastArchived != "" {
			last = a.LastArchived + " at " + a.LastArchivedAt.Format(time.RFC3339)
		}
		ev = agent.Event{Type: corev1.EventTypeWarning, Reason: ReasonWALArchiveFailing, Message: fmt.Sprintf(
			"%s cannot archive WAL segment %s (failed at %s; last archived: %s); %d segment(s) (%d bytes of pg_wal) wait, kept until archived, nothing is deleted: see the instance manager's log for why",
			primary.Name, a.LastFailed, a.LastFailedAt.Format(time.RFC3339), last, a.Pending, a.WALBytes)}
	case !a.failing() && was != "":
		ev = agent.Event{Type: corev1.EventTypeNormal, Reason: ReasonWALArchiveRecovered, Message: fmt.Sprintf("%s archives WAL again: last archived %s", primary.Name, a.LastArchived)}
	default:
		return
	}
	if err := agent.RecordClusterEvent(ctx, p.r.Client, p.r.Namespace, p.r.Cluster, p.r.clock(), ev); err != nil {
		p.r.logger().Warn("event not recorded", "reason", ev.Reason, "error", err.Error())
	}
}

// memberStatuses are the members as the status reports them: each
// replica of the one primary with its LagClass, so cairn status can say
// how far behind it is while a steady load leaves the status unchanged.
func memberStatuses(members, primaries []pgMember) []contract.PostgresMember {
	var out []contract.PostgresMember
	for _, m := range members {
		ms := contract.PostgresMember{Name: m.Name, Role: m.Label, Answer: answerOf(m)}
		if len(primaries) == 1 && m.replica() {
			ms.Lag = contract.LagClass(replayLag(primaries[0], m))
		}
		out = append(out, ms)
	}
	return out
}

// replayLag is how many bytes of primary's WAL replica has not replayed.
func replayLag(primary, replica pgMember) uint64 {
	if p := primary.Probe.Received; p > replica.Probe.Replayed {
		return p - replica.Probe.Replayed
	}
	return 0
}

func answerOf(m pgMember) string {
	switch {
	case m.primary():
		return "primary"
	case m.replica() && m.Probe.Streaming:
		return "streaming replica"
	case m.replica():
		return "replica, not streaming"
	case m.Probe.Starting:
		return "starting" // down, its postmaster in crash recovery
	}
	return m.Probe.Reach.String()
}
