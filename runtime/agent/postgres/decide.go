package postgres

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cairn-dev/cairn/planner/contract"
)

// pgMember is one PostgreSQL pod as a pass sees it.
type pgMember struct {
	Name  string
	Label string // its cairn.dev/role
	// NoPromote: the pod is annotated or labelled cairn.dev/no-promote.
	NoPromote bool
	Probe     pgProbe
}

func (m pgMember) primary() bool { return m.Probe.Reach == reachUp && !m.Probe.InRecovery }
func (m pgMember) replica() bool { return m.Probe.Reach == reachUp && m.Probe.InRecovery }

// pgView is the input of decidePostgres: the members, the last status,
// and what this leader remembers.
type pgView struct {
	Members []pgMember
	Status  pgStatus
	Now     time.Time
	// Unhealthy says since when this leader has seen each member not
	// answering; a new leader starts counting again.
	Unhealthy map[string]time.Time
	Settings  FailoverSettings
	// Sync is the number of synchronous standbys the rendered config asks.
	Sync int
	// Switchover is the request of a merged switchover step.
	Switchover pgRequest
	// Draining names, for each member whose node is cordoned
	// (spec.unschedulable: a drain begins so), that node (drain.go).
	Draining map[string]string
	// CleanStops are the members' recorded clean stops (cleanstop.go).
	CleanStops map[string]pgCleanStop
}

// pgRequest is a merged PostgresSwitchover step's request.
type pgRequest struct{ ID, To string }

type pgActionKind int

const (
	pgNone pgActionKind = iota
	pgLabel
	pgSetSync
	pgBeginFailover
	pgFence
	pgPromote
	pgBeginSwitchover
	pgSwitchWait
	pgSwitchFence
	pgSwitchAbort
	pgSwitchDone
	pgRetarget
	pgDetach
	pgSetFailsafe
	pgRecovered
)

func (k pgActionKind) String() string {
	return [...]string{"none", "label", "set-synchronous", "begin-failover", "fence", "promote",
		"begin-switchover", "switchover-wait", "switchover-fence", "switchover-abort", "switchover-done", "retarget", "detach", "set-failsafe", "recovered"}[k]
}

// pgAction is decidePostgres's answer: one change at a time.
type pgAction struct {
	Kind pgActionKind
	// Member is the primary acted on (fenced, demoted, failed over from).
	Member string
	// To is the member promoted (or, beginning a clean stop's hand-over,
	// to promote).
	To string
	// Node is the draining node a switchover begins for (drain.go).
	Node   string
	Labels []labelChange
	// Sync is the synchronous_standby_names to set.
	Sync string
	// Detach are the standbys to detach from Member (syncfence.go,
	// failsafe.go).
	Detach []string
	// Failsafe is the failsafe value to write on Member (failsafe.go).
	Failsafe string
	// LSN is the primary's WAL position a switchover waits for.
	LSN uint64
	// GiveBack: a switchover abort gives the primary its writes back.
	GiveBack bool
	// Crashed is when the primary crashed that recovered in place.
	Crashed time.Time
	Why     string
}

type labelChange struct{ Pod, Role string }

func pgWait(format string, args ...any) pgAction {
	return pgAction{Kind: pgNone, Why: fmt.Sprintf(format, args...)}
}

