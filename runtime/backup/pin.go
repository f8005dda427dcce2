package backup

import (
	"context"
	"fmt"
)

// Pins. A plan's irreversible step (a PostgreSQL major upgrade, the last
// member of an etcd minor upgrade) is preceded by a TakeBackup step, and
// its rollback says to restore that step's backup into a new cluster. So
// that retention never deletes what a rollback names, the backup that
// serves a TakeBackup step's request is pinned: its manifest records the
// request (Request) and Pinned, and Retention.Expired passes over it,
// whatever its count and age.
//
// Which backup serves the request: the first one to complete while the
// rendered config names the request (Retention.Request, read with the
// rest of the policy the backup ran under). Prune, which runs right after
// each backup completes, records it on the newest backup when no backup
// serves the request yet. The runtime serves a request before the step
// after it can go ahead (the planner plans that step only once the runtime
// reports the request done), so the pinned backup always completed before
// the irreversible step started.
//
// A pin is released by a person only, with Release (cairn backup release
// CLUSTER BACKUP-ID --location URL), once the rollback it serves is no
// longer wanted: after the upgraded cluster has run well for a while.
// Nothing releases a pin on its own: a later plan, a new request or a
// shorter retention keeps it. A released backup keeps its Request, so the
// same request never pins a second backup; retention deletes it like any
// other backup from then on.

// pinRequest pins the newest backup of all (oldest first) to request when
// no backup serves request yet; all is updated in place.
func pinRequest(ctx context.Context, st Store, all []Manifest, request string) error {
	if request == "" || len(all) == 0 {
		return nil
	}
	for _, m := range all {
		if m.Request == request {
			return nil
		}
	}
	newest := &all[len(all)-1]
	if newest.Request != "" {
		return nil // it serves another request, already pinned for that
	}
	m := *newest
	m.Request, m.Pinned = request, true
	if err := writeManifest(ctx, st, m); err != nil {
		return fmt.Errorf("pin backup %s of %s for request %s: %w", m.ID, m.Cluster, request, err)
	}
	*newest = m
	return nil
}

// Pinned returns the pinned backups of all.
func Pinned(all []Manifest) []Manifest {
	var out []Manifest
	for _, m := range all {
		if m.Pinned {
			out = append(out, m)
		}
	}
	return out
}

// Release unpins backup id of cluster: retention treats it as any other
// backup from the next prune on. It returns the manifest as it is now
// stored and whether it was pinned; releasing a backup that is not pinned
// changes nothing.
func Release(ctx context.Context, st Store, cluster, id string) (Manifest, bool, error) {
	m, err := readManifest(ctx, st, cluster, id)
	if err != nil {
		return Manifest{}, false, err
	}
	if !m.Pinned {
		return m, false, nil
	}
	m.Pinned = false
	if err := writeManifest(ctx, st, m); err != nil {
		return Manifest{}, true, fmt.Errorf("release backup %s of %s: %w", id, cluster, err)
	}
	return m, true, nil
}
