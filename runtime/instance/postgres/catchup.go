package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/cairn-dev/cairn/runtime/backup"
)

// A replica whose primary removed WAL it has not received (written past
// wal_keep_size while the replica was down or slow, with no slot holding
// it) never catches up by itself: its walreceiver asks for the segment
// again and again and the primary answers that it was removed. With a WAL
// archive, the replica's restore_command (standbyRestore) reads the
// segment from there. When neither has it, the replica is re-cloned
// (reclone.go). The decision rests on positions read over SQL, never on
// log lines:
//
//   - from the replica: whether it is in recovery, how far it has WAL
//     (the greater of its received and replayed positions: a replica that
//     receives but replays slowly has its WAL), and its timeline;
//   - from the primary found through Candidates (answering, not in
//     recovery): its current position and timeline, and the oldest
//     segment it keeps in pg_wal (pg_ls_waldir, as the superuser);
//   - from the archive, when the cluster has one: whether it holds the
//     segment the replica needs, on any timeline from the replica's to the
//     primary's.
//
// The gap is the replica's next segment older than the primary's oldest
// and not archived, while the replica's position stays put over
// catchUpChecks checks in a row.
//
// A replica can also hold WAL the primary never had: after a failover to
// another replica (the recorded synchronous standby, say), one that had
// received more of the old primary's unacknowledged WAL is past the point
// where the new primary's timeline forked off. PostgreSQL then refuses to
// follow the new timeline ("forked off ... before the current recovery
// point") and never will. The primary's timeline history says where the
// replica's timeline ended; a replica past it, not streaming on the
// primary's timeline, over forkChecks checks in a row, is rewound onto
// the primary's timeline (re-cloned if the rewind fails).

// Defaults of the catch-up watch.
const (
	defaultCatchUpEvery = 15 * time.Second
	// catchUpChecks is how many checks in a row must find the same gap,
	// with the replica's position unchanged, before it is re-cloned.
	catchUpChecks = 4
	// forkChecks is how many checks in a row must find the replica past
	// its timeline's end: a fork is a fact of the history, not a wait,
	// and the second check only guards against a replica whose control
	// file still names the old timeline just after it followed the new
	// one.
	forkChecks = 2
)

// walPositions is what one check of the catch-up watch reads.
type walPositions struct {
	// InRecovery is the member's pg_is_in_recovery().
	InRecovery bool
	// Have is how far the replica has WAL: the greater of its received
	// and replayed positions.
	Have       uint64
	ReplicaTLI uint32
	// PrimaryLSN and PrimaryTLI are the primary's current position and
	// timeline; Oldest is the number of the oldest segment in its pg_wal.
	PrimaryLSN  uint64
	PrimaryTLI  uint32
	Oldest      uint64
	SegmentSize int64
	// Archived names the segment the replica needs when the archive
	// holds it; "" when it does not or the cluster archives nothing.
	Archived string
	// TimelineEnd is where, by the primary's timeline history, the
	// replica's timeline ended (the new timeline forked off), when the
	// replica is on an earlier timeline than the primary and the history
	// names it (EndKnown).
	TimelineEnd uint64
	EndKnown    bool
}

// need is the number of the segment the replica reads next: its
// walreceiver asks for the segment holding Have.
func (w walPositions) need() uint64 { return w.Have / uint64(w.SegmentSize) }

// gapVerdict is what a check concludes.
type gapVerdict int

const (
	// noGap: the replica has, or can get, the WAL it needs.
	noGap gapVerdict = iota
	// walGone: neither the primary nor the archive holds the replica's
	// next segment.
	walGone
	// forked: the replica holds WAL past the end of its timeline on the
	// primary: it can never follow by streaming and is rewound.
	forked
	// notOurs: a re-clone is never right for this member now (it is not
	// in recovery, or it is on a later timeline than the primary and may
	// hold WAL the primary lacks).
	notOurs
)

