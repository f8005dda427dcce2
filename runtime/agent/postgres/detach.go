package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/cairn-dev/cairn/runtime/agent"
)

// ReasonStandbysDetached: the synchronous fence or the failsafe detached
// standbys from a primary that does not answer (syncfence.go,
// failsafe.go).
const ReasonStandbysDetached = "StandbysDetached"

// detachWait bounds how long a standby gets to stop its WAL receiver once
// its primary_conninfo is cleared.
const detachWait = 5 * time.Second

// detach carries out the synchronous fence's or the failsafe's detach:
// the standbys are recorded with their primary_conninfo first (a new
// leader finishes the job, and the promotion points them at the new
// primary), then each is given an empty primary_conninfo and counts as
// detached once it says its WAL receiver has stopped; the time it was
// found so is recorded.
func (p *pgPass) detach(ctx context.Context, a pgAction) (bool, error) {
	f := p.view.Status.Failover
	var added []string
	for _, name := range a.Detach {
		if slices.ContainsFunc(f.Detached, func(d pgDetached) bool { return d.Member == name }) {
			continue
		}
		m, _ := findMember(p.view.Members, name)
		f.Detached = append(f.Detached, pgDetached{Member: name, Upstream: m.Probe.Upstream})
		added = append(added, name)
	}
	if len(added) > 0 {
		if _, err := p.step(ctx, "detaching", agent.Event{Type: corev1.EventTypeWarning, Reason: ReasonStandbysDetached, Message: a.Why}); err != nil {
			return false, err
		}
	}
	errs := make([]error, len(a.Detach))
	probes := make([]pgProbe, len(a.Detach))
	var wg sync.WaitGroup
	for i, name := range a.Detach {
		wg.Add(1)
		go func() {
			defer wg.Done()
			probes[i], errs[i] = p.detachOne(ctx, name)
		}()
	}
	wg.Wait()
	// Found detached no sooner than now: the failsafe counts the old
	// primary's lease from here (failsafe.go).
	at := p.r.clock()
	for i, name := range a.Detach {
		if errs[i] != nil {
			continue
		}
		for j := range p.view.Members {
			if m := &p.view.Members[j]; m.Name == name {
				m.Probe.Upstream, m.Probe.Receiving, m.Probe.Streaming, m.Probe.Received = "", false, false, probes[i].Received
			}
		}
		for j := range f.Detached {
			if f.Detached[j].Member == name {
				f.Detached[j].At = at
			}
		}
	}
	if err := p.store.write(ctx, p.view.Status, ""); err != nil {
		return false, errors.Join(append(errs, err)...)
	}
	if err := errors.Join(errs...); err != nil {
		return false, err
	}
	p.r.logger().Info("standbys detached", "from", a.Member, "standbys", strings.Join(a.Detach, ","))
	return true, nil
}

// detachOne clears a standby's primary_conninfo and waits until its WAL
// receiver has stopped; it returns the standby's flushed WAL position.
func (p *pgPass) detachOne(ctx context.Context, name string) (pgProbe, error) {
	cctx, cancel := context.WithTimeout(ctx, detachWait+probeTimeout)
	defer cancel()
	pod := p.pods[name]
	if pod == nil {
		return pgProbe{}, fmt.Errorf("detach %s: not listed", name)
	}
	conn, err := p.connect(cctx, name, pod.Status.PodIP)
	if err != nil {
		return pgProbe{}, fmt.Errorf("detach %s: %w", name, err)
	}
	defer conn.Close(context.Background())
	for _, s := range []string{"ALTER SYSTEM SET primary_conninfo = ''", "SELECT pg_reload_conf()"} {
		if _, err := conn.Exec(cctx, s); err != nil {
			return pgProbe{}, fmt.Errorf("detach %s: %w", name, err)
		}
	}
	const q = `SELECT pg_is_in_recovery(), EXISTS (SELECT 1 FROM pg_stat_wal_receiver WHERE pid IS NOT NULL),
  current_setting('primary_conninfo'), COALESCE(pg_last_wal_receive_lsn(), pg_last_wal_replay_lsn())::text`
	for {
		var rec, receiving bool
		var conninfo, lsn string
		if err := conn.QueryRow(cctx, q).Scan(&rec, &receiving, &conninfo, &lsn); err != nil {
			return pgProbe{}, fmt.Errorf("detach %s: %w", name, err)
		}
		if !rec {
			return pgProbe{}, fmt.Errorf("detach %s: it is no longer in recovery", name)
		}
		if !receiving && conninfo == "" {
			pr := pgProbe{Reach: reachUp, InRecovery: true}
			pr.Received, err = parseLSN(lsn)
			return pr, err
		}
		select {
		case <-cctx.Done():
			return pgProbe{}, fmt.Errorf("detach %s: its WAL receiver still runs after %s", name, detachWait)
		case <-time.After(20 * time.Millisecond):
		}
	}
}