// decidePostgres is the PostgreSQL runtime's decision (pure): finish a
// failover or switchover under way; otherwise, with one primary
// answering, keep the labels and synchronous_standby_names true and start
// a requested switchover; with none, fail over once the labelled primary
// has been unhealthy long enough.
func decidePostgres(v pgView) pgAction {
	if v.Status.Failover != nil {
		return continueFailover(v)
	}
	if v.Status.Switchover != nil {
		return continueSwitchover(v)
	}
	var prim []pgMember
	for _, m := range v.Members {
		if m.primary() {
			prim = append(prim, m)
		}
	}
	switch {
	case len(prim) > 1:
		return pgWait("%d members answer as primary; no label changes until one remains", len(prim))
	case len(prim) == 0:
		return maybeFailover(v)
	}
	p := prim[0]
	if p.Label == contract.RoleFenced {
		return pgWait("%s answers as primary but is fenced: its instance manager stops it", p.Name)
	}
	if recoveredInPlace(v, p) {
		return pgAction{Kind: pgRecovered, Member: p.Name, Crashed: p.Probe.CrashRestart, Why: fmt.Sprintf(
			"the server of %s crashed at %s and its instance manager restarted it in place: crash recovery replayed its WAL, no failover; it answered as the primary again %s after the crash",
			p.Name, p.Probe.CrashRestart.UTC().Format(time.RFC3339Nano), v.Now.Sub(p.Probe.CrashRestart).Round(time.Millisecond))}
	}
	if ch := labelFixes(v.Members, p.Name); len(ch) > 0 {
		return pgAction{Kind: pgLabel, Member: p.Name, Labels: ch, Why: "labels follow the members"}
	}
	if want := syncSetting(v.Members, p.Name, v.Sync); want != p.Probe.SyncSetting {
		return pgAction{Kind: pgSetSync, Member: p.Name, Sync: want, Why: fmt.Sprintf("%d synchronous standby(s) wanted", v.Sync)}
	}
	if want := failsafeWant(v.Members, p); want != "" && want != p.Probe.Failsafe {
		return pgAction{Kind: pgSetFailsafe, Member: p.Name, Failsafe: want, Why: "the primary's failsafe names every member"}
	}
	if a, ok := drainSwitchover(v, p); ok {
		return a
	}
	return startSwitchover(v, p)
}

// labelFixes are the label changes that make p the labelled primary:
// first every other pod labelled primary is fenced (or labelled replica
// when it answers as one), then p, then the answering replicas.
func labelFixes(members []pgMember, p string) []labelChange {
	var demote, rest []labelChange
	for _, m := range members {
		switch {
		case m.Name == p:
			if m.Label != contract.RolePrimary {
				rest = append([]labelChange{{m.Name, contract.RolePrimary}}, rest...)
			}
		case m.Label == contract.RolePrimary && m.replica():
			demote = append(demote, labelChange{m.Name, contract.RoleReplica})
		case m.Label == contract.RolePrimary:
			demote = append(demote, labelChange{m.Name, contract.RoleFenced})
		case m.replica() && m.Label != contract.RoleReplica:
			rest = append(rest, labelChange{m.Name, contract.RoleReplica})
		}
	}
	return append(demote, rest...)
}

// syncSetting is the synchronous_standby_names the primary p should have:
// FIRST n of the other members, those that may be promoted first.
func syncSetting(members []pgMember, p string, n int) string {
	var names []pgMember
	for _, m := range members {
		if m.Name != p {
			names = append(names, m)
		}
	}
	n = min(n, len(names))
	if n <= 0 {
		return ""
	}
	slices.SortFunc(names, func(a, b pgMember) int {
		if a.NoPromote != b.NoPromote {
			return boolCmp(a.NoPromote, b.NoPromote)
		}
		return cmp.Compare(a.Name, b.Name)
	})
	quoted := make([]string, len(names))
	for i, m := range names {
		quoted[i] = strconv.Quote(m.Name)
	}
	return fmt.Sprintf("FIRST %d (%s)", n, strings.Join(quoted, ", "))
}

func boolCmp(a, b bool) int {
	switch {
	case a == b:
		return 0
	case !a:
		return -1
	}
	return 1
}