// judge is the pure decision of one check, with the reason in words.
func judge(w walPositions) (gapVerdict, string) {
	need := backup.Segment{Timeline: w.ReplicaTLI, No: w.need()}.Name(w.SegmentSize)
	switch {
	case !w.InRecovery:
		return notOurs, "the member is not in recovery"
	case w.ReplicaTLI > w.PrimaryTLI:
		return notOurs, fmt.Sprintf("the member is on timeline %d, later than the primary's %d", w.ReplicaTLI, w.PrimaryTLI)
	case w.ReplicaTLI < w.PrimaryTLI && w.EndKnown && w.Have > w.TimelineEnd:
		return forked, fmt.Sprintf("the member has WAL up to %s on timeline %d, past %s where the primary's timeline forked off it",
			backup.FormatLSN(w.Have), w.ReplicaTLI, backup.FormatLSN(w.TimelineEnd))
	case w.Have >= w.PrimaryLSN:
		return noGap, "the member has all of the primary's WAL"
	case w.need() >= w.Oldest:
		return noGap, "the primary keeps " + need
	case w.Archived != "":
		return noGap, "the archive holds " + w.Archived
	}
	return walGone, fmt.Sprintf("the member needs %s; the primary keeps segments from %s on and the archive does not hold it",
		need, backup.Segment{Timeline: w.PrimaryTLI, No: w.Oldest}.Name(w.SegmentSize))
}

// gapStreak counts the checks in a row that found the same gap (walGone
// or forked) with the replica's position unchanged.
type gapStreak struct {
	n    int
	v    gapVerdict
	have uint64
}

// see records one check and reports whether the gap is now confirmed:
// catchUpChecks checks for WAL gone, forkChecks for a fork.
func (g *gapStreak) see(v gapVerdict, have uint64) bool {
	if v == noGap || v == notOurs || (g.n > 0 && (have != g.have || v != g.v)) {
		g.n = 0
	}
	if v != walGone && v != forked {
		return false
	}
	g.n++
	g.v, g.have = v, have
	if v == forked {
		return g.n >= forkChecks
	}
	return g.n >= catchUpChecks
}

// watchCatchUp checks a running replica every CatchUpEvery until ctx
// ends, the server exits or the member is no longer a standby. When the
// gap is confirmed and the re-clone budget allows, it marks the member
// for a re-clone from that primary and stops the server: runPostgresOnce
// then returns errReclone, and the next Prepare re-clones.
func (p *Manager) watchCatchUp(ctx context.Context, s *Server) {
	every := p.CatchUpEvery
	if every <= 0 {
		every = defaultCatchUpEvery
	}
	t := time.NewTicker(every)
	defer t.Stop()
	var streak gapStreak
	var lastErr string // a check that fails the same way is logged once
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.done:
			return
		case <-t.C:
		}
		if !p.isStandby() {
			return
		}
		primary := p.findPrimary(ctx, p.Candidates)
		if primary == "" {
			streak = gapStreak{} // no healthy primary: nothing to clone from
			continue
		}
		w, err := p.readPositions(ctx, primary)
		if err != nil {
			if err.Error() != lastErr {
				p.Log.Warn("catch-up check failed: no re-clone is decided while it fails", "member", p.Name, "primary", primary, "err", err.Error())
			}
			lastErr, streak = err.Error(), gapStreak{}
			continue
		}
		lastErr = ""
		v, why := judge(w)
		if v == noGap && w.Have >= w.PrimaryLSN {
			p.rc.caughtUp(time.Now())
		}
		if !streak.see(v, w.Have) {
			continue
		}
		if p.reclonePlanned(primary, why, v == forked) {
			s.Stop()
			return
		}
	}
}

// readPositions reads a check's positions from this member, the primary
// and the archive.
func (p *Manager) readPositions(ctx context.Context, primary string) (walPositions, error) {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var w walPositions
	self, err := p.connect(cctx, p.Host+":"+strconv.Itoa(p.Port))
	if err != nil {
		return w, fmt.Errorf("connect to this member: %w", err)
	}
	defer self.Close(context.Background())
	var have string
	// The replica's timeline: its control file's, or the one its
	// walreceiver streams on when that is later (the control file names
	// a new timeline only at the next restartpoint).
	err = self.QueryRow(cctx, `SELECT pg_is_in_recovery(),
  greatest(coalesce(pg_last_wal_receive_lsn(), '0/0'), coalesce(pg_last_wal_replay_lsn(), '0/0'))::text,
  greatest((SELECT timeline_id FROM pg_control_checkpoint()), (SELECT min_recovery_end_timeline FROM pg_control_recovery()),
    (SELECT max(received_tli) FROM pg_stat_wal_receiver WHERE status = 'streaming'))`).
		Scan(&w.InRecovery, &have, &w.ReplicaTLI)
	if err != nil {
		return w, fmt.Errorf("read this member's position: %w", err)
	}
	if w.Have, err = backup.ParseLSN(have); err != nil {
		return w, err
	}
	if err := p.readPrimary(cctx, primary, &w); err != nil {
		return w, err
	}
	if w.Have < w.PrimaryLSN && w.need() < w.Oldest {
		w.Archived, err = p.archivedSegment(cctx, w)
	}
	return w, err
}

