package postgres

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cairn-dev/cairn/planner/contract"
)

// The failsafe, the runtime's half (the primary's is in
// runtime/instance/postgres/failsafe.go): a primary that cannot reach the API
// server keeps its lease while every other member it was told of follows
// it, so an API server outage does not stop a healthy primary, and the
// members' lease can be short.
//
//   - The runtime tells the primary its members: contract.Failsafe, set
//     on the superuser role on the primary itself, naming it and the
//     timeline it writes on (so a copy a clone or a rewind carries
//     elsewhere, or one left from an earlier term, counts for nothing).
//     Written on the primary, not mounted, it is current as soon as the
//     runtime reads it back; no ConfigMap's propagation delay comes
//     between a scale step and the count.
//   - The status records every value the primary may hold
//     (pgStatus.FailsafeSets): each value is recorded before it is
//     written, and the older ones are dropped once the primary reports
//     the newest, so a write whose answer was lost is never forgotten. A
//     promotion starts with none: the new primary honours no value until
//     one naming it on its new timeline is written.
//   - A failover from a primary that does not answer and may hold one:
//     the runtime detaches every member of those lists it reaches (as the
//     synchronous fence does), needs one detached member in every list
//     (that member no longer follows, so "every other member follows" no
//     longer holds), and waits the lease plus the margin from the later
//     of the fence and the last detach: a detached member sent no reply
//     after it, and the primary counts a reply as of no later than it was
//     sent. A list none of whose members the runtime reaches keeps the
//     failover waiting: the old primary may be running with all of them.
//     Only a one-member cluster has such a list, besides partitions that
//     cut every other member off together with the primary.
//   - The synchronous fence, when it applies, comes first and does not
//     wait for the lease: it takes the old primary's acknowledgements
//     away, whatever its lease. The failsafe may then keep the old primary
//     running until it is healed, acknowledging nothing.
//
// A detached member counts only while it answers as detached (no
// primary_conninfo, no WAL receiver).

// failsafeWant is the failsafe value the primary p should hold: its name,
// its timeline, and every member listed. "" while its timeline is not
// known.
func failsafeWant(members []pgMember, p pgMember) string {
	if p.Probe.WriteTimeline < 1 {
		return ""
	}
	names := make([]string, 0, len(members))
	for _, m := range members {
		names = append(names, m.Name)
	}
	slices.Sort(names)
	return contract.Failsafe{Primary: p.Name, Timeline: p.Probe.WriteTimeline, Members: names}.String()
}

// recordFailsafe is the failsafe values the primary named primary may
// hold once it reported reported: only the reported one when it is the
// newest recorded (every older write was overwritten by it), else the
// recorded ones and the reported one. A value that names another member
// (a clone's copy) or none is not one it honours, and adds nothing.
func recordFailsafe(sets []string, primary, reported string) []string {
	f, ok, err := contract.ParseFailsafe(reported)
	if err != nil || !ok || f.Primary != primary {
		return sets
	}
	switch {
	case len(sets) > 0 && sets[len(sets)-1] == reported:
		return []string{reported}
	case slices.Contains(sets, reported):
		return sets
	}
	return append(slices.Clone(sets), reported)
}

// failsafesOf are the failsafe values recorded for the primary from.
func failsafesOf(st pgStatus, from string) []contract.Failsafe {
	var out []contract.Failsafe
	for _, s := range st.FailsafeSets {
		if f, ok, err := contract.ParseFailsafe(s); err == nil && ok && f.Primary == from {
			out = append(out, f)
		}
	}
	return out
}

// failsafeFence is the failsafe's part of a failover from a primary that
// does not answer and may hold the failsafe values sets: detach the
// members of those lists that answer and are not detached yet; else, with
// a detached member in every list, the time the old primary's lease is
// counted from (the later of its fence and the last detach); else why
// the failover waits.
func failsafeFence(v pgView, f *pgFailover, sets []contract.Failsafe) (a pgAction, wait string, base time.Time) {
	var detach []string
	for _, s := range sets {
		for _, name := range s.Others() {
			m, listed := findMember(v.Members, name)
			if !listed || !m.replica() || slices.Contains(detach, name) {
				continue
			}
			if _, ok := detachedAt(f, m); !ok {
				detach = append(detach, name)
			}
		}
	}
	if len(detach) > 0 {
		slices.Sort(detach)
		return pgAction{Kind: pgDetach, Member: f.From, Detach: detach, Why: fmt.Sprintf(
			"%s does not answer: detaching %s so that not every member it was told of follows it, and its failsafe cannot keep its lease",
			f.From, strings.Join(detach, ", "))}, "", time.Time{}
	}
	base = f.FencedAt
	for _, s := range sets {
		found := false
		for _, name := range s.Others() {
			if m, listed := findMember(v.Members, name); listed {
				if at, ok := detachedAt(f, m); ok {
					found, base = true, later(base, at)
				}
			}
		}
		if !found {
			return pgAction{}, fmt.Sprintf("%s may be running with every member it was told of following it (%s), and none answers to be detached",
				f.From, strings.Join(s.Members, ", ")), time.Time{}
		}
	}
	return pgAction{}, "", base
}

// detachedAt is when m was detached from the failover's old primary,
// while m answers as detached.
func detachedAt(f *pgFailover, m pgMember) (time.Time, bool) {
	d, ok := detachedRecord(f, m)
	return d.At, ok && !d.At.IsZero()
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// setFailsafe writes the failsafe value on the primary. The value is
// recorded first: the primary may hold it from the moment the statement
// runs, whether or not its answer comes back.
func (p *pgPass) setFailsafe(ctx context.Context, a pgAction) (bool, error) {
	p.failsafeChanged = true
	st := &p.view.Status
	if n := len(st.FailsafeSets); n == 0 || st.FailsafeSets[n-1] != a.Failsafe {
		// The newest is last: once the primary reports it, the others go.
		st.FailsafeSets = append(slices.DeleteFunc(st.FailsafeSets, func(s string) bool { return s == a.Failsafe }), a.Failsafe)
		if err := p.store.write(ctx, *st, ""); err != nil {
			return false, err
		}
	}
	if err := p.sql(ctx, a.Member, contract.FailsafeWriteSQL(a.Failsafe)...); err != nil {
		return false, fmt.Errorf("set %s on %s: %w", contract.PostgresFailsafeSetting, a.Member, err)
	}
	p.r.logger().Info("failsafe members set", "member", a.Member, contract.PostgresFailsafeSetting, a.Failsafe)
	for i := range p.view.Members {
		if p.view.Members[i].Name == a.Member {
			p.view.Members[i].Probe.Failsafe = a.Failsafe
		}
	}
	return true, nil
}
