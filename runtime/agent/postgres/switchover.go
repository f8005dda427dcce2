package postgres

import (
	"time"
)

// startSwitchover begins a merged step's switchover once its target
// streams; a request already carried out, or for the member that is
// primary already, is recorded done.
func startSwitchover(v pgView, p pgMember) pgAction {
	r := v.Switchover
	if r.ID == "" || r.ID == v.Status.SwitchoverDone {
		return pgAction{}
	}
	if r.To == p.Name {
		return pgAction{Kind: pgSwitchDone, Member: p.Name, To: p.Name, Why: "already the primary"}
	}
	if v.Now.Before(v.Status.SwitchoverRetryAt) {
		return pgWait("switchover %s to %s: trying again at %s", r.ID, r.To, v.Status.SwitchoverRetryAt.Format(time.RFC3339))
	}
	t, ok := findMember(v.Members, r.To)
	if !ok || !t.replica() || !t.Probe.Streaming {
		return pgWait("switchover %s waits: %s is not a streaming replica", r.ID, r.To)
	}
	return pgAction{Kind: pgBeginSwitchover, Member: p.Name, To: r.To, Why: "switchover " + r.ID}
}

// continueSwitchover: the primary is read-only; once the target has
// replayed all of its WAL and the position stays put, fence it; once it
// stopped, promote the target. A target that does not catch up in
// Settings.CatchUp gives the primary its writes back.
func continueSwitchover(v pgView) pgAction {
	s := v.Status.Switchover
	p, _ := findMember(v.Members, s.From)
	t, _ := findMember(v.Members, s.To)
	if s.FencedAt.IsZero() {
		switch {
		case !p.primary():
			return pgAction{Kind: pgSwitchAbort, Member: s.From, To: s.To, Why: s.From + " stopped answering as primary during the switchover"}
		case !t.replica() || !t.Probe.Streaming:
			return pgAction{Kind: pgSwitchAbort, Member: s.From, To: s.To, GiveBack: true, Why: s.To + " stopped streaming"}
		case t.Probe.Replayed >= p.Probe.Received && p.Probe.Received == s.LSN:
			return pgAction{Kind: pgSwitchFence, Member: s.From, To: s.To, LSN: s.LSN, Why: s.To + " replayed all of " + s.From + "'s WAL"}
		case v.Now.Sub(s.StartedAt) > v.Settings.CatchUp:
			return pgAction{Kind: pgSwitchAbort, Member: s.From, To: s.To, GiveBack: true, Why: s.To + " did not catch up in " + v.Settings.CatchUp.String()}
		}
		return pgAction{Kind: pgSwitchWait, Member: s.From, To: s.To, LSN: p.Probe.Received, Why: "waiting for " + s.To + " to replay " + formatLSN(p.Probe.Received)}
	}
	if why := stillWrites(v, s.From, s.FencedAt); why != "" {
		return pgWait("switchover to %s: %s", s.To, why)
	}
	if !t.replica() && !t.primary() {
		return pgWait("switchover to %s: waiting for it to answer", s.To)
	}
	if t.replica() && t.Probe.Replayed < s.LSN {
		return pgWait("switchover to %s: waiting for it to replay %s", s.To, formatLSN(s.LSN))
	}
	return pgAction{Kind: pgPromote, Member: s.From, To: s.To, Why: "switchover " + s.what()}
}