// maybeFailover starts a failover when the labelled primary has been down
// for Settings.After, or has not answered in time for AfterTimeouts, and
// there is a replica to promote; at once when it stopped cleanly and a
// replica received all of its WAL (cleanHandOver).
func maybeFailover(v pgView) pgAction {
	old := ""
	for _, m := range v.Members {
		if m.Label == contract.RolePrimary {
			old = m.Name
		}
	}
	if old == "" {
		old = v.Status.Primary
	}
	if old == "" {
		return pgWait("no member answers as primary and none is labelled primary")
	}
	since, ok := v.Unhealthy[old]
	if !ok {
		since = v.Now
	}
	if a, ok := cleanHandOver(v, old, since); ok {
		return a
	}
	how, limit := "is gone", v.Settings.After
	if m, ok := findMember(v.Members, old); ok {
		switch m.Probe.Reach {
		case reachUp:
			return pgWait("the primary %s answers in recovery; no member is primary", old)
		case reachTimeout:
			how, limit = "does not answer in time", v.Settings.AfterTimeouts
		default:
			how, limit = downHow(v, m, since)
		}
	}
	if d := v.Now.Sub(since); d < limit {
		return pgWait("the primary %s %s since %s; failover after %s", old, how, d.Round(time.Millisecond), limit)
	}
	if to, why := pickTarget(v, old); to == "" {
		return pgWait("the primary %s %s, but no failover: %s", old, how, why)
	}
	return pgAction{Kind: pgBeginFailover, Member: old, Why: fmt.Sprintf("the primary %s %s for %s", old, how, v.Now.Sub(since).Round(time.Millisecond))}
}

// downHow says how a primary that is down is and how long it gets: a
// server in crash recovery in place gets Settings.Recovery with
// asynchronous replication (a failover could lose acknowledged commits
// not yet streamed, the recovery none), After with synchronous (neither
// loses any, and a failover is the faster once a recovery has outlasted
// After); one down again soon after it recovered in place is in a crash
// loop and gets After, as does any other.
func downHow(v pgView, m pgMember, since time.Time) (string, time.Duration) {
	if r := v.Status.LastRecovery; r != nil && r.Member == m.Name && since.Sub(r.At) < v.Settings.CrashLoop {
		return fmt.Sprintf("is down again %s after it recovered in place from a crash (a crash loop)", since.Sub(r.At).Round(time.Millisecond)), v.Settings.After
	}
	switch {
	case !m.Probe.Starting:
		return "is down", v.Settings.After
	case v.Sync > 0:
		return "is in crash recovery in place (synchronous replication: a failover loses nothing)", v.Settings.After
	}
	return "is in crash recovery in place", v.Settings.Recovery
}

// recoveredInPlace: the labelled primary p answers from a server its
// instance manager restarted in place after a crash the status has not
// recorded, and it was the primary when it crashed (not a replica that
// recovered in place and was promoted since).
func recoveredInPlace(v pgView, p pgMember) bool {
	crash := p.Probe.CrashRestart
	if p.Label != contract.RolePrimary || crash.IsZero() {
		return false
	}
	if r := v.Status.LastRecovery; r != nil && r.Member == p.Name && r.CrashedAt.Equal(crash) {
		return false
	}
	for _, d := range []*pgDone{v.Status.LastFailover, v.Status.LastSwitchover} {
		if d != nil && d.To == p.Name && d.At.After(crash) {
			return false
		}
	}
	return true
}

// continueFailover carries a recorded failover on: fence the old primary,
// wait until it cannot take writes, then promote.
func continueFailover(v pgView) pgAction {
	f := v.Status.Failover
	if f.FencedAt.IsZero() {
		return pgAction{Kind: pgFence, Member: f.From, Why: f.Reason}
	}
	base, syncWhy := f.FencedAt, ""
	if answersNot(v, f.From) {
		if why := stillWrites(v, f.From, f.FencedAt); why != "" {
			a, ok, fallback := syncFence(v, f)
			if ok {
				if a.Kind == pgPromote && f.To != "" && f.To != a.To {
					// A target recorded earlier is kept: it was chosen, perhaps
					// labelled, by a leader before this one.
					return pgWait("failover from %s: %s; the recorded target %s is not the detached standby with the most WAL (%s)", f.From, why, f.To, a.To)
				}
				return a
			}
			syncWhy = fallback
		}
		if sets := failsafesOf(v.Status, f.From); len(sets) > 0 {
			a, wait, from := failsafeFence(v, f, sets)
			switch {
			case a.Kind != pgNone:
				return a
			case wait != "":
				return pgWait("failover from %s: %s", f.From, wait)
			}
			base = from
		}
	}
	if why := stillWrites(v, f.From, base); why != "" {
		if syncWhy != "" {
			return pgWait("failover from %s: %s (no synchronous fence: %s)", f.From, why, syncWhy)
		}
		return pgWait("failover from %s: %s", f.From, why)
	}
	to := f.To
	if to == "" {
		var why string
		if to, why = pickTarget(v, f.From); to == "" {
			return pgWait("failover from %s: %s", f.From, why)
		}
	}
	if t, ok := findMember(v.Members, to); !ok || t.Probe.Reach != reachUp {
		if since, seen := v.Unhealthy[to]; seen && v.Now.Sub(since) >= v.Settings.After {
			// The chosen target died too, perhaps promoted already: it is
			// failed over from in turn.
			return pgAction{Kind: pgRetarget, Member: to, Why: fmt.Sprintf("the failover target %s is down too", to)}
		}
		return pgWait("failover from %s: waiting for %s to answer", f.From, to)
	}
	return pgAction{Kind: pgPromote, Member: f.From, To: to, Why: f.Reason}
}