// readPrimary reads the primary's position, timeline and oldest kept
// segment (pg_ls_waldir: the superuser may).
func (p *Manager) readPrimary(ctx context.Context, primary string, w *walPositions) error {
	c, err := p.connect(ctx, primary)
	if err != nil {
		return fmt.Errorf("connect to the primary %s: %w", primary, err)
	}
	defer c.Close(context.Background())
	var lsn, current, oldest string
	err = c.QueryRow(ctx, `SELECT pg_current_wal_lsn()::text, pg_walfile_name(pg_current_wal_lsn()),
  (SELECT min(substr(name, 9)) FROM pg_ls_waldir() WHERE name ~ '^[0-9A-F]{24}$'),
  (SELECT setting::bigint FROM pg_settings WHERE name = 'wal_segment_size')`).Scan(&lsn, &current, &oldest, &w.SegmentSize)
	if err != nil {
		return fmt.Errorf("read the primary's WAL on %s: %w", primary, err)
	}
	if w.PrimaryLSN, err = backup.ParseLSN(lsn); err != nil {
		return err
	}
	cur, err := backup.ParseSegment(current, w.SegmentSize)
	if err != nil {
		return fmt.Errorf("the primary's current segment: %w", err)
	}
	old, err := backup.ParseSegment("00000001"+oldest, w.SegmentSize)
	if err != nil {
		return fmt.Errorf("the primary's oldest segment: %w", err)
	}
	w.PrimaryTLI, w.Oldest = cur.Timeline, old.No
	if w.ReplicaTLI == 0 || w.ReplicaTLI >= w.PrimaryTLI {
		return nil
	}
	// The history file of the primary's timeline lists every timeline
	// before it and where each ended.
	var history string
	name := "pg_wal/" + backup.HistoryName(w.PrimaryTLI)
	if err := c.QueryRow(ctx, "SELECT pg_read_file($1)", name).Scan(&history); err != nil {
		return fmt.Errorf("read the primary's timeline history %s on %s: %w", name, primary, err)
	}
	w.TimelineEnd, w.EndKnown, err = timelineEnd(name, history, w.ReplicaTLI)
	if err != nil {
		return fmt.Errorf("the primary's timeline history on %s: %w", primary, err)
	}
	return nil
}

// timelineEnd returns where timeline tli ended by the timeline history
// file name (its content history), if the history names it.
func timelineEnd(name, history string, tli uint32) (uint64, bool, error) {
	switches, err := backup.ParseHistory(name, []byte(history))
	if err != nil {
		return 0, false, err
	}
	for _, sw := range switches {
		if sw.Parent == tli {
			return sw.LSN, true, nil
		}
	}
	return 0, false, nil
}

// archivedSegment names the segment the replica needs if the cluster's
// archive holds it, on any timeline from the replica's to the
// primary's (at most 16 of them); "" when it holds none. An archive that
// cannot be read is an error: a re-clone is never decided on an archive
// that might hold the segment.
func (p *Manager) archivedSegment(ctx context.Context, w walPositions) (string, error) {
	if p.wal == nil || p.wal.Archive == nil {
		return "", nil
	}
	system, err := SystemIdentifier(p.PGData)
	if err != nil {
		return "", err
	}
	a, err := p.wal.Archive(system)
	if err != nil {
		return "", fmt.Errorf("open the WAL archive: %w", err)
	}
	for tli := w.ReplicaTLI; tli <= w.PrimaryTLI && tli < w.ReplicaTLI+16; tli++ {
		name := backup.Segment{Timeline: tli, No: w.need()}.Name(w.SegmentSize)
		_, err := a.Archived(ctx, name)
		switch {
		case err == nil:
			return name, nil
		case !errors.Is(err, backup.ErrNotFound):
			return "", fmt.Errorf("look for %s in the WAL archive: %w", name, err)
		}
	}
	return "", nil
}
