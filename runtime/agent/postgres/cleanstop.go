package postgres

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/cairn-dev/cairn/planner/contract"
)

// pgCleanStop is a primary's clean stop as its instance manager recorded
// it (contract.PostgresCleanStop): every commit it acknowledged is in its
// WAL before LSN, and its WAL senders sent that WAL to the streaming
// replicas before the server exited.
type pgCleanStop struct {
	LSN uint64
	At  time.Time
}

// cleanStopSkew is how much earlier than the runtime first saw the
// primary down a clean stop may be recorded and still be this stop's:
// the server stops taking connections when its shutdown begins and is
// recorded after it exited, so only the nodes' clocks can put the
// record before; one recorded earlier is of an earlier stop (a member
// clears its record when it starts, but that may have failed).
const cleanStopSkew = 5 * time.Second

// cleanHandOver: the labelled primary old is down or gone after a clean
// stop recorded since it went down, and a replica that may be promoted
// received its WAL up to the stop's LSN: it holds every acknowledged
// commit, so it is promoted at once, without Settings.After (Patroni
// hands its leader key over so on a clean shutdown). A replica that did
// not receive that WAL is not promoted early: the failover timer runs as
// for any primary that is down. ok is false when there is no such stop.
func cleanHandOver(v pgView, old string, since time.Time) (pgAction, bool) {
	s, ok := v.CleanStops[old]
	if !ok || s.At.Before(since.Add(-cleanStopSkew)) {
		return pgAction{}, false
	}
	if m, listed := findMember(v.Members, old); listed && (m.Probe.Reach != reachDown || m.Probe.Starting) {
		return pgAction{}, false
	}
	var cands []pgMember
	for _, m := range v.Members {
		if m.Name != old && m.replica() && !m.NoPromote && m.Probe.Received >= s.LSN {
			cands = append(cands, m)
		}
	}
	if len(cands) == 0 {
		return pgAction{}, false
	}
	slices.SortStableFunc(cands, func(a, b pgMember) int {
		if c := cmp.Compare(b.Probe.Received, a.Probe.Received); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
	return pgAction{Kind: pgBeginFailover, Member: old, To: cands[0].Name, Why: fmt.Sprintf(
		"the primary %s stopped cleanly at %s (its shutdown checkpoint at %s); %s received all of its WAL: a hand-over, no failover wait",
		old, s.At.UTC().Format(time.RFC3339Nano), formatLSN(s.LSN), cands[0].Name)}, true
}

// decodeCleanStops reads the clean-stops ConfigMap's data: a member's
// entry that cannot be read is left out and reported.
func decodeCleanStops(data map[string]string) (map[string]pgCleanStop, []error) {
	out := map[string]pgCleanStop{}
	var errs []error
	for _, member := range slices.Sorted(maps.Keys(data)) {
		s, ok, err := contract.DecodeCleanStop(data[member])
		if err != nil {
			errs = append(errs, fmt.Errorf("key %s: %w", member, err))
			continue
		}
		if !ok {
			continue
		}
		lsn, err := parseLSN(s.LSN)
		if err != nil {
			errs = append(errs, fmt.Errorf("key %s: %w", member, err))
			continue
		}
		out[member] = pgCleanStop{LSN: lsn, At: s.At}
	}
	return out, errs
}