// stillWrites says why a fenced primary may still take writes, or "":
// it answers as a primary (its instance manager stops it), or it does not
// answer and may run cut off until its lease, counted from base (its
// fence, or the failsafe's last detach), ends (it then stops itself).
// A member that is down, gone, or answers in recovery takes none; one in
// crash recovery in place (Starting) may once its recovery ends, its
// role confirmed before the fence, until its lease ends: its instance
// manager confirms at once when the server is up, and stops it.
func stillWrites(v pgView, name string, base time.Time) string {
	m, ok := findMember(v.Members, name)
	if !ok || (m.Probe.Reach == reachDown && !m.Probe.Starting) || m.replica() {
		return ""
	}
	if m.primary() {
		return fmt.Sprintf("waiting for the fenced %s to stop", name)
	}
	end := base.Add(v.Settings.LeaseTTL + v.Settings.Margin)
	if !v.Now.Before(end) {
		return ""
	}
	if m.Probe.Starting {
		return fmt.Sprintf("%s is in crash recovery and may take writes once it ends, until its lease ends in %s", name, end.Sub(v.Now).Round(time.Millisecond))
	}
	return fmt.Sprintf("%s does not answer and may take writes until its lease ends in %s", name, end.Sub(v.Now).Round(time.Millisecond))
}

// answersNot: the member is listed and does not answer in time.
func answersNot(v pgView, name string) bool {
	m, ok := findMember(v.Members, name)
	return ok && m.Probe.Reach == reachTimeout
}

// pickTarget is the replica to promote: the one that received the most
// WAL, never a no-promote one; with synchronous replication only one
// recorded synchronous that holds all the WAL of the answering
// synchronous replicas. "" and why when there is none.
func pickTarget(v pgView, from string) (string, string) {
	var cands []pgMember
	for _, m := range v.Members {
		if m.Name != from && m.replica() && !m.NoPromote {
			cands = append(cands, m)
		}
	}
	if len(cands) == 0 {
		return "", "no replica that may be promoted answers"
	}
	slices.SortStableFunc(cands, func(a, b pgMember) int { return cmp.Compare(b.Probe.Received, a.Probe.Received) })
	if v.Sync <= 0 {
		return cands[0].Name, ""
	}
	set := v.Status.Synchronous
	if len(set) == 0 {
		return "", "synchronous replication, and no replica was recorded synchronous"
	}
	var most uint64
	answered := false
	for _, m := range v.Members {
		if slices.Contains(set, m.Name) && m.replica() {
			most, answered = max(most, m.Probe.Received), true
		}
	}
	if !answered {
		return "", fmt.Sprintf("synchronous replication, and none of the synchronous replicas (%s) answers", strings.Join(set, ", "))
	}
	for _, c := range cands {
		if slices.Contains(set, c.Name) && c.Probe.Received >= most {
			return c.Name, ""
		}
	}
	return "", "synchronous replication, and no synchronous replica that may be promoted holds all their WAL"
}

func findMember(members []pgMember, name string) (pgMember, bool) {
	i := slices.IndexFunc(members, func(m pgMember) bool { return m.Name == name })
	if i < 0 {
		return pgMember{}, false
	}
	return members[i], true
}
